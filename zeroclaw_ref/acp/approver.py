"""Approvals over `session/request_permission` (acp.md §6.1–§6.3, policy.md POL-APPROVE-09).

The worker that needs a decision sends the outbound request and makes one blocking wait on its
reply slot, which wakes for the client's answer, the turn's cancel or the session timeout —
whichever comes first (ACP-PERM-12, ACP-PERM-13; DESIGN §7.5). The reader thread only delivers
answers; it never waits here.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path

from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.cancel import CANCELLED, CancelToken, Slot, WaitCancelled, WaitTimedOut
from zeroclaw_ref.core.ids import IdFactory
from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps
from zeroclaw_ref.core.limits import MAX_REPLACEMENT_BYTES
from zeroclaw_ref.policy.approvals import RUNTIME_FLAGS, Answer, Decision, summarize_arguments
from zeroclaw_ref.rpc.endpoint import Endpoint
from zeroclaw_ref.tools.base import ToolResult
from zeroclaw_ref.wire import acp as wire
from zeroclaw_ref.wire.jsonrpc import Response

from .project import EDIT_TOOLS, diff_content, raw_input, text_content, tool_kind

# acp.md §6.4 and §6.6: the texts of the ACP channel
ASK_NEEDS_CHOICES = (
    "Channel 'acp' requires `choices` for ask_user (free-form questions await ACP elicitation "
    "Phase 2)"
)  # [ACP-ASK-03]
ASK_DECLINED = (
    "Channel 'acp' did not complete the structured choice (user cancelled/declined, or the "
    "channel has no free-form fallback). Retry ask_user; free-form questions on this channel "
    "await ACP elicitation Phase 2."
)  # [ACP-ASK-06] Table 6-3
ASK_FAILED = "Failed to ask question on channel 'acp': "
ESCALATE_NO_WAIT = (
    "Channel 'acp' cannot receive a free-form reply, so `wait_for_response` is unsupported "
    "(awaits ACP elicitation Phase 2). Retry with `wait_for_response: false`."
)  # [ACP-ESC-02]
# [ACP-ESC-03] emoji and level per urgency
ESCALATION_PREFIX = {
    "low": "\u2139\ufe0f [LOW]",
    "medium": "\u26a0\ufe0f [MEDIUM]",
    "high": "\U0001f534 [HIGH]",
    "critical": "\U0001f6a8 [CRITICAL]",
}

log = logging.getLogger(__name__)

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def summarize(tool: str, arguments: JSON) -> str:
    """[ACP-PERM-09] Table 6-1: a shell command verbatim, otherwise the shared argument
    summary (POL-APPROVE-16) without the runtime's own `approved` flag."""
    if tool == "shell" and isinstance(arguments, dict):
        command = arguments.get("command")
        if isinstance(command, str):
            return command  # rule 1: verbatim, untruncated
    return summarize_arguments(arguments, skip=RUNTIME_FLAGS)


def sanitize_replacement(value: JSON) -> str:
    """[ACP-PERM-11] control characters (but \\n, \\r, \\t) removed, cut to 64 KiB of UTF-8."""
    text = _CONTROL.sub("", value) if isinstance(value, str) else ""
    encoded = text.encode("utf-8")
    if len(encoded) <= MAX_REPLACEMENT_BYTES:
        return text
    return encoded[:MAX_REPLACEMENT_BYTES].decode("utf-8", errors="ignore")


class AcpApprover:
    """The `Approver` of one ACP session (interaction mode `acp_backchannel`)."""

    def __init__(
        self,
        endpoint: Endpoint,
        session_id: str,
        ids: IdFactory,
        workspace: Path,
        config: ConfigSnapshot,
    ) -> None:
        self._endpoint = endpoint
        self._session_id = session_id
        self._ids = ids
        self._workspace = workspace
        self._timeout = float(config.acp.session_timeout_secs)
        self._send_message: Callable[[str], None] = lambda text: None

    def attach(self, send_message: Callable[[str], None]) -> None:
        """Connect the out-of-band message path of the session this channel belongs to."""
        self._send_message = send_message

    # --- UserChannel: ask_user and escalate_to_human over ACP (acp.md §6.4, §6.6) ---------

    def ask(
        self, question: str, choices: tuple[str, ...], timeout_secs: int, cancel: CancelToken
    ) -> ToolResult:
        """[ACP-ASK-03..07] a structured choice over `session/request_permission`."""
        if not choices:
            return ToolResult.fail(ASK_NEEDS_CHOICES)  # fails fast, nothing is sent
        options: list[JSON] = [
            {"optionId": f"choice-{i}", "name": choice, "kind": "allow_once"}
            for i, choice in enumerate(choices)
        ]
        if len(choices) >= 2:
            last = options[-1]
            assert isinstance(last, dict)
            last["kind"] = "reject_once"
        params: JSONObject = {
            "sessionId": self._session_id,
            "options": options,
            "toolCall": {
                "toolCallId": f"ask-user-{self._ids.new('ask-user')}",
                "title": question,
                "kind": wire.KIND_OTHER,
                "status": wire.STATUS_PENDING,
            },
        }
        timeout = min(timeout_secs, self._timeout)  # [ACP-ASK-05]
        reply = self._round_trip(params, timeout, cancel)
        if isinstance(reply, WaitCancelled):
            return ToolResult.fail(ASK_DECLINED)
        if isinstance(reply, WaitTimedOut):
            return ToolResult.fail(
                f"{ASK_FAILED}ACP request_permission timed out after {_seconds(timeout)}s"
            )
        return _choice_result(reply, choices)

    def escalate(
        self,
        summary: str,
        context: str | None,
        urgency: str,
        wait_for_response: bool,
        timeout_secs: int | None,
        cancel: CancelToken,
    ) -> ToolResult:
        """[ACP-ESC-02] [ACP-ESC-03] an out-of-band message; no reply can be awaited."""
        if wait_for_response:
            return ToolResult.fail(ESCALATE_NO_WAIT)
        lines = [f"{ESCALATION_PREFIX[urgency]} Agent Escalation", f"Summary: {summary}"]
        if context:
            lines.append(f"Context: {context}")
        lines += ["---", "Reply to this message to respond."]
        self._send_message("\n".join(lines))  # [ACP-UPD-24] between its tool_call and update
        return ToolResult.ok('{"channel":"acp","status":"escalated","urgency":"' + urgency + '"}')

    def _round_trip(
        self, params: JSONObject, timeout: float, cancel: CancelToken
    ) -> Response | WaitCancelled | WaitTimedOut:
        """One outbound permission request: wait for the answer, the cancel or the timeout."""
        outbound = self._endpoint.request(wire.METHOD_REQUEST_PERMISSION, params)
        # [ACP-PERM-13] a cancel resolves the pending request locally.
        unregister = cancel.add_callback(lambda: self._endpoint.abandon(outbound.id))
        try:
            reply = _wait(outbound.slot, timeout)
        finally:
            unregister()
        if isinstance(reply, WaitTimedOut):
            self._endpoint.abandon(outbound.id)  # [ACP-TR-26] a late answer is discarded
        if cancel.is_set():
            return CANCELLED
        return reply

    def request_params(self, tool: str, arguments: JSON) -> JSONObject:
        """[ACP-PERM-04..09] the outbound request's params."""
        options: list[JSON] = [
            {"optionId": wire.OPTION_ALLOW_ONCE, "name": "Allow once", "kind": "allow_once"},
            {"optionId": wire.OPTION_ALLOW_ALWAYS, "name": "Always allow", "kind": "allow_always"},
        ]
        if tool in EDIT_TOOLS:
            options.append(
                {
                    "optionId": wire.OPTION_REJECT_WITH_EDIT,
                    "name": "Reject with edit",
                    "kind": "reject_once",
                }
            )
        options.append(
            {"optionId": wire.OPTION_REJECT_ONCE, "name": "Reject", "kind": "reject_once"}
        )
        tool_call: JSONObject = {
            "toolCallId": f"approval-{self._ids.new('approval')}",
            "title": f"Approve {tool}?",
            "kind": tool_kind(tool),
            "status": wire.STATUS_PENDING,
        }
        diff = diff_content(tool, arguments, self._workspace)
        if diff is not None:
            tool_call["rawInput"] = raw_input(tool, arguments)  # [ACP-PERM-08]
            tool_call["content"] = diff
            edit_key = "new_string" if tool == "file_edit" else "content"
            proposed = arguments.get(edit_key) if isinstance(arguments, dict) else None
            if isinstance(proposed, str):
                tool_call["proposedEdit"] = proposed
        else:
            summary = summarize(tool, arguments)
            tool_call["rawInput"] = {"tool": tool, "summary": summary}  # [ACP-PERM-07]
            tool_call["content"] = [text_content(summary)]
        return {"sessionId": self._session_id, "options": options, "toolCall": tool_call}

    def approve(self, tool: str, arguments: JSON, cancel: CancelToken) -> Answer:
        """[ACP-PERM-04..14] ask for one call; wait once for answer, cancel or timeout."""
        reply = self._round_trip(self.request_params(tool, arguments), self._timeout, cancel)
        if cancel.is_set():
            return Answer(Decision.CANCELLED)  # [ACP-PERM-13]
        if isinstance(reply, WaitTimedOut | WaitCancelled):
            return Answer(Decision.NO_DECISION)  # [ACP-PERM-12], or shutdown (ACP-TR-35)
        return map_answer(tool, reply)


def _wait(slot: Slot[Response], timeout: float) -> Response | WaitCancelled | WaitTimedOut:
    return slot.get(timeout)


def _seconds(timeout: float) -> str:
    return str(int(timeout)) if timeout == int(timeout) else str(timeout)


def _choice_result(reply: Response, choices: tuple[str, ...]) -> ToolResult:
    """[ACP-ASK-06] acp.md Table 6-3."""
    if reply.error is not None:
        detail = f"{reply.error.message} ({reply.error.code})"
        return ToolResult.fail(f"{ASK_FAILED}ACP request_permission failed: {detail}")
    result = reply.result
    outcome = result.get("outcome") if isinstance(result, dict) else None
    kind = outcome.get("outcome") if isinstance(outcome, dict) else outcome
    if kind == wire.OUTCOME_CANCELLED:
        return ToolResult.fail(ASK_DECLINED)
    if kind != wire.OUTCOME_SELECTED or not isinstance(outcome, dict):
        shown = kind if isinstance(kind, str) else dumps(kind)
        return ToolResult.fail(f"{ASK_FAILED}ACP returned unexpected outcome: {shown}")
    option = outcome.get("optionId")
    for index, choice in enumerate(choices):
        if option == f"choice-{index}":
            return ToolResult.ok(choice)
    shown_option = option if isinstance(option, str) else dumps(option)
    return ToolResult.fail(f"{ASK_FAILED}ACP returned unknown optionId: {shown_option}")


def map_answer(tool: str, reply: Response) -> Answer:
    """[ACP-PERM-10] [ACP-PERM-14] acp.md Table 6-2."""
    result = reply.result if reply.error is None else None
    outcome = result.get("outcome") if isinstance(result, dict) else None
    if not isinstance(outcome, dict) or outcome.get("outcome") != wire.OUTCOME_SELECTED:
        return Answer(Decision.NO_DECISION)  # cancelled, malformed, error reply
    option = outcome.get("optionId")
    if option == wire.OPTION_ALLOW_ONCE:
        return Answer(Decision.ALLOW_ONCE)
    if option == wire.OPTION_ALLOW_ALWAYS:
        return Answer(Decision.ALLOW_ALWAYS)
    if option in (wire.OPTION_REJECT_ONCE, wire.OPTION_REJECT_ALWAYS):
        return Answer(Decision.REJECT)
    if option == wire.OPTION_REJECT_WITH_EDIT and tool in EDIT_TOOLS:
        return Answer(Decision.REPLACE, sanitize_replacement(outcome.get("replacementContent")))
    return Answer(Decision.NO_DECISION)
