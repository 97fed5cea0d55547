"""Restoring a stored session: agent choice, history seeding and load replay (acp.md §8.4–§8.6).

Pure helpers over stored values; `AcpServer` runs them in the order of ACP-LOAD-02.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.jsontypes import JSON, JSONObject, loads
from zeroclaw_ref.engine.history import TRIM_REASON, trim
from zeroclaw_ref.wire import acp as wire

DELIVER_PREFIX = "attachment://deliver/"


def restore_alias(config: ConfigSnapshot, stored_alias: str, session_id: str) -> str:
    """[ACP-LOAD-04] the stored alias, else default_agent, else the only agent — each only
    when dispatchable; the stored row is never rewritten (ACP-LOAD-08).

    Raises:
        LookupError: with the `Failed to create agent: …` detail when nothing can run it.
    """
    agents = config.agents
    candidates = [stored_alias]
    default = (config.acp.default_agent or "").strip()
    if default:
        candidates.append(default)
    if len(agents) == 1:
        candidates.append(next(iter(agents)))
    for alias in candidates:
        agent = agents.get(alias)
        if agent is not None and agent.dispatchable:
            return alias
    raise LookupError(f"no dispatchable agent to restore session {session_id}")


@dataclass(frozen=True, slots=True)
class Seed:
    history: list[JSONObject]
    dropped_messages: int
    kept_turns: int


def seed_history(turn_messages: list[str], limit: int) -> Seed:
    """[ACP-LOAD-06] [ACP-RT-07] every stored turn's messages in order, system messages
    skipped, trimmed by whole turns to the runtime profile's limit."""
    messages: list[JSONObject] = []
    for text in turn_messages:
        value = loads(text)
        for message in value if isinstance(value, list) else []:
            if isinstance(message, dict) and message.get("role") != "system":
                messages.append(message)
    trimmed = trim(messages, limit)
    return Seed(list(trimmed.kept), trimmed.dropped, trimmed.kept_turns)


def trimmed_params(session_id: str, seed: Seed) -> JSONObject:
    """[ACP-UPD-15] the `_zeroclaw/history_trimmed` params of a seeding trim."""
    return {
        "sessionId": session_id,
        "droppedMessages": seed.dropped_messages,
        "keptTurns": seed.kept_turns,
        "reason": TRIM_REASON,
    }


def replay_updates(turn_updates: list[str], workspace: Path) -> Iterator[JSONObject]:
    """[ACP-LOAD-09..12] every logged update of every stored turn, in order, with delivered
    files re-read and re-verified before their bytes are sent again."""
    for text in turn_updates:
        value = loads(text)
        for update in value if isinstance(value, list) else []:
            if isinstance(update, dict):
                yield _reverified(update, workspace)


def _reverified(update: JSONObject, workspace: Path) -> JSONObject:
    if update.get("sessionUpdate") != wire.UPDATE_TOOL_CALL_UPDATE:
        return update
    content = update.get("content")
    items = content if isinstance(content, list) else []
    resource = next((r for r in (_resource_of(i) for i in items) if r is not None), None)
    if resource is None:
        return update
    from zeroclaw_ref.tools.deliver_file import verify_delivery

    uri = resource.get("uri")
    name = uri[len(DELIVER_PREFIX) :] if isinstance(uri, str) else ""
    data = None
    if isinstance(uri, str) and uri.startswith(DELIVER_PREFIX) and "/" not in name and name:
        data = verify_delivery({"uri": uri, "path": str(workspace / "uploads" / name)})
    if data is None:
        # [ACP-LOAD-11] changed or gone: only the text item, and status failed
        texts = [i for i in items if _resource_of(i) is None]
        return {**update, "status": wire.STATUS_FAILED, "content": texts}
    restored: list[JSON] = []
    for item in items:
        found = _resource_of(item)
        if found is None:
            restored.append(item)
        else:
            blob = base64.b64encode(data).decode("ascii")
            restored.append(
                {
                    "type": "content",
                    "content": {"type": "resource", "resource": {**found, "blob": blob}},
                }
            )
    return {**update, "content": restored}


def _resource_of(item: JSON) -> JSONObject | None:
    if not isinstance(item, dict):
        return None
    inner = item.get("content")
    if isinstance(inner, dict) and inner.get("type") == "resource":
        resource = inner.get("resource")
        return resource if isinstance(resource, dict) else None
    return None
