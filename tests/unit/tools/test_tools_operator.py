"""ask_user, escalate_to_human and todo_write: argument checks and the mode `none`
(policy.md §4.5, §4.6)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.tools.base import PLAN_KEY, ToolContext, ToolResult
from zeroclaw_ref.tools.catalogue import CATALOGUE_ORDER
from zeroclaw_ref.tools.operator import AskUserTool, EscalateTool
from zeroclaw_ref.tools.todo import TodoWriteTool


@dataclass
class Channel:
    asked: list[tuple[str, tuple[str, ...], int]] = field(default_factory=list)
    escalated: list[tuple[object, ...]] = field(default_factory=list)

    def ask(
        self, question: str, choices: tuple[str, ...], timeout_secs: int, cancel: CancelToken
    ) -> ToolResult:
        self.asked.append((question, choices, timeout_secs))
        return ToolResult.ok(choices[0] if choices else "")

    def escalate(
        self,
        summary: str,
        context: str | None,
        urgency: str,
        wait: bool,
        timeout: int | None,
        cancel: CancelToken,
    ) -> ToolResult:
        self.escalated.append((summary, context, urgency, wait, timeout))
        return ToolResult.ok("sent")


def _ctx(channel: Channel | None) -> ToolContext:
    return ToolContext(
        cancel=CancelToken(), channel=channel, interaction="acp_backchannel" if channel else "none"
    )


@pytest.mark.req("POL-ASK-01", "ACP-ASK-01", "ACP-ASK-02")
@pytest.mark.parametrize(
    ("arguments", "asked"),
    [
        ({"question": "  Pick? ", "choices": [" a ", "", 3, "b"]}, ("Pick?", ("a", "b"), 300)),
        ({"question": "Q", "timeout_secs": 5}, ("Q", (), 5)),
        ({"question": "Q", "timeout_secs": -1}, ("Q", (), 300)),
        ({"question": "Q", "timeout_secs": True}, ("Q", (), 300)),
    ],
)
def test_ask_user_trims_its_arguments_before_the_channel_sees_them(
    arguments: JSON, asked: tuple[object, ...]
) -> None:
    channel = Channel()
    AskUserTool().execute(arguments, _ctx(channel))
    assert channel.asked == [asked]


@pytest.mark.req("POL-ASK-01", "POL-TOOL-04")
@pytest.mark.parametrize("arguments", [{}, {"question": "  "}, {"question": 5}, "text"])
def test_ask_user_without_a_question_fails(arguments: JSON) -> None:
    result = AskUserTool().execute(arguments, _ctx(Channel()))
    assert result.model_text() == "Error: Missing 'question' parameter"


@pytest.mark.req("POL-ASK-04", "POL-ASK-08")
def test_without_an_operator_both_tools_fail_at_once() -> None:
    ask = AskUserTool().execute({"question": "Q", "choices": ["a"]}, _ctx(None))
    assert ask.error == "No operator is available to answer ask_user on this path."
    esc = EscalateTool().execute({"summary": "S"}, _ctx(None))
    assert esc.error == "No operator is available to receive escalate_to_human on this path."


@pytest.mark.req("POL-ASK-05", "ACP-ESC-01")
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"summary": " S ", "context": " C "}, ("S", "C", "medium", False, None)),
        (
            {
                "summary": "S",
                "context": "  ",
                "urgency": "critical",
                "wait_for_response": True,
                "timeout_secs": 9,
            },
            ("S", None, "critical", True, 9),
        ),
        (
            {"summary": "S", "urgency": "urgent"},
            "urgency must be one of low, medium, high, critical",
        ),
        ({"summary": "S", "urgency": None}, ("S", None, "medium", False, None)),
        ({"summary": ""}, "Missing 'summary' parameter"),
    ],
)
def test_escalation_arguments(arguments: JSON, expected: object) -> None:
    channel = Channel()
    result = EscalateTool().execute(arguments, _ctx(channel))
    if isinstance(expected, str):
        assert (result.success, result.error, channel.escalated) == (False, expected, [])
    else:
        assert channel.escalated == [expected]


PLAN_CASES = [
    (
        {
            "todos": [
                {"content": "a", "status": "pending"},
                {
                    "content": "b",
                    "status": "completed",
                    "priority": "high",
                    "activeForm": "Doing b",
                },
            ]
        },
        "2 todos tracked (1 done)",
        [
            {"content": "a", "priority": "medium", "status": "pending"},
            {"content": "b", "priority": "high", "status": "completed", "activeForm": "Doing b"},
        ],
    ),
    (
        {
            "todos": [
                {"content": "a", "status": "in_progress", "priority": "urgent", "activeForm": ""}
            ]
        },
        "1 todos tracked (0 done)",
        [{"content": "a", "priority": "medium", "status": "in_progress"}],
    ),
    ({"todos": []}, "0 todos tracked (0 done)", []),
]


@pytest.mark.req("POL-TODO-02", "POL-TODO-04", "ACP-UPD-14")
@pytest.mark.parametrize(("arguments", "output", "plan"), PLAN_CASES)
def test_todo_write_replaces_the_whole_plan(
    arguments: JSON, output: str, plan: list[object]
) -> None:
    result = TodoWriteTool().execute(arguments, _ctx(None))
    assert result.output == output and result.data == {PLAN_KEY: plan}


@pytest.mark.req("POL-TODO-03")
@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({}, "Missing 'todos' parameter"),
        ({"todos": "x"}, "`todos` must be an array"),
        ({"todos": [1]}, "todos[0] must be an object"),
        (
            {"todos": [{"content": "a", "status": "pending"}, {"status": "pending"}]},
            "todos[1].content is required",
        ),
        (
            {"todos": [{"content": "a"}]},
            "todos[0].status must be pending|in_progress|completed, got null",
        ),
        (
            {"todos": [{"content": "a", "status": "done"}]},
            'todos[0].status must be pending|in_progress|completed, got "done"',
        ),
    ],
)
def test_todo_write_reports_the_first_bad_entry(arguments: JSON, error: str) -> None:
    result = TodoWriteTool().execute(arguments, _ctx(None))
    assert (result.success, result.error) == (False, error)


@pytest.mark.req("POL-TODO-01")
def test_the_plan_tool_is_named_todo_write() -> None:
    assert TodoWriteTool().name == "todo_write"
    assert "todo_write" in CATALOGUE_ORDER and "TodoWrite" not in CATALOGUE_ORDER
