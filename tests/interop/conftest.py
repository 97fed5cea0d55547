"""Interop fixtures: the one way tests find an external peer (DESIGN.md §11.3).

`require_peer` is self-contained (it needs only `os`, `importlib` and `pytest`) so that it can
move to tests/conftest.py unchanged.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType

import pytest

# peer name -> (module to import, command that installs it)
PEERS: dict[str, tuple[str, str]] = {
    "acp-python-sdk": ("acp", "pip install agent-client-protocol==0.12.1"),
}


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
