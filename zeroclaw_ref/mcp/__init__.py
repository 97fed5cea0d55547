"""The MCP client of zeroclaw_ref (mcp.md); this module is the public surface of MCP-API-01.

Transports are imported when a registry connects, never by importing this package's surface
beyond the registry itself (MCP-PERF-05).
"""

from __future__ import annotations

from zeroclaw_ref.mcp.errors import (
    McpCancelledError,
    McpClosedError,
    McpConnectError,
    McpError,
    McpOutcomeUnknownError,
    McpProtocolError,
    McpRpcError,
    McpSizeLimitError,
    McpTimeoutError,
    McpToolError,
    McpUnavailableError,
)
from zeroclaw_ref.mcp.handlers import ClientHandlers, accept_with_defaults
from zeroclaw_ref.mcp.options import McpOptions
from zeroclaw_ref.mcp.registry import McpRegistry
from zeroclaw_ref.mcp.results import format_result_for_model

__all__ = [
    "ClientHandlers",
    "McpCancelledError",
    "McpClosedError",
    "McpConnectError",
    "McpError",
    "McpOptions",
    "McpOutcomeUnknownError",
    "McpProtocolError",
    "McpRegistry",
    "McpRpcError",
    "McpSizeLimitError",
    "McpTimeoutError",
    "McpToolError",
    "McpUnavailableError",
    "accept_with_defaults",
    "format_result_for_model",
]
