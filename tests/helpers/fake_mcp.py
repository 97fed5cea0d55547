"""An in-memory stand-in for `McpRegistry` (mcp.md MCP-API-03), for the agent-side MCP tests.

It speaks the shapes `mcp/adapters.py` documents on `McpClient`: raw `*/list` results of one
server (unprefixed names, `nextCursor`), raw `resources/read` / `prompts/get` results, and
`McpError` subclasses whose `str()` is the §16 text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.mcp.errors import McpError


@dataclass(frozen=True, slots=True)
class FakeTool:
    prefixed_name: str
    server: str
    name: str
    description: str
    input_schema: JSONObject
    raw: JSONObject


@dataclass
class FakeServer:
    """One server: its tools, and resources/prompts when it advertises them (None = not)."""

    tools: list[tuple[str, str]] = field(default_factory=list)  # (name, description)
    resources: list[JSONObject] | None = None
    prompts: list[JSONObject] | None = None
    contents: dict[str, JSON] = field(default_factory=dict)  # uri -> resources/read result
    rendered: dict[str, JSON] = field(default_factory=dict)  # prompt -> prompts/get result
    page_size: int = 100
    connected: bool = True
    schemas: dict[str, JSONObject] = field(default_factory=dict)


def schema(*props: str) -> JSONObject:
    return {"type": "object", "properties": {p: {"type": "string"} for p in props}}


class FakeMcp:
    def __init__(self, servers: dict[str, FakeServer]) -> None:
        self.servers = servers
        self.calls: list[tuple[str, JSON]] = []
        self.closed = 0
        self.stale = False
        self.result: JSON = {"content": [{"type": "text", "text": "done"}]}

    # --- MCP-API-03 -----------------------------------------------------------------------

    def tools(self) -> Sequence[FakeTool]:
        return [
            FakeTool(
                f"{server}__{name}",
                server,
                name,
                description,
                spec.schemas.get(name, schema("path")),
                {"name": name},
            )
            for server, spec in self.servers.items()
            if spec.connected
            for name, description in spec.tools
        ]

    def call_tool(
        self, prefixed_name: str, arguments: JSONObject, *, cancel: CancelToken | None = None
    ) -> JSON:
        if prefixed_name not in {t.prefixed_name for t in self.tools()}:
            raise McpError("", f"unknown MCP tool `{prefixed_name}`")
        self.calls.append((prefixed_name, arguments))
        return self.result

    def _server(self, name: str, capability: str) -> FakeServer:
        spec = self.servers.get(name)
        if spec is None or not spec.connected:
            raise McpError(name, f"unknown MCP server `{name}`")
        if getattr(spec, capability) is None:
            raise McpError(name, f"MCP server `{name}` does not support {capability}")
        return spec

    def _page(self, key: str, server: str | None, cursor: str | None) -> JSON:
        self.calls.append((f"{key}/list", {"server": server, "cursor": cursor}))
        if server is None:  # every capable server, every page, names prefixed
            field_name = "uri" if key == "resources" else "name"
            collected: list[JSON] = []
            for name, spec in self.servers.items():
                items = getattr(spec, key)
                if spec.connected and items is not None:
                    collected.extend(
                        {k: f"{name}__{v}" if k == field_name else v for k, v in i.items()}
                        for i in items
                    )
            return {key: collected}
        items = getattr(self._server(server, key), key)
        start = int(cursor or 0)
        size = self.servers[server].page_size
        page: list[JSON] = list(items[start : start + size])
        result: JSONObject = {key: page}
        if start + size < len(items):
            result["nextCursor"] = str(start + size)
        return result

    def list_resources(self, server: str | None = None, cursor: str | None = None) -> JSON:
        return self._page("resources", server, cursor)

    def list_prompts(self, server: str | None = None, cursor: str | None = None) -> JSON:
        return self._page("prompts", server, cursor)

    def _split(self, value: str) -> tuple[str, str]:
        if "__" not in value:
            raise McpError("", f"missing server prefix in `{value}`")
        server, rest = value.split("__", 1)
        return server, rest

    def read_resource(self, prefixed_uri: str) -> JSON:
        server, uri = self._split(prefixed_uri)
        self.calls.append(("resources/read", prefixed_uri))
        spec = self._server(server, "resources")
        if uri not in spec.contents:
            raise McpError(server, f"MCP `resources/read` error -32002: Resource not found: {uri}")
        return spec.contents[uri]

    def get_prompt(self, prefixed_name: str, arguments: JSONObject | None = None) -> JSON:
        server, name = self._split(prefixed_name)
        self.calls.append(("prompts/get", {"name": prefixed_name, "arguments": arguments}))
        return self._server(server, "prompts").rendered[name]

    def refresh_if_stale(self) -> None:
        self.stale = False

    def close(self) -> None:
        self.closed += 1
