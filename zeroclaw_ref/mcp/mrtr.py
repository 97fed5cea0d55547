"""Requests of the 2026-07-28 era: the envelope, result kinds, version retry, list caching and
multi round-trip requests (mcp.md §14.2, MCP-MOD-05..09, MCP-MOD-12).

Goals: an `input_required` answer to `tools/call`, `prompts/get` or `resources/read` is met by
the same handlers that answer legacy server requests (handlers.py), and the request is sent
again with a new id, its original params, the `inputResponses` and the `requestState` exactly
as received. Every round is built from the caller's params, so nothing of one round or one
request reaches another (MCP-MOD-09); the caller's deadline covers every round, every handler
and every pause (MCP-TIME-04); rounds are bounded by MAX_INPUT_ROUNDS.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING, Final

from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.mcp import errors, handlers, modern
from zeroclaw_ref.wire.mcp import ModernErrorCode

if TYPE_CHECKING:
    from zeroclaw_ref.mcp.connection import Connection

# [MCP-MOD-08] the most input rounds one request may take before the client gives up
MAX_INPUT_ROUNDS: Final = 10
# Design: a round that carries only `requestState` (the server is still working) is sent again
# after a pause that starts at 50 ms and doubles up to 250 ms.
FIRST_PAUSE_S: Final = 0.05
MAX_PAUSE_S: Final = 0.25


def request(
    conn: Connection,
    method: str,
    params: JSONObject | None,
    deadline: float,
    timeout: float,
    op: str,
    cancel: CancelToken | None,
) -> JSON:
    """One modern request, with every input round it takes; returns the final `result`.

    Raises:
        McpError: with the §16 text, or the modern texts of `modern.explain`.
    """
    if method in modern.LEGACY_ONLY:  # [MCP-MOD-10]
        raise errors.McpProtocolError(
            conn.name, f"`{method}` does not exist in the {modern.MODERN_VERSION} protocol"
        )
    hit = conn.cache.get(method, params)
    if hit is not None:
        return hit  # [MCP-MOD-12]
    rounds = 0
    version_retried = False
    pause = FIRST_PAUSE_S
    current = params
    while True:
        sent = modern.with_envelope(current, conn.envelope())
        try:
            result = conn.send(method, sent, deadline, timeout, op, cancel)
        except errors.McpRpcError as exc:
            chosen = modern.pick_version(modern.supported_versions(exc.data))
            if (
                exc.code == ModernErrorCode.UNSUPPORTED_VERSION
                and chosen is not None
                and not version_retried
            ):
                version_retried = True  # [MCP-MOD-06] once, with a version we both speak
                conn.use_version(chosen)
                continue
            explained = modern.explain(conn.name, op, exc, conn.modern_version)
            if explained is exc:
                raise
            raise explained from exc
        except (errors.McpTimeoutError, errors.McpCancelledError) as exc:
            if rounds == 0:
                raise
            raise _during(conn, exc, timeout, op) from exc
        if modern.result_kind(conn.name, method, result) == modern.COMPLETE:
            if rounds == 0 and not version_retried:
                conn.cache.put(method, params, result)
            return result
        assert isinstance(result, dict)
        if method not in modern.MRTR_METHODS:
            raise errors.McpProtocolError(
                conn.name, f"MCP server `{conn.name}` asked for input during {op}, which cannot "
                "carry input responses",
            )  # fmt: skip
        rounds += 1
        if rounds > MAX_INPUT_ROUNDS:
            raise errors.McpProtocolError(
                conn.name,
                f"MCP server `{conn.name}` still asked for input after {MAX_INPUT_ROUNDS} rounds "
                f"of {op}; giving up",
            )
        asked, state = result.get("inputRequests"), result.get("requestState")
        if not _well_formed(asked, state):
            raise errors.McpProtocolError(
                conn.name, f"MCP server `{conn.name}` sent a malformed input_required result "
                f"during {op}",
            )  # fmt: skip
        current = dict(params or {})  # a fresh round: nothing of the last one but its state
        if isinstance(asked, dict) and asked:
            current["inputResponses"] = answer_inputs(conn, asked, deadline, timeout, op, cancel)
            pause = FIRST_PAUSE_S
        else:
            _pause(pause, deadline, cancel, conn, timeout, op)
            pause = min(pause * 2, MAX_PAUSE_S)
        if isinstance(state, str):
            current["requestState"] = state  # [MCP-MOD-08] echoed exactly as received


def _well_formed(asked: JSON, state: JSON) -> bool:
    """At least one of `inputRequests` (an object) and `requestState` (a string)."""
    if asked is not None and not isinstance(asked, dict):
        return False
    if state is not None and not isinstance(state, str):
        return False
    return bool(asked) or state is not None


def _during(conn: Connection, exc: errors.McpError, timeout: float, op: str) -> errors.McpError:
    """After a first round was written, a later round that never left still leaves the
    request's outcome unknown: report the "during" texts, not "before writing"."""
    if isinstance(exc, errors.McpCancelledError):
        return errors.cancelled_during(conn.name, op)
    return errors.timed_out_during(conn.name, timeout, op)


def _pause(
    seconds: float,
    deadline: float,
    cancel: CancelToken | None,
    conn: Connection,
    timeout: float,
    op: str,
) -> None:
    wait = min(seconds, max(0.0, deadline - time.monotonic()))
    fired = cancel.wait(wait) if cancel is not None else threading.Event().wait(wait)
    if fired:
        raise errors.cancelled_during(conn.name, op)
    if time.monotonic() >= deadline:
        raise errors.timed_out_during(conn.name, timeout, op)


def answer_inputs(
    conn: Connection,
    asked: JSONObject,
    deadline: float,
    timeout: float,
    op: str,
    cancel: CancelToken | None,
) -> JSONObject:
    """[MCP-MOD-08] one answer per input request, from the legacy server-request handlers,
    run on the connection's handler pool (MCP-S2C-06) within the request's deadline.

    Raises:
        McpProtocolError: an input this client cannot give (no handler installed, a handler
            that raised) or a malformed input request; McpTimeoutError, McpCancelledError.
    """
    futures: dict[str, tuple[str, Future[handlers.Reply]]] = {}
    for key, item in asked.items():
        method = item.get("method") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(method, str):
            raise errors.McpProtocolError(
                conn.name, f"MCP server `{conn.name}` sent a malformed input request during {op}"
            )
        raw = item.get("params")
        args: JSONObject = raw if isinstance(raw, dict) else {}
        futures[key] = (method, conn.run_handler(method, args))
    done = threading.Event()
    for _method, future in futures.values():
        future.add_done_callback(lambda _f: done.set())
    unregister = cancel.add_callback(done.set) if cancel is not None else None
    try:
        while not all(f.done() for _m, f in futures.values()):
            if cancel is not None and cancel.is_set():
                raise errors.cancelled_during(conn.name, op)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.timed_out_during(conn.name, timeout, op)
            done.wait(remaining)
            done.clear()
    finally:
        if unregister is not None:
            unregister()
    answers: JSONObject = {}
    for key, (method, future) in futures.items():
        reply = future.result()
        if reply.result is None:
            raise errors.McpProtocolError(
                conn.name,
                f"MCP server `{conn.name}` asked for `{method}` input during {op}, which this "
                f"client cannot give (error {reply.code}: {reply.message})",
            )
        answers[key] = reply.result
    return answers
