"""An expect frame's own `ignore` patterns: checked by lint, applied to that frame only."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from zeroclaw_ref.conformance.core.checks import check_frames
from zeroclaw_ref.conformance.core.options import RunOptions
from zeroclaw_ref.conformance.core.runner import run_scenario
from zeroclaw_ref.conformance.core.transcript import TranscriptError, load
from zeroclaw_ref.conformance.tools.record import record_scenario

SID = "abc"
# An agent that answers initialize, session/new (with an extra member) and a prompt (whose result
# carries the extras sessionId and content), then ends at end of input.
AGENT = f"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        result = {{"protocolVersion": 1, "agentCapabilities": {{}}}}
    elif msg.get("method") == "session/new":
        result = {{"sessionId": "{SID}", "extra": 1}}
    elif msg.get("method") == "session/prompt":
        result = {{"sessionId": "{SID}", "stopReason": "end_turn", "content": "hi"}}
    else:
        result = None
    if "id" in msg:
        print(json.dumps({{"jsonrpc": "2.0", "id": msg["id"], "result": result}}), flush=True)
"""


def _scenario(tmp_path: Path, frames: list[dict[str, object]], ignore: list[str]) -> Path:
    fixtures = tmp_path / "fixtures"
    path = fixtures / "acp" / "base-test" / "frame-ignore.jsonl"
    path.parent.mkdir(parents=True)
    header = {
        "format": 2,
        "scenario": "acp/base-test/frame-ignore",
        "description": "A frame ignores members of its own message only.",
        "requirements": ["TX-MATCH-07"],
        "level": "required",
        "profile": "acp",
        "ignore": ignore,
    }
    lines = [header, *frames]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _init() -> list[dict[str, object]]:
    return [
        {
            "send": {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": 1},
            }
        },
        {
            "expect": {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {"protocolVersion": 1, "agentCapabilities": {}},
            }
        },
        {
            "send": {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "session/new",
                "params": {"cwd": "/", "mcpServers": []},
            }
        },
        {"expect": {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "${sid:string}"}}},
    ]


def _prompt(ignore: object) -> list[dict[str, object]]:
    params = {"sessionId": "${sid}", "prompt": [{"type": "text", "text": "hi"}]}
    expect: dict[str, object] = {
        "expect": {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}
    }
    if ignore is not None:
        expect["ignore"] = ignore
    return [
        {"send": {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": params}},
        expect,
    ]


def _run(path: Path) -> str:
    agent = shlex.join([sys.executable, "-c", AGENT])
    return run_scenario(path, path.parents[2], RunOptions(agent=agent, barrier=False)).status


@pytest.mark.req("TX-MATCH-07")
def test_a_frame_ignores_members_of_its_own_message_only(tmp_path: Path) -> None:
    frames = _init() + _prompt(["/result/sessionId", "/result/content"])
    path = _scenario(tmp_path, frames, ["/result/extra"])
    assert check_frames(load(path, path.parents[2])) == []
    assert _run(path) == "pass"


@pytest.mark.req("TX-MATCH-07")
def test_without_the_frame_patterns_the_extra_members_fail_the_match(tmp_path: Path) -> None:
    path = _scenario(tmp_path, _init() + _prompt(None), ["/result/extra"])
    assert _run(path) == "fail"


@pytest.mark.req("TX-MATCH-07")
def test_a_frame_pattern_does_not_reach_other_frames(tmp_path: Path) -> None:
    # /result/extra is ignored only on the prompt's frame, so session/new's extra member fails
    path = _scenario(
        tmp_path, _init() + _prompt(["/result/sessionId", "/result/content", "/result/extra"]), []
    )
    assert _run(path) == "fail"


@pytest.mark.req("TX-MATCH-07")
@pytest.mark.parametrize("ignore", ["/result/content", ["result/content"], [5]])
def test_a_malformed_frame_ignore_is_a_transcript_error(tmp_path: Path, ignore: object) -> None:
    path = _scenario(tmp_path, _init() + _prompt(ignore), ["/result/extra"])
    with pytest.raises(TranscriptError) as caught:
        load(path, path.parents[2])
    assert any(p.rule == "TX-MATCH-07" for p in caught.value.problems)


@pytest.mark.req("TX-MATCH-07")
def test_an_expected_member_at_a_frame_ignored_pointer_is_refused_by_lint(tmp_path: Path) -> None:
    path = _scenario(tmp_path, _init() + _prompt(["/result/stopReason"]), ["/result/extra"])
    problems = check_frames(load(path, path.parents[2]))
    assert [p.rule for p in problems] == ["TX-MATCH-07"]


@pytest.mark.req("TX-MATCH-07", "TX-RECORD-02")
def test_record_leaves_a_frame_s_ignored_members_out_of_its_draft(tmp_path: Path) -> None:
    frames = _init() + _prompt(["/result/sessionId", "/result/content"])
    path = _scenario(tmp_path, frames, ["/result/extra"])
    agent = shlex.join([sys.executable, "-c", AGENT])
    out = record_scenario(path, path.parents[2], RunOptions(agent=agent, barrier=False))
    assert out.error == ""
    assert out.new_text == out.old_text  # the draft did not gain sessionId and content
