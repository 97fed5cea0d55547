"""Permission requests: summary rules (Table 6-1), answers (Table 6-2), replacement text, and
the approval gate they serve: under `supervised` an acting call waits for the operator's answer,
under `full` it is not gated (ACP-SEC-13, driven through an in-process server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.helpers.acp_harness import RISK_FULL, MakeHarness, config_text
from tests.helpers.json_at import at, list_at, objects_at
from zeroclaw_ref.acp.approver import AcpApprover, map_answer, sanitize_replacement, summarize
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.policy.approvals import Decision
from zeroclaw_ref.rpc.endpoint import Endpoint
from zeroclaw_ref.wire.jsonrpc import RemoteError, Response

LONG = "x" * 90
SUMMARIES = [
    ("shell", {"command": "git status --short", "approved": True}, "git status --short"),
    ("shell", {"command": LONG * 3}, LONG * 3),  # rule 1: never cut
    ("web__get", [1, 2], "[1,2]"),
    ("web__get", "y" * 130, '"' + "y" * 119 + "…"),
    ("web__get", {}, "(no arguments)"),
    ("web__get", {"approved": False}, "(no arguments)"),
    (
        "web__http_request",
        {"url": "https://example.com/a", "method": "POST", "api_key": "sk-123", "body": {"q": 1}},
        'api_key: [redacted], body: {"q":1}, method: POST, url: https://example.com/a',
    ),
    ("file_read", {"offset": 2, "path": "a.txt"}, "path: a.txt, offset: 2"),
    ("t", {"note": LONG}, "note: " + "x" * 80 + "…"),
    ("t", {"Auth_Header": LONG}, "Auth_Header: [redacted]"),
    ("t", {"B": 1, "a": 2}, "B: 1, a: 2"),  # code-point order
]


@pytest.mark.req("ACP-PERM-09", "POL-APPROVE-16")
@pytest.mark.parametrize(("tool", "arguments", "expected"), SUMMARIES)
def test_summaries_follow_the_first_applicable_rule(
    tool: str, arguments: object, expected: str
) -> None:
    assert summarize(tool, arguments) == expected  # type: ignore[arg-type]


def _reply(result: object = None, error: RemoteError | None = None) -> Response:
    return Response("zc-out-0", result, error)  # type: ignore[arg-type]


def _selected(option: str, **extra: object) -> Response:
    return _reply({"outcome": {"outcome": "selected", "optionId": option, **extra}})


ANSWERS = [
    ("shell", _selected("allow-once"), Decision.ALLOW_ONCE),
    ("shell", _selected("allow-always"), Decision.ALLOW_ALWAYS),
    ("shell", _selected("reject-once"), Decision.REJECT),
    ("shell", _selected("reject-always"), Decision.REJECT),
    ("file_edit", _selected("reject-with-edit", replacementContent="x"), Decision.REPLACE),
    ("shell", _selected("reject-with-edit"), Decision.NO_DECISION),  # never offered for shell
    ("shell", _selected("maybe"), Decision.NO_DECISION),
    ("shell", _reply({"outcome": {"outcome": "cancelled"}}), Decision.NO_DECISION),
    ("shell", _reply({"outcome": "selected"}), Decision.NO_DECISION),
    ("shell", _reply(None, RemoteError(-1, "no")), Decision.NO_DECISION),
]


@pytest.mark.req("ACP-PERM-10", "ACP-PERM-14")
@pytest.mark.parametrize(("tool", "reply", "decision"), ANSWERS)
def test_answers_map_by_table_6_2(tool: str, reply: Response, decision: Decision) -> None:
    assert map_answer(tool, reply).decision is decision


@pytest.mark.req("ACP-PERM-11")
def test_replacements_lose_control_characters_and_are_cut_on_a_character_boundary() -> None:
    assert sanitize_replacement("a\x00b\tc\nd\x1b") == "ab\tc\nd"
    assert sanitize_replacement(None) == ""
    cut = sanitize_replacement("é" * 40000)
    assert len(cut.encode()) <= 65536 and cut == "é" * 32768


@pytest.mark.req("ACP-PERM-05", "ACP-PERM-06", "ACP-PERM-07", "ACP-PERM-08")
def test_request_params_for_edit_and_other_tools(tmp_path: Path) -> None:
    config = load_config(tmp_path / "c", tmp_path / "d", {})
    approver = AcpApprover(Endpoint({}, lambda s: None), "sid", SequentialIds(), tmp_path, config)
    edit = approver.request_params(
        "file_edit", {"path": "a.py", "old_string": "1", "new_string": "2"}
    )
    assert [o["optionId"] for o in objects_at(edit, "options")] == [
        "allow-once", "allow-always", "reject-with-edit", "reject-once"
    ]  # fmt: skip
    tool_call = edit["toolCall"]
    assert tool_call == {
        "toolCallId": "approval-00000001-0000-4000-8000-000000000001",
        "title": "Approve file_edit?",
        "kind": "edit",
        "status": "pending",
        "rawInput": {"path": "a.py", "oldText": "1", "newText": "2"},
        "content": [
            {"type": "diff", "path": str(tmp_path / "a.py"), "oldText": "1", "newText": "2"}
        ],
        "proposedEdit": "2",
    }
    shell = approver.request_params("shell", {"command": "ls"})
    assert at(shell, "toolCall", "rawInput") == {"tool": "shell", "summary": "ls"}
    assert len(list_at(shell, "options")) == 3


# --- ACP-SEC-13: supervised tool calls go through the approval gate ---------------------------


@pytest.mark.req("ACP-SEC-13")
@pytest.mark.parametrize(("option", "runs"), [("allow-once", True), ("reject-once", False)])
def test_under_supervised_an_acting_call_waits_for_the_operator_and_obeys_the_answer(
    tmp_path: Path, make_harness: MakeHarness, option: str, runs: bool
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    harness = make_harness(config_text({"a": ""}, risk='level = "supervised"\n'))
    sid, execution = harness.new(1, cwd=str(ws))
    assert execution.io.approval.level == "supervised"
    harness.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": "write: gated.txt payload"},
        }
    )
    wait_for(lambda: bool(harness.requests()), "a permission request")
    (request,) = harness.requests()
    assert request["params"]["sessionId"] == sid
    assert not (ws / "gated.txt").exists()  # nothing ran before the answer
    assert not [m for m in harness.out if m.get("id") == 2]  # the turn is parked
    harness.send(
        {
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": option}},
        }
    )
    answer = harness.answer(2)
    assert answer["result"]["stopReason"] == "end_turn", answer
    assert (ws / "gated.txt").exists() == runs
    # a read tool on the built-in auto-approve list passes the same gate without asking
    (ws / "r.txt").write_text("x")
    harness.call(3, "session/prompt", {"sessionId": sid, "prompt": "read: r.txt"})
    assert len(harness.requests()) == 1


@pytest.mark.req("ACP-SEC-13")
def test_the_same_call_under_full_is_not_gated(tmp_path: Path, make_harness: MakeHarness) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    harness = make_harness(config_text({"a": ""}, risk=RISK_FULL))
    sid, _ = harness.new(1, cwd=str(ws))
    answer = harness.call(2, "session/prompt", {"sessionId": sid, "prompt": "write: f.txt x"})
    assert answer["result"]["stopReason"] == "end_turn"
    assert harness.requests() == [] and (ws / "f.txt").read_text() == "x"
