"""Typed access to the internals tests observe: a connection's concrete transport, a stdio
child's pid and process, and the requests a recording model provider received.

Each accessor checks the concrete type it hands back (a test that reaches for a stdio child on
an HTTP connection fails here, by name), which is what the `type: ignore[attr-defined]` the
tests used to write could not do.
"""

from __future__ import annotations

import subprocess

from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.mcp import McpRegistry
from zeroclaw_ref.mcp.http import HttpTransport
from zeroclaw_ref.mcp.sse import SseTransport
from zeroclaw_ref.mcp.stdio import StdioTransport
from zeroclaw_ref.providers.demo import DemoProvider
from zeroclaw_ref.providers.scripted import ScriptedProvider


def stdio_transport(reg: McpRegistry, server: str = "peer") -> StdioTransport:
    transport = reg.connection(server).transport
    assert isinstance(transport, StdioTransport), type(transport)
    return transport


def http_transport(reg: McpRegistry, server: str = "h") -> HttpTransport:
    transport = reg.connection(server).transport
    assert isinstance(transport, HttpTransport), type(transport)
    return transport


def sse_transport(reg: McpRegistry, server: str = "l") -> SseTransport:
    transport = reg.connection(server).transport
    assert isinstance(transport, SseTransport), type(transport)
    return transport


def stdio_pid(reg: McpRegistry, server: str = "peer") -> int:
    """The pid of the server's current child (the connection must have one)."""
    pid = stdio_transport(reg, server).pid
    assert isinstance(pid, int), f"{server} has no child"
    return pid


def stdio_proc(reg: McpRegistry, server: str = "peer") -> subprocess.Popen[bytes]:
    """The `Popen` of the server's current child."""
    child = stdio_transport(reg, server)._child
    assert child is not None, f"{server} has no child"
    return child.proc


def model_requests(execution: ResolvedAgentExecution) -> list[JSONObject]:
    """The request records of the execution's scripted or demo provider, in order."""
    provider = execution.model.provider
    assert isinstance(provider, ScriptedProvider | DemoProvider), type(provider)
    return provider.requests


def request_messages(record: JSONObject) -> list[JSONObject]:
    """The `messages` of one provider request record, each checked to be an object."""
    messages = record["messages"]
    assert isinstance(messages, list), record
    out: list[JSONObject] = []
    for message in messages:
        assert isinstance(message, dict), message
        out.append(message)
    return out
