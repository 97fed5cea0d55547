"""Opening a session on a fresh transport: the era probe, `server/discover` and the
`initialize` handshake (mcp.md §1.3, §1.4, §14.1).

Goals: with `era = "auto"` a modern server is found by positive evidence only (a discover
result that lists a version we speak, or a recognised modern error, MCP-MOD-01/02), and
anything else falls back to `initialize` at the cost of one round trip, never on one error code
alone (MCP-MOD-04). Plan: the era cached for the server (era.py) decides the first step; a
legacy child that the probe killed is respawned before `initialize`; a cached era that the
server contradicts is probed again once (MCP-MOD-03).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from zeroclaw_ref import __version__
from zeroclaw_ref.core.jsontypes import JSONObject, dumps
from zeroclaw_ref.mcp import era as eras
from zeroclaw_ref.mcp import errors, handlers, modern
from zeroclaw_ref.mcp.transport import Retry
from zeroclaw_ref.wire import mcp as wire
from zeroclaw_ref.wire.mcp import ModernErrorCode

if TYPE_CHECKING:
    from zeroclaw_ref.mcp.connection import Connection

log = logging.getLogger(__name__)


class _Legacy(Exception):
    """Internal: the probe found no modern server; `respawn` when it left the child unusable."""

    def __init__(self, respawn: bool) -> None:
        super().__init__("legacy")
        self.respawn = respawn


def run(conn: Connection, deadline: float, init_t: float) -> None:
    """Open the session of a freshly opened transport in the era its setting asks for.

    Raises:
        McpError: the handshake failed; the connect or the recovery fails with it.
    """
    setting = conn.era_setting
    if setting == "modern" and not conn.transport.modern_capable:
        raise errors.McpConnectError(
            conn.name,
            f"MCP server `{conn.name}`: era = modern needs the stdio or Streamable HTTP "
            "transport; the legacy HTTP+SSE transport has no stateless era",
        )
    if setting == "legacy" or not conn.transport.modern_capable:
        legacy(conn, deadline, init_t, detected=False)
        return
    if setting == "modern":
        discover(conn, deadline, init_t, detected=False)
        return
    if eras.cached(conn.era_key) == "legacy":
        _cached_legacy(conn, deadline, init_t)
        return
    try:
        discover(conn, deadline, init_t, detected=True, probe=True)
    except _Legacy as found:
        if found.respawn:
            conn.respawn(deadline)  # [MCP-MOD-04] a child the probe confused starts afresh
        _legacy_after_probe(conn, deadline, init_t)


def _cached_legacy(conn: Connection, deadline: float, init_t: float) -> None:
    """[MCP-MOD-03] a known legacy server: `initialize` at once, probed again only when it
    answers with a modern refusal (it moved to the new era since)."""
    try:
        legacy(conn, deadline, init_t, detected=True)
    except errors.McpRpcError as exc:
        if not modern.is_modern_error(_error_of(exc), over_http=conn.transport.over_http):
            raise
        discover(conn, deadline, init_t, detected=True)


def _legacy_after_probe(conn: Connection, deadline: float, init_t: float) -> None:
    """`initialize` after a failed probe; a modern refusal of it (a slow server that took the
    timed-out probe after all) sends us back to discover, and a stdio child that the probe
    confused (it died, or it refuses `initialize` now) is started again once (MCP-MOD-04)."""
    try:
        legacy(conn, deadline, init_t, detected=True)
        return
    except errors.McpRpcError as exc:
        if modern.is_modern_error(_error_of(exc), over_http=conn.transport.over_http):
            discover(conn, deadline, init_t, detected=True)
            return
        if conn.transport.over_http or time.monotonic() >= deadline:
            raise
        why = "refused initialize after the era probe"
    except (errors.McpOutcomeUnknownError, errors.McpConnectError):
        # (a child that died of the probe fails `initialize` as outcome unknown, or as a
        # refused write when it was already gone)
        if conn.transport.over_http or time.monotonic() >= deadline:
            raise
        why = "ended after the era probe"
    log.info("MCP server `%s` %s; starting it again", conn.name, why)
    conn.respawn(deadline)
    legacy(conn, deadline, init_t, detected=True)


def _error_of(exc: errors.McpRpcError) -> JSONObject:
    return {"code": exc.code, "message": exc.message, "data": exc.data}


def discover(
    conn: Connection, deadline: float, init_t: float, *, detected: bool, probe: bool = False
) -> None:
    """[MCP-MOD-01] [MCP-MOD-02] [MCP-MOD-06] `server/discover`, retried once after a -32022
    that names a version we speak; with `probe`, anything but modern evidence is `_Legacy`.

    Raises:
        _Legacy: (probe only) no modern server answered.
        McpError: a modern server that cannot be used, or (without `probe`) any failure.
    """
    transport = conn.transport
    version = modern.MODERN_VERSION
    transport.set_era(True)
    wait_t = min(conn.options.probe_timeout_s, init_t) if probe else init_t
    for attempt in range(2):
        transport.set_protocol_version(version)
        params = modern.with_envelope({}, modern.envelope(conn.name, conn.handlers, version))
        limit = min(deadline, time.monotonic() + wait_t)
        try:
            result = conn.exchange(wire.METHOD_SERVER_DISCOVER, params, limit, wait_t, None, None)
        except errors.McpRpcError as exc:
            error = _error_of(exc)
            if not modern.is_modern_error(error, over_http=transport.over_http):
                if probe:
                    raise _Legacy(respawn=False) from exc
                raise _not_modern(conn, f"error {exc.code}: {exc.message}") from exc
            if exc.code != ModernErrorCode.UNSUPPORTED_VERSION:
                raise modern.explain(
                    conn.name, f"`{wire.METHOD_SERVER_DISCOVER}`", exc, version
                ) from exc
            offered = modern.supported_versions(exc.data) or []
            mutual = modern.pick_version(offered)
            if mutual is not None and attempt == 0:
                version = mutual  # [MCP-MOD-06] once, with a version both sides speak
                continue
            if probe and any(v in modern.HANDSHAKE_VERSIONS for v in offered):
                raise _Legacy(respawn=False) from exc
            raise modern.explain(
                conn.name, f"`{wire.METHOD_SERVER_DISCOVER}`", exc, version
            ) from exc
        except errors.McpTimeoutError as exc:
            if probe:
                log.warning(
                    "MCP server `%s` did not answer `%s` within %ss; trying initialize",
                    conn.name, wire.METHOD_SERVER_DISCOVER, errors.seconds(wait_t),
                )  # fmt: skip
                raise _Legacy(respawn=False) from exc
            raise _discover_timeout(conn, init_t) from exc
        except (errors.McpOutcomeUnknownError, Retry) as exc:
            # a stdio child that died of the probe is a legacy verdict; an HTTP server that
            # cannot be reached is none (its connect fails as `initialize`'s would)
            unreachable = transport.over_http and isinstance(exc, Retry)
            if probe and time.monotonic() < deadline and not unreachable:
                raise _Legacy(respawn=not transport.over_http) from exc
            raise exc.error if isinstance(exc, Retry) else exc from None
        except errors.McpError as exc:
            if probe and not isinstance(exc, errors.McpConnectError | errors.McpClosedError):
                # (a plain HTTP status, a body that is no JSON-RPC: no modern evidence; a
                # connect, TLS or redirect failure is no verdict and fails the connect)
                raise _Legacy(respawn=False) from exc
            raise
        found = modern.parse_discover(result)
        speaks = modern.pick_version(list(found.versions)) if found is not None else None
        if found is None or speaks is None:
            if probe:
                raise _Legacy(respawn=False)
            raise _not_modern(conn, "its server/discover result lists no version it shares")
        chosen = version if version in found.versions else speaks
        conn.adopt_modern(found, chosen, detected, deadline)
        return
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def _not_modern(conn: Connection, why: str) -> errors.McpConnectError:
    return errors.McpConnectError(
        conn.name,
        f"MCP server `{conn.name}` does not speak the {modern.MODERN_VERSION} protocol required by "
        f"era = modern: {why}",
    )


def _discover_timeout(conn: Connection, init_t: float) -> errors.McpTimeoutError:
    return errors.McpTimeoutError(
        conn.name,
        f"MCP server `{conn.name}` timed out after {errors.seconds(init_t)}s waiting for "
        f"{wire.METHOD_SERVER_DISCOVER} response",
    )


def legacy(conn: Connection, deadline: float, init_t: float, *, detected: bool) -> None:
    """[MCP-INIT-01..11] [MCP-VER-01..03] the `initialize` handshake."""
    transport = conn.transport
    transport.set_era(False)
    transport.set_protocol_version(None)
    params: JSONObject = {
        "protocolVersion": modern.HANDSHAKE_VERSIONS[0],
        "capabilities": handlers.capabilities(conn.handlers),
        "clientInfo": {"name": "zeroclaw_ref", "version": __version__},
    }
    try:
        result = conn.exchange(wire.METHOD_INITIALIZE, params, deadline, init_t, None, None)
    except Retry as retry:
        raise retry.error from retry
    except errors.McpTimeoutError as exc:
        raise errors.McpTimeoutError(
            conn.name,
            f"MCP server `{conn.name}` timed out after {errors.seconds(init_t)}s waiting for "
            "initialize response",
        ) from exc
    except errors.McpRpcError as exc:
        raise errors.McpRpcError(
            conn.name,
            f"MCP server `{conn.name}` rejected initialize: error {exc.code}: {exc.message}",
            exc.code,
            exc.message,
            exc.data,
        ) from exc
    if not isinstance(result, dict):
        raise errors.McpProtocolError(
            conn.name, f"MCP server `{conn.name}` returned an invalid initialize result"
        )
    version = result.get("protocolVersion")
    if version not in modern.HANDSHAKE_VERSIONS or not isinstance(version, str):
        raise errors.McpProtocolError(
            conn.name,
            f"MCP server `{conn.name}` answered initialize with unsupported protocolVersion "
            f"{dumps(version)}; supported: {', '.join(modern.HANDSHAKE_VERSIONS)}",
        )
    conn.adopt_legacy(result, version, detected)
    transport.set_protocol_version(version)
    try:
        transport.send_message({"jsonrpc": "2.0", "method": wire.NOTIFY_INITIALIZED, "params": {}})
    except (errors.McpError, OSError) as exc:
        # [MCP-INIT-10] a lost `initialized` is logged and otherwise ignored
        log.warning(
            "MCP server `%s`: could not send %s: %s", conn.name, wire.NOTIFY_INITIALIZED, exc
        )
    transport.after_initialized(deadline)
