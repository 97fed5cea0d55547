"""The protocol era of each server, found once and kept for the life of the process
(mcp.md §14.1, MCP-MOD-03).

Goals: a legacy server pays for the probe once, not on every respawn, reconnect or new
registry; a server that changes era is probed again once (handshake.py). Keys: a stdio server
by its name, command, arguments and a digest of its environment entries (so secrets never sit
in a key); an HTTP server by the origin and path of its URL. The first era found for a key, and
every change, is logged once at INFO.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import urlsplit

from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.core.jsontypes import dumps

log = logging.getLogger(__name__)

Era = Literal["legacy", "modern"]
Setting = Literal["auto", "legacy", "modern"]
SETTINGS: Final = ("auto", "legacy", "modern")

_lock = threading.Lock()
_found: dict[str, Era] = {}


@dataclass(frozen=True, slots=True)
class Seen:
    """What the last connect of one server found (for `mcp tools --json`)."""

    era: Era
    protocol_version: str
    detected: bool  # False when the configuration forced the era


_seen: dict[str, Seen] = {}


def setting(config: McpServerConfig, default: str) -> Setting:
    """The era setting of a server: its own `era` when set, else the registry's option."""
    value = getattr(config, "era", None) or default
    if value == "modern":
        return "modern"
    return "legacy" if value == "legacy" else "auto"


def key(config: McpServerConfig) -> str:
    """[MCP-MOD-03] the identity an era is cached under (never a secret in clear)."""
    if config.transport == "stdio":
        env = dumps(sorted((str(k), str(v)) for k, v in config.env.items()))
        digest = hashlib.sha256(env.encode("utf-8")).hexdigest()[:16]
        return "stdio:" + dumps([config.name, config.command, list(config.args), digest])
    parts = urlsplit(config.url or "")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = (parts.hostname or "").lower()
    return f"http:{parts.scheme}://{host}:{port}{parts.path or '/'}"


def cached(cache_key: str) -> Era | None:
    with _lock:
        return _found.get(cache_key)


def remember(server: str, cache_key: str, era: Era, version: str) -> None:
    """Keep `era` for `cache_key`; the first finding and every change are logged once."""
    with _lock:
        before = _found.get(cache_key)
        _found[cache_key] = era
    if before != era:
        log.info(
            "MCP server `%s` speaks the %s protocol era (version %s)%s",
            server, era, version, "" if before is None else f"; it spoke the {before} era before",
        )  # fmt: skip


def forget(cache_key: str) -> None:
    with _lock:
        _found.pop(cache_key, None)


def observe(cache_key: str, era: Era, version: str, *, detected: bool) -> None:
    """Record what a connect found, for diagnostics."""
    with _lock:
        _seen[cache_key] = Seen(era, version, detected)


def seen(config: McpServerConfig) -> Seen | None:
    """What the last connect of this server in this process found, or None."""
    with _lock:
        return _seen.get(key(config))


def clear() -> None:
    """Forget every era (tests)."""
    with _lock:
        _found.clear()
        _seen.clear()
