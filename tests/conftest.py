"""Shared test fixtures: peers, bounded waits, the hypothesis profile (DESIGN §11)."""

from __future__ import annotations

import importlib
import os
import shutil
import threading
import time
from collections.abc import Callable
from types import ModuleType

import pytest
from hypothesis import settings

# No deadline: timing is never asserted in tests (DESIGN §11.2).
settings.register_profile("zeroclaw", deadline=None, max_examples=200)
settings.load_profile("zeroclaw")

# How each external peer is installed; the skip/fail text names it (DESIGN §11.3).
PEER_INSTALL = {
    "acp-python-sdk": "pip install agent-client-protocol==0.12.1",
    "node": "apt-get install nodejs (Node 20) or use the machine's node",
    "acp-typescript-sdk": "npm install @agentclientprotocol/sdk@2.4.0 zod (in .peers/)",
}


def _missing(name: str, why: str) -> None:
    text = f"peer {name} missing ({why}); install with: {PEER_INSTALL.get(name, '?')}"
    if os.environ.get("ZEROCLAW_REF_REQUIRE_PEERS") == "1":
        pytest.fail(text)
    pytest.skip(text)


def require_peer(name: str) -> ModuleType | str:
    """Return the peer (a module or an executable path), else skip — or fail in CI."""
    if name == "acp-python-sdk":
        try:
            return importlib.import_module("acp")
        except ImportError as exc:
            _missing(name, str(exc))
    if name == "node":
        path = shutil.which("node")
        if path is None:
            _missing(name, "node not on PATH")
        assert path is not None
        return path
    _missing(name, "unknown peer")
    raise AssertionError("unreachable")


def wait_for(
    predicate: Callable[[], bool], what: str, timeout: float = 10.0, detail: Callable[[], str] = str
) -> None:
    """Wait until `predicate()` holds, bounded; on expiry fail naming `what`."""
    done = threading.Event()
    deadline = time.monotonic() + timeout
    while not predicate():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            pytest.fail(f"timed out after {timeout}s waiting for {what}\n{detail()}")
        done.wait(min(0.01, remaining))
