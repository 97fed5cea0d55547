"""Shared helpers for the configuration tests: write a config.toml and load it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import ConfigError, ConfigSnapshot

Loader = Callable[..., ConfigSnapshot]
Failer = Callable[..., list[str]]


@pytest.fixture
def load(tmp_path: Path) -> Loader:
    """Load `text` (None: no file) from a fresh config dir with the given environment."""

    def run(text: str | bytes | None, env: Mapping[str, str] | None = None) -> ConfigSnapshot:
        path = tmp_path / "config.toml"
        if isinstance(text, str):
            path.write_text(text, encoding="utf-8")
        elif isinstance(text, bytes):
            path.write_bytes(text)
        return load_config(tmp_path, tmp_path / "data", env or {})

    return run


@pytest.fixture
def fail(load: Loader, tmp_path: Path) -> Failer:
    """Load and return the error lines, with the config file path replaced by `CFG`."""

    def run(text: str | bytes | None, env: Mapping[str, str] | None = None) -> list[str]:
        with pytest.raises(ConfigError) as info:
            load(text, env)
        return [line.replace(str(tmp_path / "config.toml"), "CFG") for line in info.value.lines]

    return run
