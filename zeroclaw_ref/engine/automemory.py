"""Automatic memory outside ACP: recall before a turn, save after it (policy.md POL-MEM-03).

On the `acp` surface neither happens and the store is never opened (POL-MEM-02, acp.md §11);
with `auto_memory = false` memory changes only through the memory tools.
"""

from __future__ import annotations

import logging

from zeroclaw_ref.core.clock import SystemClock, rfc3339
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.store.db import StoreError

log = logging.getLogger(__name__)

RECALL_LIMIT = 3  # [POL-MEM-03]


def active(execution: ResolvedAgentExecution) -> bool:
    """Automatic memory applies off the ACP surface, with a store, when the profile wants it."""
    return (
        execution.memory.enabled
        and execution.memory.store_path is not None
        and execution.knobs.auto_memory
        and execution.lineage.surface != "acp"
    )


def recall_block(execution: ResolvedAgentExecution, user_message: str) -> str:
    """The `[Memory context]` block to put before the user message, or "" when none is found."""
    if not active(execution):
        return ""
    from zeroclaw_ref.store.memory import MemoryStore

    assert execution.memory.store_path is not None
    try:
        store = MemoryStore.open(execution.memory.store_path)
        try:
            entries = store.recall(user_message, RECALL_LIMIT)
        finally:
            store.close()
    except StoreError as exc:
        log.warning("memory recall failed for %s: %s", execution.agent_alias, exc)
        return ""
    if not entries:
        return ""
    lines = "".join(f"- {e.key}: {e.content}\n" for e in entries)
    return f"[Memory context]\n{lines}\n"


def remember(
    execution: ResolvedAgentExecution, history: list[JSONObject], user_message: str
) -> None:
    """Save the user message of a completed turn as `conversation:<id>:<n>`."""
    if not active(execution):
        return
    from zeroclaw_ref.store.memory import MemoryStore

    assert execution.memory.store_path is not None
    turn = 1 + sum(1 for m in history if m.get("role") == "user")
    key = f"conversation:{execution.lineage.run_id}:{turn}"
    try:
        store = MemoryStore.open(execution.memory.store_path)
        try:
            store.store(
                key,
                user_message,
                "conversation",
                execution.lineage.run_id,
                rfc3339(SystemClock().now()),
            )
        finally:
            store.close()
    except StoreError as exc:
        log.warning("memory save failed for %s: %s", execution.agent_alias, exc)
