"""Interop fixtures: the one way tests find an external peer (DESIGN.md §11.3).

`require_peer` is self-contained (it needs only `os`, `importlib` and `pytest`) so that it can
move to tests/conftest.py unchanged.
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

# peer name -> (module to import, command that installs it)
PEERS: dict[str, tuple[str, str]] = {
    "acp-python-sdk": ("acp", "pip install agent-client-protocol==0.12.1"),
}

# npm peer name -> (its program under .peers/node_modules, command that installs it); .ci/run
# installs them. Run as `node <program>`.
NPM_PEERS: dict[str, tuple[str, str]] = {
    "acpx": ("acpx/dist/cli.js", "npm install acpx@0.19.1 (in .peers/)"),
}
NODE_MODULES = Path(__file__).resolve().parents[2] / ".peers" / "node_modules"


def _missing(reason: str) -> None:
    if os.environ.get("ZEROCLAW_REF_REQUIRE_PEERS") == "1":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def require_npm_peer(name: str) -> tuple[str, str]:
    """(node, the peer's program), or skip (fail under ZEROCLAW_REF_REQUIRE_PEERS=1) without it."""
    program, install = NPM_PEERS[name]
    node = shutil.which("node")
    if node is None:
        _missing(f"peer {name} missing: node is not on PATH")
    entry = NODE_MODULES / program
    if not entry.is_file():
        _missing(f"peer {name} missing ({entry} not found): {install}")
    assert node is not None
    return node, str(entry)


def require_peer(name: str) -> ModuleType:
    """Return the peer's module, or skip (fail under ZEROCLAW_REF_REQUIRE_PEERS=1) without it."""
    module_name, install = PEERS[name]
    try:
        return importlib.import_module(module_name)
    except ImportError:
        reason = f"peer {name} missing: {install}"
        if os.environ.get("ZEROCLAW_REF_REQUIRE_PEERS") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


@pytest.fixture(name="require_peer")
def require_peer_fixture() -> Callable[[str], ModuleType]:
    """Tests take `require_peer` as a fixture: moving this code needs no test edits."""
    return require_peer


@pytest.fixture(name="require_npm_peer")
def require_npm_peer_fixture() -> Callable[[str], tuple[str, str]]:
    return require_npm_peer
