"""Fixtures for the MCP client tests: the scripted stdio server and fast options."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import pytest

from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.mcp import ClientHandlers, McpOptions, McpRegistry, listcache
from zeroclaw_ref.mcp import era as eras

SERVER = Path(__file__).resolve().parents[2] / "helpers" / "mcp_server.py"

# Short waits so failures surface quickly; limits stay at their defaults unless a test says so.
FAST = McpOptions(init_timeout_s=10, list_timeout_s=10, default_tool_timeout_s=10, close_grace_s=1)
# The same, never probing for the 2026-07-28 era: for tests that pin the legacy wire exactly.
LEGACY = replace(FAST, era="legacy")


@pytest.fixture(autouse=True)
def _fresh_eras() -> Iterator[None]:
    """Every test finds the eras anew: nothing cached by an earlier test (era.py, listcache)."""
    eras.clear()
    listcache.clear_shared()
    yield
    eras.clear()
    listcache.clear_shared()


def stdio_config(*args: str, name: str = "peer", **fields: Any) -> McpServerConfig:
    """A server entry that runs the scripted server with `args`; `fields` set other entries of
    the config (checked by `dataclasses.replace`: an unknown field name fails the test)."""
    config = McpServerConfig(name=name, command=sys.executable, args=(str(SERVER), *args))
    return replace(config, **fields)


class Connect(Protocol):
    """The `connect` fixture: `McpRegistry.connect_all` with FAST options by default."""

    def __call__(
        self,
        *configs: McpServerConfig,
        options: McpOptions = ...,
        handlers: ClientHandlers | None = None,
        workspace: Path | None = None,
    ) -> McpRegistry: ...


@pytest.fixture
def connect() -> Iterator[Connect]:
    """Connect registries that are closed at the end of the test."""
    made: list[McpRegistry] = []

    def make(
        *configs: McpServerConfig,
        options: McpOptions = FAST,
        handlers: ClientHandlers | None = None,
        workspace: Path | None = None,
    ) -> McpRegistry:
        reg = McpRegistry.connect_all(
            list(configs), options=options, handlers=handlers, workspace=workspace
        )
        made.append(reg)
        return reg

    yield make
    for reg in made:
        reg.close()
