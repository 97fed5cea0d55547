"""Configuration and data directories (config.md §1)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from zeroclaw_ref.config.dirs import ensure_private_dir, resolve_dirs

HOME = str(Path.home())


@pytest.mark.req("CFG-DIR-01", "CFG-DIR-03")
@pytest.mark.parametrize(
    ("cli", "env", "expected"),
    [
        (None, {}, (f"{HOME}/.zeroclaw", f"{HOME}/.zeroclaw/data")),
        (None, {"ZEROCLAW_CONFIG_DIR": ""}, (f"{HOME}/.zeroclaw", f"{HOME}/.zeroclaw/data")),
        (None, {"ZEROCLAW_CONFIG_DIR": "/e"}, ("/e", "/e/data")),
        ("/c", {"ZEROCLAW_CONFIG_DIR": "/e"}, ("/c", "/c/data")),
        ("~/zc", {"ZEROCLAW_DATA_DIR": "~/d"}, (f"{HOME}/zc", f"{HOME}/d")),
        ("/c", {"ZEROCLAW_DATA_DIR": ""}, ("/c", "/c/data")),
    ],
)
def test_directories_resolve_in_precedence_order(
    cli: str | None, env: dict[str, str], expected: tuple[str, str]
) -> None:
    config_dir, data_dir = resolve_dirs(cli, env)
    assert (str(config_dir), str(data_dir)) == expected


@pytest.mark.req("CFG-DIR-01")
def test_relative_directories_are_made_absolute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    config_dir, _ = resolve_dirs("rel", {})
    assert config_dir == tmp_path / "rel"


@pytest.mark.req("CFG-DIR-04")
def test_created_directories_are_private(tmp_path: Path) -> None:
    target = ensure_private_dir(tmp_path / "a" / "b")
    for path in (tmp_path / "a", target):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert ensure_private_dir(target) == target
