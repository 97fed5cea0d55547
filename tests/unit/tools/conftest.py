"""Fixtures for the file, search and delivery tools (helpers live in fs_world.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fs_world import World, make_world


@pytest.fixture(params=["supervised", "full"])
def world(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    level: str = request.param
    return make_world(tmp_path.resolve(), level, monkeypatch)


@pytest.fixture
def ws_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    return make_world(tmp_path.resolve(), "supervised", monkeypatch)
