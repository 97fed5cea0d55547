"""The HTTP headers of a modern request (mcp.md §14.3, MCP-MOD-14..16).

`MCP-Protocol-Version`, `Mcp-Method` and (for the three named methods) `Mcp-Name` mirror the
body; `Mcp-Param-<Name>` mirrors each tool argument whose `inputSchema` property is annotated
`x-mcp-header`. Values that would not survive as a plain header are sent in the base64
sentinel form. A tool whose annotations are invalid is dropped from the listing (the caller
logs it), because a server would reject every call of it.
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Final, Protocol, TypeVar

from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.wire import mcp as wire

log = logging.getLogger(__name__)

# method -> the params member `Mcp-Name` mirrors
NAMED: Final = {
    wire.METHOD_TOOLS_CALL: "name",
    wire.METHOD_PROMPTS_GET: "name",
    wire.METHOD_RESOURCES_READ: "uri",
}

_PLAIN = re.compile(r"[\x20-\x7e]*")
_SENTINEL = re.compile(r"=\?base64\?.*\?=", re.DOTALL)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PRIMITIVES: Final = frozenset({"string", "integer", "boolean"})
# Schema keywords whose values are subschemas; crossing any of them leaves the plain
# `properties` path, where an annotation is not allowed. `$ref` is never followed.
_ONE: Final = frozenset(
    {
        "items", "contains", "additionalProperties", "propertyNames", "not", "if", "then",
        "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema",
    }
)  # fmt: skip
_MANY: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAPS: Final = frozenset({"$defs", "definitions", "patternProperties", "dependentSchemas"})

# property path -> header token
HeaderMap = dict[tuple[str, ...], str]


def encode(value: str) -> str:
    """[MCP-MOD-15] plain visible ASCII without edge whitespace passes; anything else (and a
    value that already looks like the sentinel) becomes `=?base64?<base64 of UTF-8>?=`."""
    if _PLAIN.fullmatch(value) and value == value.strip() and not _SENTINEL.fullmatch(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def _positions(schema: JSON) -> Iterator[tuple[tuple[str, ...] | None, JSONObject]]:
    """Every schema object under `schema`, with its plain `properties` path (None once the
    walk crossed any other keyword). Iterative, so a deep schema cannot exhaust the stack."""
    stack: list[tuple[tuple[str, ...] | None, JSON]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield path, node
        for word, value in node.items():
            if word == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    stack.append((None if path is None else (*path, name), sub))
            elif word in _ONE:
                stack.append((None, value))
            elif word in _MANY and isinstance(value, list):
                stack.extend((None, sub) for sub in value)
            elif word in _MAPS and isinstance(value, dict):
                stack.extend((None, sub) for sub in value.values())


def invalid_reason(schema: JSON) -> str | None:
    """[MCP-MOD-16] why the `x-mcp-header` annotations of `schema` are invalid, or None."""
    seen: dict[str, str] = {}
    word = wire.SCHEMA_HEADER_ANNOTATION
    for path, node in _positions(schema):
        if word not in node:
            continue
        if not path:
            return f"{word} outside a plain properties path"
        where = ".".join(path)
        token = node[word]
        if not isinstance(token, str) or not _TOKEN.fullmatch(token):
            return f"property `{where}`: {word} is not a header name token"
        kind = node.get("type")
        if not isinstance(kind, str) or kind not in _PRIMITIVES:
            return f"property `{where}`: {word} on a non-primitive property"
        other = seen.setdefault(token.lower(), where)
        if other != where:
            return f"property `{where}`: {word} `{token}` repeats property `{other}`'s"
    return None


def header_map(schema: JSON) -> HeaderMap:
    """The annotated properties of a schema that `invalid_reason` accepted."""
    out: HeaderMap = {}
    for path, node in _positions(schema):
        token = node.get(wire.SCHEMA_HEADER_ANNOTATION)
        if path and isinstance(token, str):
            out[path] = token
    return out


def _rendered(value: JSON) -> str | None:
    """Booleans as true/false, integers in decimal, strings as they are; nothing else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else None


def param_headers(mapping: HeaderMap, arguments: JSON) -> dict[str, str]:
    """[MCP-MOD-16] one `Mcp-Param-<Name>` per annotated argument present and not null."""
    out: dict[str, str] = {}
    for path, token in mapping.items():
        node: JSON = arguments
        for step in path:
            node = node.get(step) if isinstance(node, dict) else None
        text = _rendered(node)
        if text is not None:
            out[wire.HEADER_PARAM_PREFIX + token] = encode(text)
    return out


def request_headers(message: JSONObject, maps: Mapping[str, HeaderMap]) -> dict[str, str]:
    """[MCP-MOD-14] `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` for one request or notification."""
    method = message.get("method")
    if not isinstance(method, str):
        return {}
    out = {wire.HEADER_METHOD: method}
    params = message.get("params")
    member = NAMED.get(method)
    if member is not None and isinstance(params, dict):
        name = params.get(member)
        if isinstance(name, str):
            out[wire.HEADER_NAME] = encode(name)
            mapping = maps.get(name) if method == wire.METHOD_TOOLS_CALL else None
            if mapping:
                out.update(param_headers(mapping, params.get("arguments")))
    return out


class _Listed(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def input_schema(self) -> JSONObject: ...


T = TypeVar("T", bound=_Listed)


def keep_valid(server: str, tools: Sequence[T]) -> list[T]:
    """[MCP-MOD-16] the listed tools without those whose annotations are invalid (a WARNING
    names each dropped tool and the reason)."""
    kept: list[T] = []
    for tool in tools:
        reason = invalid_reason(tool.input_schema)
        if reason is None:
            kept.append(tool)
        else:
            log.warning(
                "MCP server `%s`: dropping tool `%s`: invalid x-mcp-header (%s)",
                server, tool.name, reason,
            )  # fmt: skip
    return kept
