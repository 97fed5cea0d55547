# ruff: noqa: E501
"""ask_user and escalate_to_human over the ACP back-channel (acp.md §6.4, §6.6; Table 6-3)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from zeroclaw_ref.acp.approver import AcpApprover
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.rpc.endpoint import Endpoint
from zeroclaw_ref.tools.base import ToolResult

DECLINED = (
    "Channel 'acp' did not complete the structured choice (user cancelled/declined, or the "
    "channel has no free-form fallback). Retry ask_user; free-form questions on this channel "
    "await ACP elicitation Phase 2."
)


class Harness:
    def __init__(self, tmp_path: Path, timeout: int = 3600) -> None:
        config = load_config(
            tmp_path / "c", tmp_path / "d", {"ZEROCLAW_acp__session_timeout_secs": str(timeout)}
        )
        self.sent: list[dict[str, object]] = []
        self.got_request = threading.Event()
        self.endpoint = Endpoint({}, self._send)
        self.channel = AcpApprover(self.endpoint, "sid", SequentialIds(), tmp_path, config)
        self.messages: list[str] = []
        self.channel.attach(self.messages.append)

    def _send(self, line: str) -> None:
        self.sent.append(json.loads(line))
        self.got_request.set()

    def ask_and_answer(
        self,
        answer: object | None,
        choices: tuple[str, ...] = ("A", "B", "C"),
        timeout: int = 300,
        cancel: CancelToken | None = None,
    ) -> ToolResult:
        token = cancel or CancelToken()
        out: list[ToolResult] = []
        worker = threading.Thread(
            target=lambda: out.append(self.channel.ask("Which?", choices, timeout, token))
        )
        worker.start()
        if answer is not None:
            assert self.got_request.wait(10)
            reply = {"jsonrpc": "2.0", "id": "zc-out-0", **answer}  # type: ignore[dict-item]
            self.endpoint.dispatch(json.dumps(reply).encode())
        worker.join(10)
        assert out, "ask did not return"
        return out[0]


@pytest.mark.req("ACP-ASK-04")
def test_the_question_is_a_permission_request_with_one_option_per_choice(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.ask_and_answer({"result": {"outcome": {"outcome": "selected", "optionId": "choice-1"}}})
    assert h.sent[0]["params"] == {
        "sessionId": "sid",
        "options": [
            {"optionId": "choice-0", "name": "A", "kind": "allow_once"},
            {"optionId": "choice-1", "name": "B", "kind": "allow_once"},
            {"optionId": "choice-2", "name": "C", "kind": "reject_once"},
        ],
        "toolCall": {
            "toolCallId": "ask-user-00000001-0000-4000-8000-000000000001",
            "title": "Which?",
            "kind": "other",
            "status": "pending",
        },
    }


def test_a_single_choice_keeps_allow_once(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.ask_and_answer(
        {"result": {"outcome": {"outcome": "selected", "optionId": "choice-0"}}}, choices=("Only",)
    )
    assert h.sent[0]["params"]["options"] == [
        {"optionId": "choice-0", "name": "Only", "kind": "allow_once"}
    ]  # type: ignore[index]


TABLE_6_3 = [
    ({"result": {"outcome": {"outcome": "selected", "optionId": "choice-1"}}}, True, "B"),
    (
        {"result": {"outcome": {"outcome": "selected", "optionId": "choice-9"}}},
        False,
        "Failed to ask question on channel 'acp': ACP returned unknown optionId: choice-9",
    ),
    ({"result": {"outcome": {"outcome": "cancelled"}}}, False, DECLINED),
    (
        {"result": {"outcome": {"outcome": "maybe"}}},
        False,
        "Failed to ask question on channel 'acp': ACP returned unexpected outcome: maybe",
    ),
    (
        {"error": {"code": -32000, "message": "nope"}},
        False,
        "Failed to ask question on channel 'acp': ACP request_permission failed: nope (-32000)",
    ),
]


@pytest.mark.req("ACP-ASK-06")
@pytest.mark.parametrize(("answer", "ok", "text"), TABLE_6_3)
def test_answers_map_by_table_6_3(
    tmp_path: Path, answer: dict[str, object], ok: bool, text: str
) -> None:
    result = Harness(tmp_path).ask_and_answer(answer)
    assert (result.success, result.output if ok else result.error) == (ok, text)


@pytest.mark.req("ACP-ASK-05", "ACP-CFG-06")
def test_the_shorter_of_the_two_timeouts_applies(tmp_path: Path) -> None:
    result = Harness(tmp_path, timeout=1).ask_and_answer(None, timeout=300)
    assert (
        result.error
        == "Failed to ask question on channel 'acp': ACP request_permission timed out after 1s"
    )


@pytest.mark.req("ACP-ASK-03")
def test_no_choices_fails_without_sending_anything(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    result = h.channel.ask("Free?", (), 300, CancelToken())
    assert (
        result.error
        == "Channel 'acp' requires `choices` for ask_user (free-form questions await ACP elicitation Phase 2)"
    )
    assert h.sent == []


@pytest.mark.req("ACP-PERM-13")
def test_a_cancel_resolves_the_pending_question_locally(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    token = CancelToken()
    threading.Thread(target=lambda: (h.got_request.wait(10), token.fire())).start()
    result = h.ask_and_answer(None, cancel=token)
    assert result.error == DECLINED


@pytest.mark.req("ACP-ESC-02", "ACP-ESC-03")
@pytest.mark.parametrize(
    ("urgency", "context", "text"),
    [
        (
            "low",
            None,
            "\u2139\ufe0f [LOW] Agent Escalation\nSummary: S\n---\nReply to this message to respond.",
        ),
        (
            "medium",
            "C",
            "\u26a0\ufe0f [MEDIUM] Agent Escalation\nSummary: S\nContext: C\n---\nReply to this message to respond.",
        ),
        (
            "high",
            None,
            "\U0001f534 [HIGH] Agent Escalation\nSummary: S\n---\nReply to this message to respond.",
        ),
        (
            "critical",
            None,
            "\U0001f6a8 [CRITICAL] Agent Escalation\nSummary: S\n---\nReply to this message to respond.",
        ),
    ],
)
def test_escalation_sends_one_message_and_reports_it(
    tmp_path: Path, urgency: str, context: str | None, text: str
) -> None:
    h = Harness(tmp_path)
    result = h.channel.escalate("S", context, urgency, False, None, CancelToken())
    assert h.messages == [text]
    assert result.output == '{"channel":"acp","status":"escalated","urgency":"' + urgency + '"}'


def test_escalation_cannot_wait_for_a_reply(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    result = h.channel.escalate("S", None, "low", True, None, CancelToken())
    assert result.error is not None and result.error.startswith(
        "Channel 'acp' cannot receive a free-form reply"
    )
    assert h.messages == [] and h.sent == []
