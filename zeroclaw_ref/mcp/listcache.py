"""Caching of modern list results within their `ttlMs` (mcp.md §14.2, MCP-MOD-12).

A result is kept only when it is complete, carries a positive integer `ttlMs` and a known
`cacheScope`, and was not an input round (MRTR retries are never cached). `private` results
live in the connection's own cache (one agent, one set of credentials); `public` ones are
also shared, for their TTL, with other connections to the same server in this process. A
list-change notification evicts that method's entries everywhere, and a re-handshake clears
the connection's own entries. Served results are copies, so no caller can alter the cache.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final

from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps, loads
from zeroclaw_ref.mcp import modern
from zeroclaw_ref.wire import mcp as wire

MAX_TTL_MS: Final = 24 * 60 * 60 * 1000  # Design: a longer hint is clamped to one day
# list-change notification -> the methods whose results it invalidates
EVICTS: Final = {
    wire.NOTIFY_TOOLS_LIST_CHANGED: (wire.METHOD_TOOLS_LIST,),
    wire.NOTIFY_RESOURCES_LIST_CHANGED: (
        wire.METHOD_RESOURCES_LIST,
        wire.METHOD_RESOURCES_TEMPLATES_LIST,
    ),
    wire.NOTIFY_PROMPTS_LIST_CHANGED: (wire.METHOD_PROMPTS_LIST,),
}

# (scope key, method, params text) -> (expiry on the monotonic clock, result text)
_Entries = dict[tuple[str, str, str], tuple[float, str]]
_shared: _Entries = {}
_shared_lock = threading.Lock()


def _params_key(params: JSONObject | None) -> str:
    """The params that select a result (cursor included), without the envelope."""
    return dumps({k: v for k, v in (params or {}).items() if k != wire.META})


def _ttl_s(result: JSONObject) -> float | None:
    ttl = result.get("ttlMs")
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0:
        return None
    return min(ttl, MAX_TTL_MS) / 1000


class ListCache:
    """One connection's cache; `scope` identifies the server for the shared public entries."""

    def __init__(self, scope: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._scope = scope
        self._clock = clock
        self._own: _Entries = {}
        self._lock = threading.Lock()

    def get(self, method: str, params: JSONObject | None) -> JSON:
        """A fresh copy of the cached result, or None."""
        if method not in modern.CACHEABLE:
            return None
        entry = (self._scope, method, _params_key(params))
        now = self._clock()
        with self._lock:
            hit = self._own.get(entry)
        if hit is None:
            with _shared_lock:
                hit = _shared.get(entry)
        if hit is None or hit[0] <= now:
            return None
        return loads(hit[1])

    def put(self, method: str, params: JSONObject | None, result: JSON) -> None:
        """Keep `result` when its hints allow it (complete, positive TTL, known scope)."""
        if method not in modern.CACHEABLE or not isinstance(result, dict):
            return
        if modern.result_kind("", method, result) != modern.COMPLETE:
            return
        ttl, scope = _ttl_s(result), result.get("cacheScope")
        if ttl is None or scope not in ("private", "public"):
            return
        entry = (self._scope, method, _params_key(params))
        value = (self._clock() + ttl, dumps(result))
        with self._lock:
            self._own[entry] = value
        if scope == "public":
            with _shared_lock:
                _shared[entry] = value

    def evict(self, notification: str) -> None:
        """A list-change notification: drop that list's entries, own and shared."""
        methods = EVICTS.get(notification, ())
        if not methods:
            return
        with self._lock:
            for entry in [k for k in self._own if k[1] in methods]:
                del self._own[entry]
        with _shared_lock:
            for entry in [k for k in _shared if k[0] == self._scope and k[1] in methods]:
                del _shared[entry]

    def clear(self) -> None:
        """A new session with the server: nothing it said to this connection is kept (shared
        public entries keep their TTL; a list-change notification still evicts them)."""
        with self._lock:
            self._own.clear()


def clear_shared() -> None:
    """Forget every shared entry (tests)."""
    with _shared_lock:
        _shared.clear()
