"""Every frame our agent sends in every golden transcript is valid under the official ACP schema.

The runner judges each message the agent writes on `acp` against the pinned stable schema
(fixtures/schema/, conformance/schema.py) whenever `jsonschema` is importable; in this suite it
always is (the `test` extra), so a schema violation is a verdict of its own: outcome `fail`,
reason `schema`, with the frame, the message, the JSON Pointer and the schema's complaint. The
corpus is run once per session (corpus_runs.py) and read here and by test_corpus.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.transcripts.corpus_runs import FIXTURES, IDS, SCENARIOS, corpus_result
from zeroclaw_ref.conformance.core.runner import RunOptions, run_scenario
from zeroclaw_ref.conformance.core.schema import JudgedExchange, validator
from zeroclaw_ref.conformance.core.transcript import load


def test_the_runner_judges_with_the_schema_in_this_suite() -> None:
    assert validator(FIXTURES, required=True) is not None
    exchange = JudgedExchange(load(SCENARIOS[0], FIXTURES))
    assert exchange.talk is not None and exchange.unusable is None


@pytest.mark.req("TX-LINT-03", "ZC-CANCEL-01")
@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_every_frame_our_agent_sends_is_schema_valid(path: Path) -> None:
    result = corpus_result(path)
    assert result.reason != "schema", f"{result.scenario}: {result.detail}\n{result.report}"


# --- the judge inside the runner, against a fake agent ---------------------------------------

AGENT = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "session/new":
        sid = "s-1"
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": sid}}))
    elif msg.get("method") == "session/prompt":
        for _ in range(2):  # the same toolCallId twice in one session
            update = {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x"}
            params = {"sessionId": "s-1", "update": update}
            print(json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params}))
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"stopReason": "%s"}}))
    sys.stdout.flush()
"""


def _scenario(fixtures: Path, stop_reason: str, header_extra: dict[str, object]) -> Path:
    (fixtures / "acp" / "judge").mkdir(parents=True, exist_ok=True)
    (fixtures / "schema").mkdir(exist_ok=True)
    for name in ("acp-v1.schema.json", "pins.json"):
        (fixtures / "schema" / name).write_bytes((FIXTURES / "schema" / name).read_bytes())
    (fixtures / "VERSION").write_text("2.1\n")
    header = {
        "format": 2,
        "scenario": "acp/judge/case",
        "description": "The agent answers a prompt.",
        "requirements": ["ACP-TR-01"],
        "level": "required",
        "profile": "zeroclaw",
        **header_extra,
    }
    update = {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x"}
    params = {"sessionId": "${sid}", "update": update}
    tool_call = {"expect": {"jsonrpc": "2.0", "method": "session/update", "params": params}}
    frames = [
        header,
        {"send": {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}}},
        {"expect": {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "${sid}"}}},
        {"send": {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {}}},
        tool_call,
        tool_call,
        {"expect": {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": stop_reason}}},
    ]
    path = fixtures / "acp" / "judge" / "case.jsonl"
    path.write_text("".join(json.dumps(f) + "\n" for f in frames))
    return path


def _run(tmp_path: Path, stop_reason: str, header_extra: dict[str, object]) -> tuple[str, str]:
    fixtures = tmp_path / "fixtures"
    path = _scenario(fixtures, stop_reason, header_extra)
    script = tmp_path / "agent.py"
    script.write_text(AGENT % stop_reason)
    result = run_scenario(path, fixtures, RunOptions(agent=f"{sys.executable} {script}"))
    return f"{result.status}/{result.reason}", result.report


def test_a_message_the_schema_forbids_fails_the_scenario_naming_frame_and_error(
    tmp_path: Path,
) -> None:
    verdict, report = _run(tmp_path, "finished", {})
    assert verdict == "fail/schema"
    # the first offence is the repeated tool call id (frame line 6); the stop reason would be next
    assert "frame: fixtures/acp/judge/case.jsonl:6 expect on acp" in report
    assert "/params/update/toolCallId: 't' is already a tool call of this session" in report
    assert '"toolCallId": "t"' in report or '"toolCallId":"t"' in report


def test_a_named_divergence_is_tolerated_and_the_next_problem_still_found(tmp_path: Path) -> None:
    tolerate = {"x-schema-exception": {"/params/update/toolCallId": "a made-up divergence"}}
    verdict, report = _run(tmp_path, "finished", tolerate)
    assert verdict == "fail/schema"
    assert "frame: fixtures/acp/judge/case.jsonl:7 expect on acp" in report
    assert "/result/stopReason" in report and "[PromptResponse (session/prompt)]" in report
    verdict, _ = _run(tmp_path / "valid", "end_turn", tolerate)
    assert verdict == "pass/None"
