"""The reloading ConfigStore (config.md CFG-LOAD-10)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from zeroclaw_ref.config.model import ConfigError
from zeroclaw_ref.config.store import ConfigStore


def _write(path: Path, text: str, mtime_ns: int) -> None:
    path.write_text(text)
    # Explicit timestamps: the test must not depend on the clock's resolution.
    os.utime(path, ns=(mtime_ns, mtime_ns))


@pytest.mark.req("CFG-LOAD-10")
def test_store_reloads_on_change_and_keeps_the_last_good_snapshot(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "config.toml"
    _write(path, "[gateway]\nport = 1000\n", 1_000_000_000)
    store = ConfigStore(tmp_path, tmp_path / "data", {})
    first = store.snapshot()
    assert first.gateway.port == 1000
    assert store.snapshot() is first

    _write(path, "[gateway]\nport = 2000\n", 2_000_000_000)
    second = store.snapshot()
    assert second.gateway.port == 2000

    _write(path, "[gateway]\nport = 'x'\n", 3_000_000_000)
    with caplog.at_level(logging.ERROR, logger="zeroclaw_ref.config.store"):
        assert store.snapshot() is second
    assert "gateway.port: expected integer, found string" in caplog.text

    path.unlink()
    assert list(store.snapshot().agents) == ["default"]


@pytest.mark.req("CFG-LOAD-10", "CFG-LOAD-09")
def test_store_raises_when_nothing_ever_loaded(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("bogus = 1\n")
    with pytest.raises(ConfigError):
        ConfigStore(tmp_path, tmp_path / "data", {}).snapshot()
