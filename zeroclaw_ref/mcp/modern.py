"""The stateless 2026-07-28 protocol era: its vocabulary, the per-request envelope, result
kinds and the modern errors (mcp.md §14).

Goals: one place knows what a modern request carries (MCP-MOD-05) and how a modern answer is
read (MCP-MOD-07), so that the probe (handshake.py), the request path (mrtr.py) and the HTTP
headers (mcpheaders.py) agree. Nothing here does I/O.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

from zeroclaw_ref import __version__
from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps
from zeroclaw_ref.mcp import errors
from zeroclaw_ref.mcp import handlers as client_handlers
from zeroclaw_ref.wire import mcp as wire
from zeroclaw_ref.wire.mcp import ModernErrorCode

MODERN_VERSION: Final = "2026-07-28"
# The modern versions this client speaks, newest last (one today).
MODERN_VERSIONS: Final = (MODERN_VERSION,)
# [MCP-VER-01] the handshake versions, newest first.
HANDSHAKE_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

COMPLETE: Final = "complete"
INPUT_REQUIRED: Final = "input_required"
# [MCP-MOD-08] the methods whose answer may ask for input (multi round-trip requests)
MRTR_METHODS: Final = frozenset(
    {wire.METHOD_TOOLS_CALL, wire.METHOD_PROMPTS_GET, wire.METHOD_RESOURCES_READ}
)
# [MCP-MOD-12] the results that may be answered from cache within their ttlMs
CACHEABLE: Final = frozenset(
    {
        wire.METHOD_TOOLS_LIST,
        wire.METHOD_RESOURCES_LIST,
        wire.METHOD_PROMPTS_LIST,
        wire.METHOD_RESOURCES_TEMPLATES_LIST,
    }
)
# [MCP-MOD-10] never sent to a modern server
LEGACY_ONLY: Final = frozenset(
    {
        wire.METHOD_INITIALIZE,
        wire.NOTIFY_INITIALIZED,
        wire.METHOD_PING,
        wire.METHOD_LOGGING_SET_LEVEL,
        wire.METHOD_RESOURCES_SUBSCRIBE,
    }
)

# Python logging levels -> the lowest MCP level a server should send (most verbose first).
_MCP_LEVELS: Final = (
    (logging.DEBUG, "debug"),
    (logging.INFO, "info"),
    (logging.WARNING, "warning"),
)


def log_level(server: str) -> str | None:
    """[MCP-MOD-05] the `logLevel` to ask for: the most verbose level the server's logger would
    show (MCP-NOTE-03), or None (no log notifications) when even ERROR is switched off.

    Legacy servers send `notifications/message` unasked and the client logs what its logger
    lets through; a modern server sends nothing without `logLevel`, so asking for exactly what
    would be shown keeps the two eras alike.
    """
    logger = logging.getLogger(f"zeroclaw_ref.mcp.server.{server}")
    for level, name in _MCP_LEVELS:
        if logger.isEnabledFor(level):
            return name
    return "error" if logger.isEnabledFor(logging.ERROR) else None


def envelope(server: str, handlers: client_handlers.ClientHandlers, version: str) -> JSONObject:
    """[MCP-MOD-05] the `_meta` members every modern request carries."""
    meta: JSONObject = {
        wire.META_VERSION: version,
        # [MCP-INIT-03] only the capabilities an installed handler backs
        wire.META_CAPABILITIES: client_handlers.capabilities(handlers),
        wire.META_CLIENT_INFO: {"name": "zeroclaw_ref", "version": __version__},
    }
    level = log_level(server)
    if level is not None:
        meta[wire.META_LOG_LEVEL] = level
    return meta


def with_envelope(params: JSONObject | None, meta: JSONObject) -> JSONObject:
    """A copy of `params` whose `_meta` holds the envelope (other `_meta` members kept)."""
    out: JSONObject = dict(params or {})
    existing = out.get(wire.META)
    merged: JSONObject = dict(existing) if isinstance(existing, dict) else {}
    merged.update(meta)
    out[wire.META] = merged
    return out


def result_kind(server: str, method: str, result: JSON) -> str:
    """[MCP-MOD-07] `complete` (also when `resultType` is missing) or `input_required`.

    Raises:
        McpProtocolError: an unknown or malformed `resultType`.
    """
    if not isinstance(result, dict) or "resultType" not in result:
        return COMPLETE
    kind = result["resultType"]
    if kind in (COMPLETE, INPUT_REQUIRED):
        assert isinstance(kind, str)
        return kind
    raise errors.McpProtocolError(
        server,
        f"MCP server `{server}` answered `{method}` with an unknown resultType {dumps(kind)}",
    )


def supported_versions(data: JSON) -> list[str] | None:
    """The `supported` list of a -32022 error's data, when it is a list of strings."""
    supported = data.get("supported") if isinstance(data, dict) else None
    if isinstance(supported, list) and all(isinstance(v, str) for v in supported):
        return [v for v in supported if isinstance(v, str)]
    return None


def pick_version(supported: list[str] | None) -> str | None:
    """[MCP-MOD-06] the newest version of `supported` that this client speaks."""
    mutual = [v for v in MODERN_VERSIONS if v in (supported or ())]
    return mutual[-1] if mutual else None


def is_modern_error(error: JSON, *, over_http: bool) -> bool:
    """[MCP-MOD-01] [MCP-MOD-04] positive evidence of a modern server, never a code alone:
    -32022 with its `supported` list, -32021 with its `requiredCapabilities` object, -32020
    (which carries no data) only over HTTP, the one transport that has the headers it names."""
    if not isinstance(error, dict):
        return False
    code, data = error.get("code"), error.get("data")
    if code == ModernErrorCode.UNSUPPORTED_VERSION:
        return bool(supported_versions(data))
    if code == ModernErrorCode.MISSING_CAPABILITY:
        return isinstance(data, dict) and isinstance(data.get("requiredCapabilities"), dict)
    return (
        code == ModernErrorCode.HEADER_MISMATCH
        and over_http
        and isinstance(error.get("message"), str)
    )


def explain(server: str, op: str, err: errors.McpRpcError, version: str) -> errors.McpRpcError:
    """[MCP-MOD-06] a modern refusal turned into a text that names what went wrong; other
    errors are returned unchanged (MCP-RPC-08)."""
    detail = f"(error {err.code}: {err.message})"
    if err.code == ModernErrorCode.HEADER_MISMATCH:
        why = "the MCP HTTP headers of the request did not match its body"
    elif err.code == ModernErrorCode.MISSING_CAPABILITY:
        data = err.data
        needed = data.get("requiredCapabilities") if isinstance(data, dict) else None
        names = ", ".join(sorted(needed)) if isinstance(needed, dict) and needed else "unnamed"
        why = f"it needs client capabilities this client does not offer ({names})"
    elif err.code == ModernErrorCode.UNSUPPORTED_VERSION:
        offered = supported_versions(err.data)
        listed = ", ".join(offered) if offered else "none listed"
        why = f"protocol version {version} is not supported (the server supports: {listed})"
    else:
        return err
    text = f"MCP server `{server}` refused {op}: {why} {detail}"
    return errors.McpRpcError(server, text, err.code, err.message, err.data)


@dataclass(frozen=True, slots=True)
class Discovered:
    """A usable `server/discover` result."""

    versions: tuple[str, ...]
    capabilities: JSONObject
    server_info: JSON
    instructions: str | None


def parse_discover(result: JSON) -> Discovered | None:
    """The discover result, or None when it is not one (then it is no modern evidence)."""
    if not isinstance(result, dict):
        return None
    versions = result.get("supportedVersions")
    if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
        return None
    caps = result.get("capabilities")
    meta = result.get(wire.META)
    info = meta.get(wire.META_SERVER_INFO) if isinstance(meta, dict) else None
    if info is None:
        info = result.get("serverInfo")
    instructions = result.get("instructions")
    return Discovered(
        versions=tuple(v for v in versions if isinstance(v, str)),
        capabilities=caps if isinstance(caps, dict) else {},
        server_info=info,
        instructions=instructions if isinstance(instructions, str) else None,
    )
