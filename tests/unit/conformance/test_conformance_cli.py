"""The `run`, `list` and `show` command lines: profiles, verdicts, documents and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from zeroclaw_ref.conformance.__main__ import default_jobs, main

REPO = Path(__file__).resolve().parents[3]
FAKE = REPO / "tests" / "helpers" / "mutants" / "fake_agent.py"
AGENT = f"{sys.executable} {FAKE}"
INIT = [
    {"send": {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}},
    {"expect": {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}}},
]


def scenario(fixtures: Path, sid: str, profile: str, frames: list[object], **extra: object) -> None:
    head = {
        "format": 2,
        "scenario": sid,
        "description": "The fake agent answers the handshake.",
        "requirements": ["ACP-TR-01"],
        "level": "required",
        "profile": profile,
        **extra,
    }
    path = fixtures / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(o) + "\n" for o in [head, *frames]), encoding="utf-8")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    (fixtures / "VERSION").write_text("2.9\n")
    (fixtures / "spec-index.json").write_text('{"ACP": "acp.md"}')
    scenario(fixtures, "acp/cli/base", "acp", INIT)
    scenario(fixtures, "acp/cli/needs-load", "acp", INIT, needs=["loadSession"])
    scenario(fixtures, "acp/cli/extension", "zeroclaw", INIT)
    wrong = [INIT[0], {"expect": {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 2}}}]
    scenario(fixtures, "acp/cli/broken", "zeroclaw", wrong)
    model = fixtures / "_support" / "models" / "m.json"
    model.parent.mkdir(parents=True)
    model.write_text('{"turns": []}')
    scenario(
        fixtures, "acp/cli/scripted", "zeroclaw", INIT, setup={"model": "_support/models/m.json"}
    )
    return fixtures


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    status = main(list(argv))
    return status, capsys.readouterr().out.splitlines()


@pytest.mark.req("TX-PROFILE-03", "TX-VERDICT-02")
def test_a_foreign_agent_without_hooks_is_judged_on_the_acp_profile_only(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(capsys, "run", "--agent", AGENT, "--fixtures", str(corpus), "--jobs", "2")
    assert status == 0, out
    assert "profiles: acp (the default for --agent without --hooks); hooks: none" in out
    assert any("running 2 scenarios" in line and "3 of other profiles" in line for line in out)
    verdicts = sorted(line for line in out if line.startswith("["))
    assert verdicts[0].endswith("] pass acp/cli/base") or verdicts[1].endswith("pass acp/cli/base")
    assert any(
        line.endswith("not-applicable acp/cli/needs-load  needs capability loadSession")
        for line in verdicts
    ), verdicts
    assert {line[:5] for line in verdicts} == {"[1/2]", "[2/2]"}


@pytest.mark.req("TX-PROFILE-03", "TX-VERDICT-03", "TX-NEEDS-04")
def test_hooks_or_profiles_widen_the_selection_and_counts_close_the_run(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["run", "--agent", AGENT, "--fixtures", str(corpus)]
    status, out = run(capsys, *base, "--hooks", "config")
    assert status == 1  # acp/cli/broken fails
    summary = out[out.index(next(x for x in out if x.startswith("contract 2.9"))) :]
    assert summary == [
        "contract 2.9: 5 scenarios: pass 2, fail 1, not-applicable 2",
        "  profile acp: 2: pass 1, not-applicable 1",
        "  profile zeroclaw: 3: pass 1, fail 1, not-applicable 1",
        "exit status 1",
    ]
    assert any(x.endswith("not-applicable acp/cli/scripted  needs hook model") for x in out)
    status, out = run(capsys, *base, "--profile", "zeroclaw", "--hooks", "all")
    assert "profiles: zeroclaw (as asked); hooks: config, model, workspace" in out
    assert "contract 2.9: 3 scenarios: pass 2, fail 1" in out


@pytest.mark.req("TX-VERDICT-04", "TX-VERDICT-05", "TX-XFAIL-02")
def test_json_and_junit_documents_hold_one_record_per_scenario(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    xfail = tmp_path / "xfail.txt"
    xfail.write_text("acp/cli/extension  # listed only to see it in the documents\n")
    doc, junit = tmp_path / "run.json", tmp_path / "run.xml"
    argv = ["run", "--agent", AGENT, "--fixtures", str(corpus), "--hooks", "config"]
    argv += ["--expected-failures", str(xfail), "--json", str(doc), "--junit", str(junit)]
    status, _ = run(capsys, *argv)
    assert status == 1  # an unexpected pass and a failure
    data = json.loads(doc.read_text())
    records = {r["id"]: r for r in data["results"]}
    assert list(records) == sorted(records)
    broken = records["acp/cli/broken"]
    assert broken["outcome"] == "fail" and broken["profile"] == "zeroclaw"
    assert (broken["reason"], broken["frame"], broken["pointer"]) == (
        "mismatch",
        3,
        "/result/protocolVersion",
    )
    assert broken["requirements"] == ["ACP-TR-01"]
    assert records["acp/cli/needs-load"]["missing"] == ["capability loadSession"]
    assert records["acp/cli/extension"]["outcome"] == "unexpected-pass"
    assert data["summary"]["profiles"]["acp"]["not-applicable"] == 1
    assert data["summary"]["exit_status"] == 1 and data["contract"] == "2.9"
    root = ET.fromstring(junit.read_text())
    assert (root.get("tests"), root.get("skipped")) == ("5", "2")
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"acp", "zeroclaw"}
    assert (suites["zeroclaw"].get("tests"), suites["zeroclaw"].get("failures")) == ("3", "2")
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["acp/cli/needs-load"].find("skipped") is not None
    failure = cases["acp/cli/broken"].find("failure")
    assert failure is not None and "mismatch" in (failure.get("message") or "")
    assert "scenario: acp/cli/broken" in (failure.text or "")


@pytest.mark.req("TX-CLI-01")
def test_bad_input_to_list_show_and_run_is_one_error_line(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [
        ["list", "--fixtures", str(tmp_path / "nowhere")],
        ["list", "--fixtures", str(corpus), "--profile", "base"],
        ["show", "--fixtures", str(corpus), "acp/cli/missing"],
        ["run", "--fixtures", str(corpus), "--profile", "nope"],
        ["run", "--fixtures", str(corpus), "--hooks", "network"],
        ["run", "--fixtures", str(corpus), str(tmp_path / "nothing-here")],
        ["run", "--fixtures", str(corpus), "--agent", 'agent "unclosed'],
        ["run", "--fixtures", str(corpus), "--agent", ""],
        ["run", "--fixtures", str(corpus), "--agent", AGENT, "--json", str(tmp_path / "no" / "x")],
    ]
    for argv in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith("error: "), (argv, err)


@pytest.mark.req("TX-CLI-01")
def test_list_filters_by_profile_and_a_closed_pipe_is_no_traceback(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", "--fixtures", str(corpus), "--profile", "acp"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "acp/cli/base  required  acp",
        "acp/cli/needs-load  required  acp",
    ]
    for verb in (["list"], ["show", "acp/cli/base"]):
        argv = [sys.executable, "-m", "zeroclaw_ref.conformance", *verb, "--fixtures", str(corpus)]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader is gone before the first line
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 141, err
        assert "Traceback" not in err and err == "", err


@pytest.mark.req("TX-CORPUS-02")
def test_positional_ids_and_areas_are_found_in_the_corpus_from_anywhere(
    corpus: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    status, out = run(capsys, "run", "--agent", AGENT, "--fixtures", str(corpus), "acp/cli/base")
    assert status == 0 and "running 1 scenarios, " in " ".join(out), out
    status, out = run(capsys, "run", "--agent", AGENT, "--fixtures", str(corpus), "acp/cli")
    assert "running 2 scenarios" in " ".join(out), out
    assert main(["show", "--fixtures", str(corpus), "acp/cli/base"]) == 0
    assert "profile acp" in capsys.readouterr().out


@pytest.mark.req("TX-SPEED-01")
def test_scenarios_run_two_per_cpu_by_default() -> None:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert default_jobs() == 2 * (cpus or 1)
