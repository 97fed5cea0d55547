"""The turn engine's contract (policy.md §6.5), driven by the real scripted provider."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.internals import model_requests, request_messages
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.engine import resolve as resolve_module
from zeroclaw_ref.engine.events import (
    Cancelled,
    Completed,
    Failed,
    FailureKind,
    ToolCallStarted,
    ToolFinished,
    TurnEvent,
    TurnOutcome,
)
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.history import trim
from zeroclaw_ref.engine.resolve import PathRequest, resolve
from zeroclaw_ref.engine.turn import MAX_ITERATIONS_PROMPT, TurnEngine, truncate
from zeroclaw_ref.policy.approvals import Answer, Decision
from zeroclaw_ref.tools.base import ToolContext, ToolResult


@dataclass
class FakeTool:
    name: str
    output: str = "ran"
    raises: bool = False
    calls: list[tuple[JSON, bool]] = field(default_factory=list)
    description: str = "a test tool"
    act: bool = True
    parameters: JSONObject = field(default_factory=lambda: {"type": "object"})

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        self.calls.append((arguments, context.approved))
        if self.raises:
            raise RuntimeError("boom")
        return ToolResult.ok(self.output)


@dataclass
class FakeApprover:
    decisions: list[Decision]
    asked: list[str] = field(default_factory=list)

    def approve(self, tool: str, arguments: JSON, cancel: CancelToken) -> Answer:
        self.asked.append(tool)
        decision = self.decisions.pop(0)
        if decision is Decision.CANCELLED:
            cancel.fire()
        return Answer(decision, "replaced text")


def _setup(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    turns: Sequence[Mapping[str, object]],
    tools: Sequence[FakeTool],
    profile: str = "",
    runtime: str = "",
) -> Path:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "model.json").write_text(json.dumps({"turns": turns}))
    (cfg / "config.toml").write_text(
        f"""
[providers.s]
kind = "scripted"
script = "model.json"
[risk_profiles.p]
{profile}
[runtime_profiles.r]
{runtime}
[agents.a]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
"""
    )
    monkeypatch.setattr(resolve_module, "build_universe", lambda s, d: tuple(tools))
    return cfg


def _run(
    cfg: Path, approver: FakeApprover | None, path: str = "acp", message: str = "go"
) -> tuple[TurnOutcome, list[TurnEvent], ResolvedAgentExecution]:
    config = load_config(cfg, cfg / "data", {})
    request = (
        PathRequest("acp", approver=approver, session_workspace=cfg)
        if path == "acp"
        else PathRequest(path)
    )
    execution = resolve(config, "a", request)
    events: list[TurnEvent] = []
    outcome = TurnEngine(SequentialIds()).run_turn(
        execution, [], message, events.append, CancelToken()
    )
    return outcome, events, execution


@pytest.mark.req("POL-APPROVE-12", "ACP-UPD-06")
def test_a_model_supplied_approved_flag_is_overwritten_and_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = FakeTool("shell")
    call = _call("shell", "c1", command="ls", approved=True)
    cfg = _setup(tmp_path, monkeypatch, [{"tool_calls": [call]}, {"chunks": ["k"]}], [tool])
    _, events, _ = _run(cfg, FakeApprover([Decision.REJECT]))
    assert tool.calls == []
    assert events[0] == ToolCallStarted("c1", "shell", {"command": "ls"})


@pytest.mark.req("POL-AUTO-06", "POL-AUTO-09", "POL-AUTO-05")
def test_read_only_refuses_act_tools_after_approval_and_runs_read_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    act, read = FakeTool("shell"), FakeTool("file_read", act=False)
    calls = [_call("shell", "c1"), _call("file_read", "c2")]
    cfg = _setup(
        tmp_path,
        monkeypatch,
        [{"tool_calls": calls}, {"chunks": ["k"]}],
        [act, read],
        profile='level = "read_only"',
    )
    approver = FakeApprover([])
    _, events, _ = _run(cfg, approver)
    assert approver.asked == [] and act.calls == [] and len(read.calls) == 1
    texts = [e.output for e in events if isinstance(e, ToolFinished)]
    assert texts == ["Error: Security policy: read-only mode, cannot perform 'shell'", "ran"]


def _call(name: str, call_id: str, **arguments: JSON) -> JSONObject:
    return {"id": call_id, "name": name, "arguments": dict(arguments)}


@pytest.mark.req("POL-ENGINE-05", "ACP-UPD-09")
def test_an_unknown_tool_is_reported_and_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _setup(
        tmp_path, monkeypatch, [{"tool_calls": [_call("ghost", "c1")]}, {"chunks": ["ok"]}], []
    )
    outcome, events, _ = _run(cfg, FakeApprover([]))
    assert events[0] == ToolCallStarted("c1", "ghost", {})
    assert events[1] == ToolFinished("c1", "ghost", "Error: Unknown tool: ghost", False)
    assert isinstance(outcome, Completed) and outcome.text == "ok"
    assert [m["role"] for m in outcome.messages] == ["user", "assistant", "tool", "assistant"]


@pytest.mark.req("POL-ENGINE-04", "POL-RESOLVE-13")
def test_an_excluded_tool_never_runs_even_when_called_directly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = FakeTool("shell")
    cfg = _setup(
        tmp_path, monkeypatch,
        [{"tool_calls": [_call(" SHELL ", "c1")]}, {"chunks": ["ok"]}],
        [tool], profile='level = "full"\nexcluded_tools = ["shell"]',
    )  # fmt: skip
    _, events, execution = _run(cfg, FakeApprover([]))
    assert tool.calls == [] and "shell" not in execution.io.tools.names
    assert events[1] == ToolFinished(
        "c1", " SHELL ", "Error: Tool not available in this turn:  SHELL ", False
    )


APPROVALS = [
    (Decision.ALLOW_ONCE, "ran", True),
    (Decision.ALLOW_ALWAYS, "ran", True),
    (Decision.REJECT, "Denied by user.", False),
    (Decision.REPLACE, "replaced text", False),
    (
        Decision.NO_DECISION,
        "Tool call not executed: 'shell' requires approval and no operator decision was "
        "available, so the runtime denied it by policy. This was not a user's decision.",
        False,
    ),
]


@pytest.mark.req("POL-APPROVE-10", "ACP-UPD-20", "POL-APPROVE-12")
@pytest.mark.parametrize(("decision", "text", "runs"), APPROVALS)
def test_each_operator_decision_has_its_effect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decision: Decision, text: str, runs: bool
) -> None:
    tool = FakeTool("shell")
    cfg = _setup(
        tmp_path,
        monkeypatch,
        [{"tool_calls": [_call("shell", "c1", command="ls")]}, {"chunks": ["k"]}],
        [tool],
    )
    approver = FakeApprover([decision])
    outcome, events, execution = _run(cfg, approver)
    assert approver.asked == ["shell"]
    assert [e.output for e in events if isinstance(e, ToolFinished)] == [text]
    # [POL-APPROVE-12] the runtime owns `approved`: true once allowed to run
    assert tool.calls == ([({"command": "ls", "approved": True}, True)] if runs else [])
    allow = execution.io.approval.session_allowlist
    assert allow == (("shell",) if decision is Decision.ALLOW_ALWAYS else ())
    assert isinstance(outcome, Completed)


@pytest.mark.req("ACP-PERM-13")
def test_a_cancel_while_asking_ends_the_turn_with_no_update_for_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = FakeTool("shell")
    cfg = _setup(tmp_path, monkeypatch, [{"tool_calls": [_call("shell", "c1")]}], [tool])
    outcome, events, _ = _run(cfg, FakeApprover([Decision.CANCELLED]))
    assert isinstance(outcome, Cancelled) and events == [] and tool.calls == []


@pytest.mark.req("POL-APPROVE-17", "ACP-PERM-03")
def test_every_approval_of_a_round_is_asked_before_any_call_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = FakeTool("shell"), FakeTool("file_write")
    calls = [_call("shell", "c1"), _call("file_write", "c2")]
    cfg = _setup(tmp_path, monkeypatch, [{"tool_calls": calls}, {"chunks": ["k"]}], [a, b])
    approver = FakeApprover([Decision.ALLOW_ONCE, Decision.REJECT])
    outcome, events, _ = _run(cfg, approver)
    kinds = [
        (type(e).__name__, e.id) for e in events if isinstance(e, ToolCallStarted | ToolFinished)
    ]
    # the rejected second call shows at once; the approved first runs after every approval
    assert kinds == [
        ("ToolCallStarted", "c2"), ("ToolFinished", "c2"),
        ("ToolCallStarted", "c1"), ("ToolFinished", "c1"),
    ]  # fmt: skip
    assert isinstance(outcome, Completed)
    tool_messages = [m for m in outcome.messages if m["role"] == "tool"]
    assert [m["toolCallId"] for m in tool_messages] == ["c1", "c2"]  # history keeps call order


@pytest.mark.req("POL-APPROVE-07")
def test_without_an_operator_a_prompt_is_a_runtime_denial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = FakeTool("shell")
    cfg = _setup(
        tmp_path, monkeypatch, [{"tool_calls": [_call("shell", "c1")]}, {"chunks": ["k"]}], [tool]
    )
    _, events, _ = _run(cfg, None, path="cron")
    assert tool.calls == []
    assert isinstance(events[1], ToolFinished)
    assert "This was not a user's decision." in events[1].output


AUDITS = [
    (Decision.ALLOW_ONCE, "acp", "decision=allow_once by=operator"),
    (Decision.REJECT, "acp", "decision=reject by=operator"),
    (Decision.NO_DECISION, "acp", "decision=denied by=runtime"),
    (None, "cron", "decision=denied by=runtime"),  # no operator at all
]


@pytest.mark.req("POL-APPROVE-18", "POL-APPROVE-16")
@pytest.mark.parametrize(("decision", "path", "expected"), AUDITS)
def test_every_approval_decision_is_one_audit_line_without_secrets(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    decision: Decision,
    path: str,
    expected: str,
) -> None:
    tool = FakeTool("shell")
    call = _call("shell", "c1", command="ls", api_token="s3cr3t-value", approved=True)
    cfg = _setup(tmp_path, monkeypatch, [{"tool_calls": [call]}, {"chunks": ["k"]}], [tool])
    approver = None if decision is None else FakeApprover([decision])
    with caplog.at_level(logging.INFO, logger="zeroclaw_ref.engine.turn"):
        _run(cfg, approver, path=path)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("approval:")]
    assert lines == [
        f"approval: agent=a tool=shell {expected} args=api_token: [redacted], command: ls"
    ]
    assert "s3cr3t-value" not in caplog.text


@pytest.mark.req("POL-APPROVE-01", "POL-APPROVE-04")
def test_auto_approved_tools_run_without_asking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = FakeTool("todo_write")
    cfg = _setup(
        tmp_path,
        monkeypatch,
        [{"tool_calls": [_call("todo_write", "c1")]}, {"chunks": ["k"]}],
        [tool],
        profile="auto_approve = []",
    )
    approver = FakeApprover([])
    _run(cfg, approver)
    assert approver.asked == [] and tool.calls == [({}, True)]


@pytest.mark.req("POL-TOOL-03")
def test_a_raising_tool_is_reported_not_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = FakeTool("todo_write", raises=True)
    cfg = _setup(
        tmp_path,
        monkeypatch,
        [{"tool_calls": [_call("todo_write", "c1")]}, {"chunks": ["k"]}],
        [tool],
    )
    outcome, events, _ = _run(cfg, FakeApprover([]))
    assert isinstance(events[1], ToolFinished)
    assert events[1].output == "Error executing todo_write: boom"
    assert isinstance(outcome, Completed)


@pytest.mark.req("POL-ENGINE-07")
def test_after_the_iteration_limit_one_last_request_has_no_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = FakeTool("todo_write")
    turns: list[JSONObject] = [{"tool_calls": [_call("todo_write", "c1")]}, {"chunks": ["summary"]}]
    cfg = _setup(tmp_path, monkeypatch, turns, [tool], runtime="max_tool_iterations = 1")
    outcome, _, execution = _run(cfg, FakeApprover([]))
    assert isinstance(outcome, Completed) and outcome.text == "summary"
    last = model_requests(execution)[-1]
    assert last["tools"] == [] and request_messages(last)[-1] == {
        "role": "user",
        "content": MAX_ITERATIONS_PROMPT,
    }


def test_an_empty_answer_after_the_limit_fails_the_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns: list[JSONObject] = [{"tool_calls": [_call("todo_write", "c1")]}, {"chunks": []}]
    cfg = _setup(
        tmp_path, monkeypatch, turns, [FakeTool("todo_write")], runtime="max_tool_iterations = 1"
    )
    outcome, _, _ = _run(cfg, FakeApprover([]))
    assert outcome == Failed(FailureKind.OTHER, "Agent exceeded maximum tool iterations (1)")


@pytest.mark.req("ACP-PROMPT-31")
def test_provider_failures_and_empty_completions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _setup(tmp_path, monkeypatch, [{"error": "rate limited"}], [])
    outcome, _, _ = _run(cfg, FakeApprover([]))
    assert outcome == Failed(FailureKind.OTHER, "rate limited")
    (tmp_path / "x").mkdir()
    cfg2 = _setup(tmp_path / "x", monkeypatch, [{}], [])
    outcome, _, _ = _run(cfg2, FakeApprover([]))
    assert isinstance(outcome, Failed) and outcome.kind is FailureKind.INVALID_COMPLETION


@pytest.mark.req("POL-ENGINE-02")
def test_a_listing_execution_cannot_run_a_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _setup(tmp_path, monkeypatch, [], [])
    with pytest.raises(ValueError, match="listing executions cannot run turns"):
        _run(cfg, None, path="gateway-tools")


@pytest.mark.req("POL-ENGINE-08")
@pytest.mark.parametrize(
    ("text", "budget", "expected"),
    [
        ("abcdefghij", 10, "abcdefghij"),
        ("abcdefghijkl", 9, "abcdef\n\n[... 3 characters truncated ...]\n\njkl"),
        (
            "ab[IMAGE:/u/x.png]cdefghijklmnopqrstuvwxyz",
            12,
            "ab\n\n[... 36 characters truncated ...]\n\nwxyz",
        ),
        (
            "abcdefghijklmnopqrstuv[IMAGE:/u/x]yz",
            9,
            "abcdef\n\n[... 28 characters truncated ...]\n\nyz",
        ),
    ],
)
def test_truncation_keeps_two_thirds_head_and_one_third_tail(
    text: str, budget: int, expected: str
) -> None:
    assert truncate(text, budget) == expected


@pytest.mark.req("POL-ENGINE-10")
def test_history_is_trimmed_only_at_user_turn_boundaries() -> None:
    msgs: list[JSONObject] = [
        {"role": "user", "content": "1"}, {"role": "assistant", "content": "a"},
        {"role": "user", "content": "2"}, {"role": "assistant", "content": "b", "toolCalls": []},
        {"role": "tool", "content": "t"}, {"role": "assistant", "content": "c"},
        {"role": "user", "content": "3"},
    ]  # fmt: skip
    assert trim(msgs, 10).dropped == 0
    five = trim(msgs, 5)
    assert five.kept[0]["content"] == "2" and five.dropped == 2 and five.kept_turns == 2
    one = trim(msgs, 1)
    assert one.kept == (msgs[-1],) and one.kept_turns == 1
    assert trim(msgs, 0).kept == (msgs[-1],)  # the current turn is never cut


@pytest.mark.req("POL-ENGINE-09")
def test_parallel_tools_still_asks_first_and_keeps_call_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log: list[str] = []

    class LoggingTool(FakeTool):
        def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
            log.append(f"run {self.name}")
            return super().execute(arguments, context)

    class LoggingApprover(FakeApprover):
        def approve(self, tool: str, arguments: JSON, cancel: CancelToken) -> Answer:
            log.append(f"ask {tool}")
            return super().approve(tool, arguments, cancel)

    tools = [LoggingTool("shell", "s"), LoggingTool("todo_write", "t"), LoggingTool("file_write")]
    calls = [_call("shell", "c1"), _call("todo_write", "c2"), _call("file_write", "c3")]
    cfg = _setup(
        tmp_path, monkeypatch, [{"tool_calls": calls}, {"chunks": ["k"]}], tools,
        runtime="parallel_tools = true",
    )  # fmt: skip
    outcome, _, execution = _run(cfg, LoggingApprover([Decision.ALLOW_ONCE, Decision.ALLOW_ONCE]))
    assert execution.knobs.parallel_tools
    assert log[:2] == ["ask shell", "ask file_write"] and sorted(log[2:]) == [
        "run file_write", "run shell", "run todo_write",
    ]  # fmt: skip
    assert isinstance(outcome, Completed)
    tool_messages = [m for m in outcome.messages if m["role"] == "tool"]
    assert [m["toolCallId"] for m in tool_messages] == ["c1", "c2", "c3"]


@pytest.mark.req("POL-ENGINE-11")
def test_the_turn_engine_builds_nothing_itself() -> None:
    import ast

    from zeroclaw_ref.engine import turn as turn_module

    tree = ast.parse(Path(turn_module.__file__).read_text(encoding="utf-8"))
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not {m for m in modules if m and m.startswith("zeroclaw_ref.config")}
    assert "zeroclaw_ref.tools.catalogue" not in modules
    forbidden = {"ApprovalManager", "load_config", "build_universe", "assemble", "resolve"}
    assert not names & forbidden
