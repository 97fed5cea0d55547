"""MCP tools as `Tool` objects, and the `mcp_resources` / `mcp_prompts` capability tools
(mcp.md §8.4, §10.1, §11.1, §13; policy.md §4.9).

Goals: the engine sees MCP tools through the same `Tool` protocol as built-ins; every client
failure becomes a failed `ToolResult` carrying the exact §16 text (MCP-RESULT-02, MCP-RES-15).

Plan: this module codes against `McpClient`, the slice of the registry surface of MCP-API-03
that the agent needs, so it can be tested with a fake and never imports the transports.

Caveat: the spec does not fix the shapes of the listing results; `McpClient` documents the ones
`mcp/registry.py` returns.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, Protocol

from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.mcp.untrusted import (
    CapabilityFailure,
    check_is_error,
    prompt_definition,
    prompt_wrapper,
    resource_definition,
    resource_wrapper,
)
from zeroclaw_ref.tools.base import ToolContext, ToolResult
from zeroclaw_ref.wire import mcp as wire

log = logging.getLogger(__name__)

DEFAULT_DESCRIPTION: Final = "MCP tool"  # [MCP-DISC-06]
ATTACHMENTS_KEY: Final = "attachments"  # ToolResult.data key read by the engine (MCP-RESULT-19)


class McpToolRecord(Protocol):
    """One discovered tool (MCP-API-03); read-only so frozen dataclasses conform."""

    @property
    def prefixed_name(self) -> str: ...
    @property
    def server(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str | None: ...
    @property
    def input_schema(self) -> JSONObject: ...


class McpClient(Protocol):
    """The registry surface used by the agent (MCP-API-03).

    Shapes: `call_tool` returns the `tools/call` result object (an `isError` result raises);
    `list_resources(server, cursor)` / `list_prompts(server, cursor)` return that server's raw
    `resources/list` / `prompts/list` result (unprefixed names, `nextCursor`), and without a
    server `{"resources"|"prompts": [...]}` from every capable server with prefixed names;
    `read_resource` and `get_prompt` return the raw `resources/read` / `prompts/get` result.
    Every failure raises an `McpError` whose `str()` is the §16 text (MCP-API-05).
    """

    def tools(self) -> Sequence[McpToolRecord]: ...
    def call_tool(
        self, prefixed_name: str, arguments: JSONObject, *, cancel: CancelToken | None = None
    ) -> JSON: ...
    def list_resources(self, server: str | None = None, cursor: str | None = None) -> JSON: ...
    def read_resource(self, prefixed_uri: str) -> JSON: ...
    def list_prompts(self, server: str | None = None, cursor: str | None = None) -> JSON: ...
    def get_prompt(self, prefixed_name: str, arguments: JSONObject | None = None) -> JSON: ...
    def refresh_if_stale(self) -> object: ...
    def close(self) -> None: ...
    def connect_failure(self, server: str) -> str | None: ...


# (result, workspace) -> (model-facing output, attachments), mcp.md §11
ResultFormatter = Callable[[JSONObject, Path | None], tuple[str, Sequence[object]]]


def is_mcp_error(exc: BaseException) -> bool:
    """True for the client's `McpError` family (MCP-API-05), recognised by class name so that
    this layer does not import the client's transports."""
    return any(cls.__name__ == "McpError" for cls in type(exc).__mro__)


def strip_approved(arguments: JSONObject) -> JSONObject:
    """[MCP-RESULT-05] [MCP-POL-05] [POL-APPROVE-14] the model cannot pre-approve a call."""
    return {k: v for k, v in arguments.items() if k != "approved"}


def _attachment(value: object) -> JSONObject | None:
    """One declared attachment as `{"path", "mime_type"}`, from a dict or a record."""
    if isinstance(value, dict):
        path, mime = value.get("path"), value.get("mime_type")
    else:
        path, mime = getattr(value, "path", None), getattr(value, "mime_type", None)
    if isinstance(path, str | Path) and isinstance(mime, str):
        return {"path": str(path), "mime_type": mime}
    return None


def default_formatter(result: JSONObject, workspace: Path | None) -> tuple[str, Sequence[object]]:
    """`format_result_for_model` of the client (mcp.md §11), imported on first use."""
    from zeroclaw_ref.mcp.results import format_result_for_model

    output, attachments = format_result_for_model(result, workspace)
    return output, list(attachments)


class McpToolAdapter:
    """[MCP-NAME-01] one discovered MCP tool, exposed under its prefixed name."""

    act = True  # Design: an MCP tool's side effects are unknown (POL-AUTO-07)

    def __init__(
        self,
        record: McpToolRecord,
        client: McpClient,
        workspace: Path | None,
        formatter: ResultFormatter = default_formatter,
    ) -> None:
        self.record = record
        self.name = record.prefixed_name  # [MCP-NAME-05] never rewritten
        desc = record.description
        self.description = desc if isinstance(desc, str) else DEFAULT_DESCRIPTION
        self.parameters = record.input_schema  # [MCP-DISC-05] verbatim
        self._client = client
        self._workspace = workspace
        self._formatter = formatter

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        if arguments is None:
            arguments = {}  # [MCP-RESULT-06] absent or null is sent as {}
        if not isinstance(arguments, dict):
            return ToolResult.fail("MCP tool arguments must be a JSON object")  # [MCP-RESULT-06]
        try:
            result = self._client.call_tool(
                self.name, strip_approved(arguments), cancel=context.cancel
            )
        except Exception as exc:
            if not is_mcp_error(exc):
                raise
            return ToolResult.fail(str(exc))  # [MCP-RESULT-02] the §16 text
        if not isinstance(result, dict):
            return ToolResult.fail("failed to parse tools/call result")  # [MCP-RESULT-04]
        output, declared = self._formatter(result, self._workspace)
        attachments: list[JSON] = [a for a in map(_attachment, declared) if a is not None]
        # [MCP-RESULT-19] images reach the engine only as declared attachments
        return ToolResult.ok(output, {ATTACHMENTS_KEY: attachments} if attachments else None)


# --- capability tools (mcp.md §10.1) ------------------------------------------------------

RESOURCES_SCHEMA: Final[JSONObject] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["list", "read"]},
        "server": {"type": "string", "description": "Server name; required when a cursor is given"},
        "cursor": {
            "type": "string",
            "description": "Pagination cursor returned by a previous list of the same server",
        },
        "uri": {"type": "string", "description": "Prefixed resource URI to read"},
    },
    "required": ["action"],
}

PROMPTS_SCHEMA: Final[JSONObject] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["list", "get"]},
        "server": {"type": "string"},
        "cursor": {"type": "string"},
        "name": {"type": "string", "description": "Prefixed prompt name"},
        "arguments": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["action"],
}


def _text(arguments: JSONObject, key: str) -> str | None:
    value = arguments.get(key)
    return value if isinstance(value, str) and value else None


def _pretty(value: JSON) -> str:
    """[MCP-RES-16] pretty JSON in the value's own key order."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def _page(value: JSON, key: str, method: str) -> tuple[list[JSONObject], str | None]:
    """The items and next cursor of one raw listing result."""
    items = value.get(key) if isinstance(value, dict) else None
    if not isinstance(items, list):
        raise CapabilityFailure(f"failed to parse {method} result")  # [MCP-RES-13]
    cursor = value.get("nextCursor") if isinstance(value, dict) else None
    # [MCP-DISC-10] only a non-empty string continues the listing
    return [i for i in items if isinstance(i, dict)], cursor if isinstance(cursor, str) else None


def _split(prefixed: str) -> str:
    """The server part of a prefixed value (MCP-NAME-04); the client validates it."""
    return prefixed.split("__", 1)[0]


class _CapabilityTool:
    """Shared argument handling of `mcp_resources` and `mcp_prompts` (MCP-RES-03/04/07)."""

    act = False
    name: str
    description: str
    parameters: JSONObject
    _actions: tuple[str, str]
    _key: str  # "resources" or "prompts"

    def __init__(self, client: McpClient) -> None:
        self._client = client

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        try:
            return ToolResult.ok(self._run(arguments))
        except CapabilityFailure as exc:
            return ToolResult.fail(str(exc))
        except Exception as exc:
            if not is_mcp_error(exc):
                raise
            return ToolResult.fail(str(exc))  # [MCP-RES-15] never raised to the engine

    def _run(self, arguments: JSON) -> str:
        if not isinstance(arguments, dict):
            raise CapabilityFailure("arguments must be an object")  # [MCP-RES-03]
        arguments = strip_approved(arguments)
        expected = "|".join(self._actions)
        action = arguments.get("action")
        if not isinstance(action, str):
            raise CapabilityFailure(f"missing required `action` ({expected})")  # [MCP-RES-04]
        if action == "list":
            return self._list(_text(arguments, "server"), _text(arguments, "cursor"))
        if action == self._actions[1]:
            return self._second(arguments)
        raise CapabilityFailure(f"unknown action `{action}` (expected {expected})")

    def _list(self, server: str | None, cursor: str | None) -> str:
        if server is None and cursor is not None:
            raise CapabilityFailure(  # [MCP-RES-07]
                "`cursor` requires a `server` (pagination is per-server); "
                "omit `cursor` for an all-server list"
            )
        if server is not None:
            # [MCP-RES-05] [MCP-DISC-14] one page of one server, its cursor handed back
            items, next_cursor = _page(self._fetch(server, cursor), self._key, self._method)
            defs: list[JSON] = [self._define(server, i) for i in items]
            return _pretty({self._key: defs, "next_cursor": next_cursor})
        # [MCP-RES-06] the client collects every page of every capable server, in grant
        # order, skipping failed ones, and prefixes the names itself
        items, _ = _page(self._fetch(None, None), self._key, self._method)
        return _pretty([self._define(None, i) for i in items])

    @property
    def _method(self) -> str:
        return f"{self._key}/list"

    def _fetch(self, server: str | None, cursor: str | None) -> JSON:
        raise NotImplementedError

    def _define(self, server: str | None, item: JSONObject) -> JSONObject:
        raise NotImplementedError

    def _second(self, arguments: JSONObject) -> str:
        raise NotImplementedError


class McpResourcesTool(_CapabilityTool):
    """`mcp_resources`: list or read resources of the granted servers (MCP-RES-05..09)."""

    name = "mcp_resources"
    description = (
        "List or read resources exposed by connected MCP servers. "
        "Resource URIs are prefixed as <server>__<uri>."
    )
    parameters = RESOURCES_SCHEMA
    _actions = ("list", "read")
    _key = "resources"

    def _fetch(self, server: str | None, cursor: str | None) -> JSON:
        return self._client.list_resources(server, cursor)

    def _define(self, server: str | None, item: JSONObject) -> JSONObject:
        return resource_definition(server, item)

    def _second(self, arguments: JSONObject) -> str:
        uri = _text(arguments, "uri")
        if uri is None:
            raise CapabilityFailure("`read` requires a non-empty `uri`")  # [MCP-RES-09]
        return read_wrapped(self._client, uri)


def read_wrapped(client: McpClient, prefixed_uri: str) -> str:
    """[MCP-RES-09] [MCP-CTX-02] read one resource and wrap it as untrusted content.

    Raises:
        McpError or CapabilityFailure: the read failed; callers report the text (or skip a pin).
    """
    server = _split(prefixed_uri)
    result = client.read_resource(prefixed_uri)
    check_is_error(result, wire.METHOD_RESOURCES_READ, server)
    contents = result.get("contents") if isinstance(result, dict) else None
    if not isinstance(contents, list):
        raise CapabilityFailure("failed to parse resources/read result")  # [MCP-RES-13]
    return resource_wrapper(server, prefixed_uri, contents)


class McpPromptsTool(_CapabilityTool):
    """`mcp_prompts`: list or render prompts of the granted servers (MCP-RES-10..12)."""

    name = "mcp_prompts"
    description = (
        "List or render prompts exposed by connected MCP servers. "
        "Prompt names are prefixed as <server>__<name>."
    )
    parameters = PROMPTS_SCHEMA
    _actions = ("list", "get")
    _key = "prompts"

    def _fetch(self, server: str | None, cursor: str | None) -> JSON:
        return self._client.list_prompts(server, cursor)

    def _define(self, server: str | None, item: JSONObject) -> JSONObject:
        return prompt_definition(server, item)

    def _second(self, arguments: JSONObject) -> str:
        name = _text(arguments, "name")
        if name is None:
            raise CapabilityFailure("`get` requires a non-empty `name`")  # [MCP-RES-11]
        prompt_arguments = arguments.get("arguments")
        if prompt_arguments is not None and not isinstance(prompt_arguments, dict):
            raise CapabilityFailure("prompt arguments must be an object")  # [MCP-RES-12]
        server = _split(name)
        # [MCP-RES-12] values are forwarded as received, even when they are not strings
        result = self._client.get_prompt(name, prompt_arguments or {})
        check_is_error(result, wire.METHOD_PROMPTS_GET, server)
        messages = result.get("messages") if isinstance(result, dict) else None
        if not isinstance(messages, list):
            raise CapabilityFailure("failed to parse prompts/get result")  # [MCP-RES-13]
        return prompt_wrapper(server, name, messages)
