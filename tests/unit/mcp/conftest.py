"""Fixtures for the MCP client tests: the scripted stdio server and fast options."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.mcp import McpOptions, McpRegistry

SERVER = Path(__file__).resolve().parents[2] / "helpers" / "mcp_server.py"

# Short waits so failures surface quickly; limits stay at their defaults unless a test says so.
FAST = McpOptions(init_timeout_s=10, list_timeout_s=10, default_tool_timeout_s=10, close_grace_s=1)


def stdio_config(*args: str, name: str = "peer", **fields: object) -> McpServerConfig:
    """A server entry that runs the scripted server with `args`."""
    return McpServerConfig(
        name=name,
        command=sys.executable,
        args=(str(SERVER), *args),
        **fields,  # type: ignore[arg-type]
    )


Connect = Callable[..., McpRegistry]


@pytest.fixture
def connect() -> Iterator[Connect]:
    """Connect registries that are closed at the end of the test."""
    made: list[McpRegistry] = []

    def make(*configs: McpServerConfig, options: McpOptions = FAST, **kw: object) -> McpRegistry:
        reg = McpRegistry.connect_all(list(configs), options=options, **kw)  # type: ignore[arg-type]
        made.append(reg)
        return reg

    yield make
    for reg in made:
        reg.close()
