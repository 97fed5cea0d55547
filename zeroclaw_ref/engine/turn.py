"""The turn engine: model rounds, tool calls, approvals and cancellation (policy.md §6.5).

Goals: one engine for every construction path, which takes everything it uses from a minted
execution (POL-ENGINE-11) and reports progress only through events (acp.md Table 0-1).

Plan per round: build the request (system prompt + trimmed history, POL-ENGINE-10); drain the
provider through a `Pump`, checking the cancel token at every event (ACP-RT-04); with no tool
calls the round's text is the answer; otherwise ask every approval of the round in call order
first (POL-APPROVE-17), then run the allowed calls in order, each through the fixed pipeline of
POL-ENGINE-06. After `max_tool_iterations` tool rounds one last request without tools asks for
an answer (POL-ENGINE-07).

Caveat: a call still running when the turn is cancelled gets no `ToolFinished`; the front door
closes it (acp.md ACP-UPD-17), because its output is not a result the model will ever see.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass

from zeroclaw_ref.core.cancel import CancelToken, WaitCancelled
from zeroclaw_ref.core.clock import Clock, SystemClock
from zeroclaw_ref.core.ids import IdFactory
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.core.pump import Pump, PumpError
from zeroclaw_ref.engine import automemory
from zeroclaw_ref.engine.delegation import Delegation
from zeroclaw_ref.engine.events import (
    Cancelled,
    Completed,
    EventSink,
    Failed,
    FailureKind,
    PlanUpdated,
    TextDelta,
    ThoughtDelta,
    ToolCallStarted,
    ToolFinished,
    TurnOutcome,
)
from zeroclaw_ref.engine.execution import ResolvedAgentExecution, is_minted
from zeroclaw_ref.engine.exposure import TurnExposure
from zeroclaw_ref.engine.history import trim
from zeroclaw_ref.engine.images import attach_images
from zeroclaw_ref.policy.approvals import (
    DENIED_BY_USER,
    RUNTIME_FLAGS,
    Decision,
    Requirement,
    runtime_denial_text,
    summarize_arguments,
)
from zeroclaw_ref.providers.base import (
    InvalidCompletion,
    ModelRequest,
    ProviderEvent,
    TextChunk,
    ThoughtChunk,
    ToolCall,
    ToolSpec,
)
from zeroclaw_ref.tools.base import (
    ARTIFACT_KEY,
    PLAN_KEY,
    Tool,
    ToolContext,
    ToolResult,
    UserChannel,
)

log = logging.getLogger(__name__)

_MARKER = "[IMAGE:"

# [POL-APPROVE-12] tools whose `approved` argument belongs to the runtime
RUNTIME_APPROVED_TOOLS = frozenset({"shell", "cron_add"})

# [POL-ENGINE-07]
MAX_ITERATIONS_PROMPT = (
    "You have reached the maximum number of tool iterations. Please provide your best answer "
    "based on the work completed so far. Summarize what you accomplished and what remains to "
    "be done."
)


@dataclass(frozen=True, slots=True)
class _Round:
    text: str
    thoughts: str
    calls: tuple[ToolCall, ...]


class _Stop(Exception):
    """Ends the turn early with `outcome`."""

    def __init__(self, outcome: TurnOutcome) -> None:
        super().__init__()
        self.outcome = outcome


class TurnEngine:
    """Runs turns; stateless apart from the id factory and the clock it is given."""

    def __init__(self, ids: IdFactory, clock: Clock | None = None) -> None:
        self._ids = ids
        self._clock = clock or SystemClock()

    @property
    def ids(self) -> IdFactory:
        """The factory of every id its turns mint, the run ids of delegated children too."""
        return self._ids

    def run_turn(
        self,
        execution: ResolvedAgentExecution,
        history: list[JSONObject],
        user_message: str,
        events: EventSink,
        cancel: CancelToken,
    ) -> TurnOutcome:
        """Run one turn to its single outcome (ACP-RT-02).

        Raises:
            TypeError: `execution` was not minted by resolve() (POL-ENGINE-01).
            ValueError: `execution` is a listing (POL-ENGINE-02).
        """
        if not is_minted(execution):
            raise TypeError("turn engine requires a ResolvedAgentExecution minted by resolve()")
        if execution.path == "gateway-tools":
            raise ValueError("listing executions cannot run turns")
        # [MCP-DISC-18] stale MCP lists are refreshed before this turn's specs exist, so the
        # tool set never changes in the middle of a turn
        execution.io.tools.refresh_mcp()
        turn = _Turn(self, execution, events, cancel)
        knobs = execution.knobs
        turn.exposure = TurnExposure.for_turn(
            execution.io.tools, knobs.excluded_tools, knobs.tool_filter_groups, user_message
        )
        stored: JSONObject = {"role": "user", "content": user_message}
        block = automemory.recall_block(execution, user_message)  # [POL-MEM-03]
        if block:
            # The model sees the recalled context; the conversation keeps the bare message.
            turn.model_view[id(stored)] = {"role": "user", "content": block + user_message}
        try:
            outcome = turn.run(history, [stored])
        except _Stop as stop:
            outcome = stop.outcome
        if isinstance(outcome, Completed):
            automemory.remember(execution, history, user_message)
        return outcome


class _Turn:
    def __init__(
        self,
        engine: TurnEngine,
        execution: ResolvedAgentExecution,
        events: EventSink,
        cancel: CancelToken,
    ) -> None:
        self.engine = engine
        self.ids = engine._ids
        self.ex = execution
        self.emit = events
        self.cancel = cancel
        self.model_view: dict[int, JSONObject] = {}
        self.delegation = Delegation(execution, engine, engine._clock)
        self.exposure = TurnExposure(
            execution.io.tools, execution.knobs.excluded_tools, frozenset()
        )
        self.attachments: dict[str, list[JSON]] = {}  # call id -> declared images

    def run(self, history: list[JSONObject], added: list[JSONObject]) -> TurnOutcome:
        limit = self.ex.knobs.max_tool_iterations
        for _ in range(limit):
            round_ = self._model_round(history + added, self._specs())
            if not round_.calls:
                return self._answer(round_, added)
            added.append(self._assistant_message(round_))
            added.extend(self._run_calls(round_.calls))
        # [POL-ENGINE-07] no more tools: one last request asks for the best answer.
        # Design: the nudge is sent to the model but not kept in the stored history.
        nudge: JSONObject = {"role": "user", "content": MAX_ITERATIONS_PROMPT}
        final = self._model_round([*history, *added, nudge], ())
        if not final.text.strip():
            return Failed(FailureKind.OTHER, f"Agent exceeded maximum tool iterations ({limit})")
        return self._answer(_Round(final.text, final.thoughts, ()), added)

    def _answer(self, round_: _Round, added: list[JSONObject]) -> TurnOutcome:
        if not round_.text.strip():
            # acp.md Table 4-3, first row: nothing to answer with and nothing to do.
            return Failed(FailureKind.INVALID_COMPLETION, "empty completion")
        added.append(self._assistant_message(round_))
        return Completed(round_.text, tuple(added))

    # --- one model request -------------------------------------------------------------

    def _specs(self) -> tuple[ToolSpec, ...]:
        return self.exposure.specs()  # [POL-ENGINE-03]

    def _model_round(self, conversation: list[JSONObject], specs: tuple[ToolSpec, ...]) -> _Round:
        trimmed = trim(conversation, self.ex.knobs.max_history_messages)  # [POL-ENGINE-10]
        system: JSONObject = {"role": "system", "content": self.ex.io.system_prompt}
        view = self.model_view
        kept = [view.get(id(m), m) for m in trimmed.kept] if view else list(trimmed.kept)
        # [POL-ENGINE-12] image parts are rebuilt before each request and never stored
        kept = attach_images(kept, self.ex.security.workspace_dir)
        request = ModelRequest(
            model=self.ex.model.model,
            temperature=self.ex.model.temperature,
            messages=(system, *kept),
            tools=specs,
        )
        provider = self.ex.model.provider
        text: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCall] = []

        def source() -> Iterator[ProviderEvent]:
            yield from provider.stream(request)

        pump: Pump[ProviderEvent] = Pump(
            source(), self.cancel, request.stop, inline=not provider.blocking
        )
        try:
            with closing(pump.items()) as items:
                for item in items:
                    # [ACP-RT-04] the cancel is checked at every streamed event.
                    if isinstance(item, WaitCancelled) or self.cancel.is_set():
                        raise _Stop(Cancelled())
                    if isinstance(item, TextChunk):
                        text.append(item.text)
                        self.emit(TextDelta(item.text))
                    elif isinstance(item, ThoughtChunk):
                        thoughts.append(item.text)
                        self.emit(ThoughtDelta(item.text))
                    elif isinstance(item, ToolCall):
                        calls.append(item)
        except PumpError as exc:
            raise _Stop(self._provider_failure(exc.__cause__)) from exc
        if self.cancel.is_set():
            raise _Stop(Cancelled())
        # [ACP-RT-03] provider ids when present, fresh UUIDs otherwise — assigned here so that
        # the stored assistant message and its tool messages carry the same ids.
        identified = tuple(
            ToolCall(c.id or self.ids.new("tool-call"), c.name, c.arguments) for c in calls
        )
        return _Round("".join(text), "".join(thoughts), identified)

    def _provider_failure(self, cause: BaseException | None) -> TurnOutcome:
        if self.cancel.is_set():
            return Cancelled()  # [ACP-PROMPT-29] a cancel racing a failure wins
        if isinstance(cause, InvalidCompletion):
            return Failed(FailureKind.INVALID_COMPLETION, str(cause))
        if isinstance(cause, Exception) and type(cause).__module__.startswith("zeroclaw_ref"):
            return Failed(FailureKind.OTHER, str(cause))
        log.error("provider raised unexpectedly: %r", cause)
        return Failed(FailureKind.PANIC, str(cause))

    @staticmethod
    def _assistant_message(round_: _Round) -> JSONObject:
        message: JSONObject = {"role": "assistant", "content": round_.text}
        if round_.thoughts:
            message["reasoning"] = round_.thoughts
        if round_.calls:
            message["toolCalls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in round_.calls
            ]
        return message

    # --- tool calls --------------------------------------------------------------------

    def _run_calls(self, raw_calls: tuple[ToolCall, ...]) -> list[JSONObject]:
        calls = list(raw_calls)
        results: dict[int, ToolFinished] = {}
        runnable: list[tuple[int, ToolCall, bool]] = []
        # [POL-APPROVE-17] every approval of the round first, one at a time, in call order.
        for index, call in enumerate(calls):
            self._check_cancel()
            verdict = self._gate(call)
            if isinstance(verdict, ToolFinished):
                self.emit(ToolCallStarted(call.id or "", call.name, _shown(call)))
                self.emit(verdict)  # [ACP-UPD-20] refused calls show up at once
                results[index] = verdict
            else:
                runnable.append((index, call, verdict))
        for index, call, approved in runnable:
            self._check_cancel()
            results[index] = self._execute(call, approved)
        messages: list[JSONObject] = [
            {"role": "tool", "content": results[i].output, "toolCallId": results[i].id,
             "name": results[i].name}
            for i in range(len(calls))
        ]  # fmt: skip
        for message in messages:
            # [MCP-RESULT-19] [POL-ENGINE-12] declared images travel with their tool message
            declared = self.attachments.get(str(message["toolCallId"]))
            if declared:
                message["attachments"] = declared
        return messages

    def _check_cancel(self) -> None:
        if self.cancel.is_set():
            raise _Stop(Cancelled())  # [ACP-RT-04] between tool calls

    def _audit(self, tool: str, call: ToolCall, decision: str, by: str) -> None:
        """[POL-APPROVE-18] one line per approval decision, arguments summarised (secrets
        redacted, POL-APPROVE-16). Design: INFO, because ACP-TR-03 keeps stderr at WARN by
        default; the audit line appears as soon as the operator raises the level."""
        summary = summarize_arguments(_shown(call), RUNTIME_FLAGS)
        log.info(
            "approval: agent=%s tool=%s decision=%s by=%s args=%s",
            self.ex.agent_alias, tool, decision, by, summary,
        )  # fmt: skip

    def _gate(self, call: ToolCall) -> ToolFinished | bool:
        """Lookup, exclusion and approval (POL-ENGINE-04..06); a result when refused, else the
        runtime approval flag for the call."""
        call_id = call.id or ""
        name = call.name
        if name.strip().casefold() in {n.casefold() for n in self.ex.knobs.excluded_tools}:
            return self._refused(call, f"Error: Tool not available in this turn: {name}")
        if self.exposure.is_hidden(name):  # [MCP-TFG-05] hidden by tool_filter_groups
            return self._refused(call, f"Error: Tool not available in this turn: {name}")
        tool = self.exposure.lookup(name)  # [MCP-DEFER-16] activated tools, suffix included
        if tool is None:
            # A tool of a server that failed to connect: say why (scrubbed), not "unknown".
            failure = self.exposure.registry.mcp_connect_failure(name)
            text = f"Error: {failure}" if failure else f"Error: Unknown tool: {name}"
            return self._refused(call, text)
        # Approval is decided for the tool that would run, so a suffix call cannot slip past
        # an `always_ask` entry written for the prefixed name (POL-APPROVE-03).
        approval = self.ex.io.approval
        requirement = approval.requirement(tool.name)
        if requirement is not Requirement.PROMPT:
            return requirement is Requirement.APPROVED
        approver = approval.approver
        if approver is None:
            self._audit(tool.name, call, "denied", "runtime")
            return self._refused(call, runtime_denial_text(tool.name))  # [POL-APPROVE-07]
        answer = approver.approve(tool.name, _shown(call), self.cancel)
        if answer.decision is Decision.CANCELLED or self.cancel.is_set():
            raise _Stop(Cancelled())  # [ACP-PERM-13] no update for the unasked call
        if answer.decision is Decision.NO_DECISION:
            self._audit(tool.name, call, "denied", "runtime")
        else:
            self._audit(tool.name, call, answer.decision.value, "operator")
        if answer.decision is Decision.ALLOW_ALWAYS:
            approval.allow_always(tool.name)
            return True
        if answer.decision is Decision.ALLOW_ONCE:
            return True
        if answer.decision is Decision.REJECT:
            return ToolFinished(call_id, name, DENIED_BY_USER, False)
        if answer.decision is Decision.REPLACE:
            return ToolFinished(call_id, name, answer.replacement, True)
        return self._refused(call, runtime_denial_text(tool.name))

    @staticmethod
    def _refused(call: ToolCall, text: str) -> ToolFinished:
        return ToolFinished(call.id or "", call.name, text, False)

    def _execute(self, call: ToolCall, approved: bool) -> ToolFinished:
        tool = self.exposure.lookup(call.name)
        assert tool is not None  # checked by _gate
        self.emit(ToolCallStarted(call.id or "", call.name, _shown(call)))
        result, text = self._invoke(tool, call, approved)
        if self.cancel.is_set():
            raise _Stop(Cancelled())  # the front door closes the open call (ACP-UPD-17)
        text = truncate(text, self.ex.knobs.max_tool_result_chars)  # [POL-ENGINE-08]
        data = result.data or {}
        declared = data.get("attachments")  # mcp/adapters.py ATTACHMENTS_KEY
        if isinstance(declared, list) and declared:
            self.attachments[call.id or ""] = declared
        artifact = data.get(ARTIFACT_KEY)
        finished = ToolFinished(
            call.id or "",
            call.name,
            text,
            result.success,
            artifact if isinstance(artifact, dict) else None,
        )
        self.emit(finished)
        plan = data.get(PLAN_KEY)
        if result.success and isinstance(plan, list):
            # [POL-TODO-04] [ACP-UPD-22] the plan follows its tool's result
            self.emit(PlanUpdated(tuple(e for e in plan if isinstance(e, dict))))
        return finished

    def _invoke(self, tool: Tool, call: ToolCall, approved: bool) -> tuple[ToolResult, str]:
        """Read-only gate, then the tool itself (POL-ENGINE-06)."""
        if self._read_only_refuses(tool):
            refusal = f"Security policy: read-only mode, cannot perform '{call.name}'"
            return ToolResult.fail(refusal), f"Error: {refusal}"  # [POL-AUTO-06] [POL-AUTO-09]
        arguments = self.exposure.forward(tool, call.arguments)  # [POL-APPROVE-14]
        if call.name in RUNTIME_APPROVED_TOOLS and isinstance(arguments, dict):
            arguments = {**arguments, "approved": approved}  # [POL-APPROVE-12]
        approver = self.ex.io.approval.approver
        context = ToolContext(
            cancel=self.cancel,
            approved=approved,
            channel=approver if isinstance(approver, UserChannel) else None,
            interaction=self.ex.io.interaction,
            call_id=call.id or "",
            delegate=self.delegation,
        )
        try:
            result = tool.execute(arguments, context)
            return result, result.model_text()
        except Exception as exc:  # [POL-TOOL-03] a raising tool is reported, never fatal
            log.exception("tool %s raised", call.name)
            return ToolResult.fail(str(exc)), f"Error executing {call.name}: {exc}"

    def _read_only_refuses(self, tool: Tool) -> bool:
        """[POL-AUTO-06] act tools refuse at read_only; [POL-AUTO-07] MCP tools do too unless
        their exact name is auto-approved (the `*` wildcard does not count)."""
        if self.ex.security.level != "read_only":
            return False
        if "__" in tool.name:
            return tool.name not in self.ex.io.approval.auto_approve
        return tool.act


def _shown(call: ToolCall) -> JSON:
    """[ACP-UPD-06] the model's arguments without the runtime-owned `approved` flag."""
    arguments = call.arguments
    if call.name in RUNTIME_APPROVED_TOOLS and isinstance(arguments, dict):
        return {k: v for k, v in arguments.items() if k != "approved"}
    return arguments


def truncate(text: str, budget: int) -> str:
    """[POL-ENGINE-08] keep the first two thirds and the last third of the budget, moving
    either cut out of an `[IMAGE:…]` marker so that no marker is ever split."""
    if len(text) <= budget:
        return text
    head_end = budget * 2 // 3
    tail_start = len(text) - (budget - head_end)
    head_end = _outside_marker(text, head_end, keep_before=True)
    tail_start = _outside_marker(text, tail_start, keep_before=False)
    removed = tail_start - head_end
    return f"{text[:head_end]}\n\n[... {removed} characters truncated ...]\n\n{text[tail_start:]}"


def _outside_marker(text: str, cut: int, keep_before: bool) -> int:
    """Move `cut` before (head) or after (tail) an `[IMAGE:…]` marker that straddles it."""
    opened = text.rfind(_MARKER, 0, cut + len(_MARKER) - 1)
    if opened < 0 or opened >= cut:
        return cut
    closing = text.find("]", opened)
    if closing < cut and closing >= 0:
        return cut  # the marker ends before the cut
    if keep_before:
        return opened
    return len(text) if closing < 0 else closing + 1
