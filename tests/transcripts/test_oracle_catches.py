"""Mutant agents: each must make a hand-written scenario fail for its stated reason.

Every scenario here also passes against the well-behaved fake agent, so a
failure can only come from the one mutation. Deadlines in these scenarios are
safety nets for the runner, never timed assertions.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest

from zeroclaw_ref.conformance.core.runner import RunOptions, ScenarioResult, run_scenario
from zeroclaw_ref.conformance.core.suite import RunOutcome, apply_expected_failures

FAKE = Path(__file__).resolve().parents[1] / "helpers" / "mutants" / "fake_agent.py"
INIT: list[dict[str, object]] = [
    {"send": {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}},
    {"expect": {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}}},
]
SESSION: list[dict[str, object]] = [
    {
        "send": {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": "${WORKSPACE}"},
        }
    },
    {"expect": {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "${sid:uuid}"}}},
    {
        "send": {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/prompt",
            "params": {"sessionId": "${sid}"},
        }
    },
    {
        "expect": {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "${sid}", "update": {"sessionUpdate": "agent_message_chunk"}},
        },
        "within": 2,
    },
    {
        "expect": {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {"sessionId": "${sid}", "stopReason": "end_turn"},
        }
    },
]
UNKNOWN: list[dict[str, object]] = [
    {"send": {"jsonrpc": "2.0", "id": 9, "method": "nope"}},
    {"expect": {"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "nope"}}},
]
COMPUTE: list[dict[str, object]] = [
    {"send": {"jsonrpc": "2.0", "id": 4, "method": "compute"}},
    {"expect": {"jsonrpc": "2.0", "id": 4, "result": {"value": 1}}},
]
FLAG: list[dict[str, object]] = [
    {"send": {"jsonrpc": "2.0", "id": 5, "method": "flag"}},
    {"expect": {"jsonrpc": "2.0", "id": 5, "result": {"ok": True}}},
]


def write_scenario(
    root: Path, name: str, frames: list[dict[str, object]], **header: object
) -> tuple[Path, Path]:
    fixtures = root / "fixtures"
    path = fixtures / "acp" / "oracle" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    (fixtures / "VERSION").write_text("1.0\n")
    head = {
        "format": 2,
        "scenario": f"acp/oracle/{name}",
        "description": "The fake agent behaves as the scenario says.",
        "requirements": ["ACP-TR-01"],
        "level": "required",
        "profile": "zeroclaw",
        "timeouts": {"expect": 5, "exit": 5},
        **header,
    }
    lines = [json.dumps(head)] + [json.dumps(f, ensure_ascii=False) for f in frames]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, fixtures


def run_with(path: Path, fixtures: Path, mutation: str) -> ScenarioResult:
    agent = f"{sys.executable} {FAKE} {mutation}"
    return run_scenario(path, fixtures, RunOptions(agent=agent))


CASES: list[tuple[str, list[dict[str, object]], str, dict[str, object]]] = [
    ("pollution", INIT, "stdout-pollution", {}),
    ("crlf", INIT, "stdout-pollution", {}),
    ("empty-line", INIT, "stdout-pollution", {}),
    ("partial-line", INIT, "stdout-pollution", {}),
    ("wrong-error-code", INIT + UNKNOWN, "mismatch", {}),
    ("extra-message", INIT + SESSION, "unexpected-message", {}),
    ("no-exit-on-eof", INIT, "no-exit-on-eof", {"timeouts": {"expect": 5, "exit": 1}}),
    ("exit-status", INIT, "exit-status", {}),
    ("real-for-int", INIT + COMPUTE, "mismatch", {}),
    ("int-for-bool", INIT + FLAG, "mismatch", {}),
    ("session-changes", INIT + SESSION, "mismatch", {}),
    ("timeout", INIT + SESSION, "timeout", {}),
]


@pytest.mark.req("TX-FLOW-05", "TX-FLOW-07", "TX-FLOW-08", "TX-MATCH-04", "TX-RUN-06")
@pytest.mark.parametrize(
    ("mutation", "frames", "reason", "header"), CASES, ids=[c[0] for c in CASES]
)
def test_mutant_agent_fails_for_its_stated_reason(
    tmp_path: Path,
    mutation: str,
    frames: list[dict[str, object]],
    reason: str,
    header: dict[str, object],
) -> None:
    path, fixtures = write_scenario(tmp_path, mutation, frames, **header)
    control = run_with(path, fixtures, "none")
    assert control.status == "pass", control.report
    result = run_with(path, fixtures, mutation)
    assert (result.status, result.reason) == ("fail", reason), result.report


@pytest.mark.req("TX-FLOW-05")
@pytest.mark.parametrize(
    ("mutation", "quoted"),
    [("empty-line", "empty line: b'\\n'"), ("partial-line", "partial line at EOF: b'{")],
)
def test_stdout_pollution_quotes_the_offending_bytes(
    tmp_path: Path, mutation: str, quoted: str
) -> None:
    """An empty line is not skipped and a cut line is not dropped: each fails the scenario
    with its own reason and the bytes themselves in the report."""
    path, fixtures = write_scenario(tmp_path, mutation, INIT)
    result = run_with(path, fixtures, mutation)
    assert (result.status, result.reason) == ("fail", "stdout-pollution"), result.report
    assert quoted in result.report


def test_mismatch_report_names_line_pointer_and_bindings_without_temp_paths(
    tmp_path: Path,
) -> None:
    path, fixtures = write_scenario(tmp_path, "report", INIT + SESSION)
    result = run_with(path, fixtures, "session-changes")
    assert result.line == 8 and result.pointer == "/result/sessionId"
    assert "binding-conflict" in result.report
    assert "${sid=" in result.report
    assert '"cwd":"${WORKSPACE}"' in result.report
    assert str(tmp_path) not in result.report


@pytest.mark.req("TX-FRAME-07", "TX-FRAME-10", "TX-FRAME-08")
def test_explicit_ending_restart_and_kill_are_honoured(tmp_path: Path) -> None:
    frames: list[dict[str, object]] = [
        *INIT,
        {"do": "close_input"},
        {"expect_exit": 0},
        {"do": "restart"},
        *INIT,
        {"do": "kill"},
    ]
    path, fixtures = write_scenario(tmp_path, "lifecycle", frames)
    result = run_with(path, fixtures, "none")
    assert result.status == "pass", result.report
    wrong = write_scenario(
        tmp_path, "wrong-exit", [*INIT, {"do": "close_input"}, {"expect_exit": 3}]
    )
    assert run_with(*wrong, "none").reason == "exit-status"


@pytest.mark.req("TX-FLOW-07")
def test_unexpected_exit_is_reported_when_the_agent_stops_early(tmp_path: Path) -> None:
    path, fixtures = write_scenario(tmp_path, "early", [{"do": "close_input"}, *INIT[1:]])
    result = run_with(path, fixtures, "none")
    assert (result.status, result.reason) == ("fail", "unexpected-exit"), result.report


@pytest.mark.req("TX-PEER-03", "TX-PEER-04", "TX-PEER-05")
def test_stdio_peer_relays_both_ways_and_reports_eof(tmp_path: Path) -> None:
    frames: list[dict[str, object]] = [
        *INIT,
        {
            "send": {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "spawn_peer",
                "params": {"argv": ["${PYTHON}", "${RELAY}", "${PEER_FS}"]},
            }
        },
        {"expect": {"jsonrpc": "2.0", "id": 1, "method": "initialize"}, "ch": "fs"},
        {"send": {"jsonrpc": "2.0", "id": 1, "result": {"name": "fs"}}, "ch": "fs"},
        {
            "expect": {
                "jsonrpc": "2.0",
                "id": 7,
                "result": {"peer": {"jsonrpc": "2.0", "id": 1, "result": {"name": "fs"}}},
            }
        },
        {"do": "close_input"},
        {"expect_exit": "eof", "ch": "fs"},
        {"expect_exit": 0},
    ]
    channels = {"fs": {"role": "mcp-server", "transport": "stdio"}}
    path, fixtures = write_scenario(tmp_path, "peer", frames, channels=channels)
    result = run_with(path, fixtures, "none")
    assert result.status == "pass", result.report


@pytest.mark.req(
    "TX-XFAIL-02", "TX-XFAIL-03", "TX-XFAIL-04", "TX-XFAIL-05", "TX-RUN-07", "TX-VERDICT-01"
)
def test_expected_failures_ratchet() -> None:
    results = [
        ScenarioResult("a/b/fails", "required", "fail", "mismatch"),
        ScenarioResult("a/b/passes", "required", "pass"),
        ScenarioResult("a/b/broken", "required", "error"),
    ]
    listed = {"a/b/fails": "known", "a/b/passes": "fixed", "a/b/broken": "x", "a/b/gone": "old"}
    out, stale = apply_expected_failures(results, listed, {r.scenario for r in results})
    assert [r.status for r in out] == ["expected-fail", "unexpected-pass", "error"]
    assert out[0].detail == "known"
    assert stale == ["a/b/gone"]
    assert RunOutcome(out, stale).exit_status() == 2
    assert RunOutcome(out[:1], []).exit_status() == 0
    assert RunOutcome(out[:2], []).exit_status() == 1
    assert RunOutcome(out[:1], stale).exit_status() == 1
    optional = [ScenarioResult("a/b/o", "optional", "fail", "timeout")]
    assert RunOutcome(optional, []).exit_status() == 0
    assert RunOutcome(optional, [], strict=True).exit_status() == 1
    not_applicable = [ScenarioResult("a/b/n", "required", "not-applicable", "needs hook model")]
    assert RunOutcome(not_applicable, [], strict=True).exit_status() == 0


REPO = Path(__file__).resolve().parents[2]
STARTUP = (
    "invalid-toml",
    "unknown-config-key",
    "env-override-bad-value",
    "unresolvable-env-override",
)


@pytest.mark.req("TX-BARRIER-01", "TX-BARRIER-02", "TX-BARRIER-03")
def test_barrier_ends_a_settled_acp_scenario_without_waiting_for_the_exit(tmp_path: Path) -> None:
    # The exit deadline is long: had the runner waited for this agent, which never exits on
    # end of input, the scenario would take 30 s. The barrier proves quiescence instead.
    header: dict[str, object] = {"profile": "acp", "timeouts": {"expect": 30, "exit": 30}}
    path, fixtures = write_scenario(tmp_path, "settled", INIT + SESSION, **header)
    started = time.monotonic()
    result = run_with(path, fixtures, "no-exit-on-eof")
    assert result.status == "pass", result.report
    assert time.monotonic() - started < 15
    late = run_with(path, fixtures, "extra-message-lingers")
    assert (late.status, late.reason) == ("fail", "unexpected-message"), late.report
    assert "before the barrier's answer" in late.report
    assert run_with(path, fixtures, "extra-message").reason == "unexpected-message"


@pytest.mark.req("TX-BARRIER-01")
def test_an_agent_that_neither_answers_the_barrier_nor_exits_fails(tmp_path: Path) -> None:
    path, fixtures = write_scenario(tmp_path, "silent", INIT, profile="acp")
    assert run_with(path, fixtures, "none").status == "pass"
    result = run_with(path, fixtures, "ignores-extensions-lingers")
    assert (result.status, result.reason) == ("fail", "timeout"), result.report
    assert "quiescence barrier" in result.report
    # one that exits on end of input instead of answering is judged by quiescence after exit
    assert run_with(path, fixtures, "ignores-extensions").status == "pass"
    # and without the barrier the lingering one is killed unjudged after the short exit wait
    options = RunOptions(agent=f"{sys.executable} {FAKE} ignores-extensions-lingers", barrier=False)
    assert run_scenario(path, fixtures, options).status == "pass"


@pytest.mark.req("TX-BARRIER-03")
def test_zeroclaw_scenarios_still_judge_the_exit_on_end_of_input(tmp_path: Path) -> None:
    path, fixtures = write_scenario(tmp_path, "exit", INIT, timeouts={"expect": 5, "exit": 1})
    result = run_with(path, fixtures, "no-exit-on-eof")
    assert (result.status, result.reason) == ("fail", "no-exit-on-eof"), result.report
    acp, _ = write_scenario(tmp_path, "exit-acp", INIT, profile="acp")
    assert run_with(acp, fixtures, "exit-status").status == "pass"


@pytest.mark.req("TX-NEEDS-03", "TX-NEEDS-04")
def test_a_capability_the_initialize_answer_lacks_is_not_applicable(tmp_path: Path) -> None:
    path, fixtures = write_scenario(
        tmp_path, "needs-load", INIT, profile="acp", needs=["loadSession"]
    )
    result = run_with(path, fixtures, "none")
    assert (result.status, result.missing) == ("not-applicable", ("capability loadSession",))
    assert result.reason == "needs capability loadSession"
    # the agent that advertises it is judged, and this one fails the pinned result
    judged = run_with(path, fixtures, "load-session")
    assert (judged.status, judged.reason) == ("fail", "mismatch"), judged.report


@pytest.mark.req("TX-NEEDS-02", "TX-NEEDS-04")
def test_a_hook_the_agent_does_not_honour_is_not_applicable_before_it_starts(
    tmp_path: Path,
) -> None:
    model = tmp_path / "fixtures" / "_support" / "models" / "m.json"
    model.parent.mkdir(parents=True)
    model.write_text('{"turns": []}')
    path, fixtures = write_scenario(
        tmp_path, "hooked", INIT, setup={"model": str(model.relative_to(tmp_path / "fixtures"))}
    )
    never = RunOptions(agent="/nonexistent/agent", hooks=frozenset({"config"}))
    result = run_scenario(path, fixtures, never)
    assert (result.status, result.missing) == ("not-applicable", ("hook model",)), result.report
    assert run_with(path, fixtures, "none").status == "pass"


@pytest.mark.req("TX-STDERR-01", "TX-STDERR-02")
def test_expect_stderr_matches_line_patterns_in_order_or_one_to_one(tmp_path: Path) -> None:
    script = (
        "import sys; sys.stderr.write('starting\\nERROR: bad key\\nERROR: at ' + sys.argv[1]"
        " + '\\n'); sys.exit(1)"
    )
    agent = f"{sys.executable} -c {shlex.quote(script)} here"
    cases: list[tuple[dict[str, object], str]] = [
        ({"expect_stderr": ["ERROR: bad key", "ERROR: at ${where:nonempty}"]}, "pass"),
        ({"expect_stderr": ["ERROR: at here", "ERROR: bad key"]}, "fail"),
        ({"expect_stderr": ["ERROR: ${_}", "ERROR: at here"], "only": True}, "fail"),
        ({"expect_stderr": ["starting", "ERROR: ${_}", "ERROR: at here"], "only": True}, "pass"),
    ]
    for number, (frame, status) in enumerate(cases):
        path, fixtures = write_scenario(tmp_path, f"stderr-{number}", [{"expect_exit": 1}, frame])
        result = run_scenario(path, fixtures, RunOptions(agent=agent))
        assert result.status == status, (frame, result.report)
        if status == "fail":
            assert result.reason == "stderr-mismatch"
            assert "| ERROR: bad key" in result.report


@pytest.mark.req("TX-STDERR-01", "ACP-TR-05", "CFG-LOAD-09")
@pytest.mark.parametrize("name", STARTUP)
@pytest.mark.parametrize(
    "script",
    ["raise RuntimeError('config broke')", "raise SystemExit(1)"],
    ids=["traceback", "silent"],
)
def test_startup_scenarios_fail_an_agent_without_the_error_line(name: str, script: str) -> None:
    fixtures = REPO / "fixtures"
    agent = f"{sys.executable} -c {shlex.quote(script)}"
    result = run_scenario(
        fixtures / "acp" / "startup" / f"{name}.jsonl", fixtures, RunOptions(agent=agent)
    )
    assert (result.status, result.reason) == ("fail", "stderr-mismatch"), result.report
