"""Shared test fixtures: peers, bounded waits, the hypothesis profile (DESIGN §11)."""

from __future__ import annotations

import importlib
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import settings

# No deadline: timing is never asserted in tests (DESIGN §11.2).
settings.register_profile("zeroclaw", deadline=None, max_examples=200)
settings.load_profile("zeroclaw")

# How each external peer is installed; the skip/fail text names it (DESIGN §11.3).
PEER_INSTALL = {
    "acp-python-sdk": "pip install agent-client-protocol==0.12.1",
    "mcp-python-sdk": "pip install mcp==2.3.0 (the `test` extra)",
    "node": "apt-get install nodejs (Node 20) or use the machine's node",
    "acp-typescript-sdk": "npm install @agentclientprotocol/sdk@2.4.0 zod (in .peers/)",
    "websocket-client": "pip install websocket-client==1.9.0 (the `test` extra)",
    "server-everything": "npm install @modelcontextprotocol/server-everything@2026.8.31 (.peers/)",
    "server-filesystem": "npm install @modelcontextprotocol/server-filesystem@2026.8.31 (.peers/)",
    "mcp-conformance": "npm install @modelcontextprotocol/conformance@0.1.16 (.peers/)",
    "mcp-conformance-0.2": (
        "npm install @modelcontextprotocol/conformance@0.2.0-alpha.12 (in .peers/conformance-0.2/,"
        " which has its own package.json)"
    ),
    "node22": "npm install node@22 (in .peers/node22/, which has its own package.json)",
    "tmux": "apt-get update && apt-get install -y tmux",
    "chromium": "apt-get install chromium chromium-driver; selenium==4.50.0 (the `test` extra)",
    "landlock": "a Linux kernel with Landlock (5.13+) and user namespaces enabled",
    "bwrap": "apt-get update && apt-get install -y bubblewrap",
}
# npm peers run as `node <entry point>` from .peers/ (mcp.md §15.2); require_peer returns the path.
NODE_PEERS = {
    "server-everything": "@modelcontextprotocol/server-everything/dist/index.js",
    "server-filesystem": "@modelcontextprotocol/server-filesystem/dist/index.js",
    "mcp-conformance": "@modelcontextprotocol/conformance/dist/index.js",
    # a library, not a program: the path of its package.json (the package is its parent)
    "acp-typescript-sdk": "@agentclientprotocol/sdk/package.json",
}
# Node >= 22 for the conformance suite (PEERS.md), kept apart from the machine's Node 20.
NODE22 = Path(__file__).resolve().parents[1] / ".peers" / "node22" / "node_modules" / "node" / "bin"
# The suite's 0.2.0 prerelease (the 2026-07-28 scenarios) beside 0.1.16: npm keeps one version
# of a package per node_modules, so it has its own folder.
CONFORMANCE_02 = (
    Path(__file__).resolve().parents[1]
    / ".peers" / "conformance-0.2" / "node_modules" / "@modelcontextprotocol" / "conformance"
    / "dist" / "index.js"
)  # fmt: skip
# Python peers found by importing a module.
PEER_MODULES = {
    "acp-python-sdk": "acp",
    "websocket-client": "websocket",
    "mcp-python-sdk": "mcp.server",
}


def _missing(name: str, why: str) -> None:
    text = f"peer {name} missing ({why}); install with: {PEER_INSTALL.get(name, '?')}"
    if os.environ.get("ZEROCLAW_REF_REQUIRE_PEERS") == "1":
        pytest.fail(text)
    pytest.skip(text)


def require_peer(name: str) -> ModuleType | str:
    """Return the peer (a module or an executable path), else skip — or fail in CI."""
    if name in PEER_MODULES:
        try:
            return importlib.import_module(PEER_MODULES[name])
        except ImportError as exc:
            _missing(name, str(exc))
    if name == "node":
        path = shutil.which("node")
        if path is None:
            _missing(name, "node not on PATH")
        assert path is not None
        return path
    if name == "tmux":
        found = shutil.which("tmux")
        if found is None:
            _missing(name, "tmux not on PATH")
        assert found is not None
        return found
    if name == "chromium":
        # Debian's browser and its matching driver, driven through selenium (the dashboard tests).
        browser = {tool: shutil.which(tool) for tool in ("chromium", "chromedriver")}
        absent = [tool for tool, path in browser.items() if path is None]
        if absent:
            _missing(name, f"{', '.join(absent)} not on PATH")
        try:
            importlib.import_module("selenium")
        except ImportError as exc:
            _missing(name, str(exc))
        return str(browser["chromium"])
    if name == "landlock":
        from zeroclaw_ref.sandbox.probe import landlock_problem

        problem = landlock_problem()
        if problem is not None:
            _missing(name, problem)
        return "landlock"
    if name == "bwrap":
        found = shutil.which("bwrap")
        if found is None:
            _missing(name, "bwrap not on PATH")
        assert found is not None
        return found
    if name == "node22":
        if not (NODE22 / "node").is_file():
            _missing(name, f"{NODE22 / 'node'} not found")
        return str(NODE22 / "node")
    if name == "mcp-conformance-0.2":
        if not CONFORMANCE_02.is_file():
            _missing(name, f"{CONFORMANCE_02} not found")
        return str(CONFORMANCE_02)
    if name in NODE_PEERS:
        require_peer("node")
        entry = Path(__file__).resolve().parents[1] / ".peers" / "node_modules" / NODE_PEERS[name]
        if not entry.is_file():
            _missing(name, f"{entry} not found")
        return str(entry)
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
