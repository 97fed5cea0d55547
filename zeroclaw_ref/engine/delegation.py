"""The `DelegatePort` of a running turn: child turns rebuilt through `resolve()` (policy.md §4.8).

Goals: the child's contract is the target's own (POL-DELEG-03), narrowed by the parent's caller
allow-list (POL-DELEG-11); it runs on a fresh transcript (POL-DELEG-05), its events stay out of
the parent's stream while its approvals use the parent's operator (POL-DELEG-09), and every run
leaves a lineage record (POL-DELEG-08). Any failure to build the child fails closed (POL-DELEG-04).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.clock import Clock, rfc3339
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.engine.events import Cancelled, Completed, TurnEvent
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import PathRequest, ResolveError, resolve
from zeroclaw_ref.tools.base import ToolResult

if TYPE_CHECKING:
    from zeroclaw_ref.engine.turn import TurnEngine

log = logging.getLogger(__name__)


class Delegation:
    """Implements `tools.base.DelegatePort` for one parent execution."""

    def __init__(self, parent: ResolvedAgentExecution, engine: TurnEngine, clock: Clock) -> None:
        self._parent = parent
        self._engine = engine
        self._clock = clock

    def delegate(
        self, target: str, prompt: str, context: str | None, call_id: str, cancel: CancelToken
    ) -> ToolResult:
        parent = self._parent
        limit = parent.knobs.max_delegation_depth
        if parent.lineage.depth >= limit:
            return ToolResult.fail(f"Delegation depth limit reached ({limit})")  # [POL-DELEG-02]
        try:
            request = PathRequest("delegate", parent=parent)
            child = resolve(parent.assembly.config, target, request, self._engine.ids)
        except (ResolveError, KeyError) as exc:
            return ToolResult.fail(f"Delegation to '{target}' failed closed: {exc}")
        message = f"{context}\n\n{prompt}" if context else prompt  # [POL-DELEG-05]
        started = rfc3339(self._clock.now())
        token = CancelToken(cancel)  # [POL-DELEG-09] the parent's cancel reaches the child
        try:
            outcome = self._engine.run_turn(child, [], message, _discard, token)
        finally:
            child.close()
        messages: list[JSONObject] = [{"role": "system", "content": child.io.system_prompt}]
        if isinstance(outcome, Completed):
            messages.extend(outcome.messages)
        else:
            messages.append({"role": "user", "content": message})
        success = isinstance(outcome, Completed)
        self._record(child, call_id, started, success, messages)
        if isinstance(outcome, Completed):
            return ToolResult.ok(
                outcome.text,
                {
                    "agent": target,
                    "run_id": child.lineage.run_id,
                    "parent_agent": parent.agent_alias,
                    "depth": child.lineage.depth,
                },
            )  # [POL-DELEG-07]
        error = "the turn was cancelled" if isinstance(outcome, Cancelled) else outcome.diagnostic
        return ToolResult.fail(f"Delegated agent '{target}' failed: {error}")

    def _record(
        self,
        child: ResolvedAgentExecution,
        call_id: str,
        started: str,
        success: bool,
        messages: list[JSONObject],
    ) -> None:
        """[POL-DELEG-06] [POL-DELEG-08] the lineage record of one child run."""
        lineage = child.lineage
        record = {
            "run_id": lineage.run_id,
            "executing_agent": lineage.executing_agent,
            "parent": {
                "agent": lineage.parent_agent,
                "run_id": lineage.parent_run_id,
                "tool_call_id": call_id,
            },
            "depth": lineage.depth,
            "surface": lineage.surface,
            "started_at": started,
            "finished_at": rfc3339(self._clock.now()),
            "outcome": "success" if success else "failure",
            "messages": messages,
        }
        folder = Path(child.assembly.config.data_dir) / "delegations"
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = folder / f"{lineage.run_id}.json"
            temp = folder / f".{lineage.run_id}.tmp"
            temp.write_text(json.dumps(record, ensure_ascii=False, indent=2), encoding="utf-8")
            temp.replace(path)
        except OSError as exc:
            log.warning("could not write delegation record %s: %s", lineage.run_id, exc)


def _discard(event: TurnEvent) -> None:
    """[POL-DELEG-09] the child's stream is not forwarded to the parent's client."""
