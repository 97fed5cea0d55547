"""Untrusted MCP content: the resource and prompt wrappers (mcp.md §10.2).

Everything a server says in a resource or a prompt reaches the model only through these
wrappers, marked `trust="untrusted-external"` and scrubbed first (MCP-CTX-01) by the client's
scrubber of §10.4 (`mcp/scrubber.py`), which mirrors ZeroClaw's quirks (MCP-CTX-07).
"""

from __future__ import annotations

from typing import Final

from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps
from zeroclaw_ref.mcp.scrubber import scrub

TRUST: Final = "untrusted-external"
DEFAULT_BLOB_MIME: Final = "application/octet-stream"


def escape_attr(value: str) -> str:
    """[MCP-CTX-05] only `&` (first), `"` and `<` are escaped."""
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _str(value: JSON) -> str | None:
    return value if isinstance(value, str) else None


def resource_wrapper(server: str, prefixed_uri: str, contents: list[JSON]) -> str:
    """[MCP-CTX-02] [MCP-CTX-03] one `<mcp-resource>` block for one `resources/read` result.

    Items that are neither text nor blob contribute nothing: there is nothing safe to show.
    """
    items = [item for item in contents if isinstance(item, dict)]
    mime = (_str(items[0].get("mimeType")) or "") if items else ""
    body: list[str] = []
    for item in items:
        text = _str(item.get("text"))
        blob = _str(item.get("blob"))
        if text is not None:
            body.append(scrub(text) + "\n")
        elif blob is not None:
            # [MCP-CTX-03] the length of the base64 text, never its decoded size or payload
            blob_mime = _str(item.get("mimeType")) or DEFAULT_BLOB_MIME
            body.append(f"[binary blob, {len(blob)} bytes, mime={blob_mime}]\n")
    opening = (
        f'<mcp-resource server="{escape_attr(server)}" uri="{escape_attr(prefixed_uri)}" '
        f'mime="{escape_attr(mime)}" trust="{TRUST}">\n'
    )
    return opening + "".join(body) + "</mcp-resource>"


def prompt_wrapper(server: str, prefixed_name: str, messages: list[JSON]) -> str:
    """[MCP-CTX-04] one `<mcp-prompt>` block: `[<role>] <text>` per message."""
    lines: list[str] = []
    for message in messages:
        entry: JSONObject = message if isinstance(message, dict) else {}
        role = _str(entry.get("role")) or ""
        content = entry.get("content")
        text = _str(content.get("text")) if isinstance(content, dict) else None
        if text is None:
            text = dumps(content)  # non-text content is shown as compact JSON
        lines.append(f"[{role}] {scrub(text)}\n")
    opening = (
        f'<mcp-prompt server="{escape_attr(server)}" name="{escape_attr(prefixed_name)}" '
        f'trust="{TRUST}">\n'
    )
    return opening + "".join(lines) + "</mcp-prompt>"


class CapabilityFailure(Exception):
    """A capability-tool failure whose text goes to the model as is (MCP-RES-15)."""


def _prefix(server: str | None, value: JSON) -> JSON:
    """`None` means the value was already prefixed by the all-server listing."""
    return value if server is None else f"{server}__{value if isinstance(value, str) else ''}"


def resource_definition(server: str | None, item: JSONObject) -> JSONObject:
    """[MCP-RES-08] uri (prefixed), name, then description and mimeType when supplied."""
    definition: JSONObject = {"uri": _prefix(server, item.get("uri")), "name": item.get("name")}
    for key in ("description", "mimeType"):
        if key in item:
            definition[key] = item[key]
    return definition


def prompt_definition(server: str | None, item: JSONObject) -> JSONObject:
    """[MCP-RES-10] name (prefixed), description when supplied, arguments (always a list)."""
    definition: JSONObject = {"name": _prefix(server, item.get("name"))}
    if "description" in item:
        definition["description"] = item["description"]
    arguments: list[JSON] = []
    raw_arguments = item.get("arguments")
    for argument in raw_arguments if isinstance(raw_arguments, list) else []:
        if isinstance(argument, dict):
            kept: JSONObject = {"name": argument.get("name")}
            kept.update({k: argument[k] for k in ("description", "required") if k in argument})
            arguments.append(kept)
    definition["arguments"] = arguments
    return definition


def check_is_error(result: JSON, method: str, server: str) -> None:
    """[MCP-RES-14] an `isError` result fails as MCP-RESULT-01 does, method for tool name."""
    if not (isinstance(result, dict) and result.get("isError") is True):
        return
    content = result.get("content")
    texts = [
        item["text"]
        for item in (content if isinstance(content, list) else [])
        if isinstance(item, dict) and isinstance(item.get("text"), str)
    ]
    detail = "\n".join(t for t in texts if isinstance(t, str))
    detail = scrub(detail) if detail else "(no error detail returned by server)"
    raise CapabilityFailure(f"MCP `{method}` (server `{server}`) returned isError: {detail}")
