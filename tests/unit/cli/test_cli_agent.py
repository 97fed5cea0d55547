"""`zeroclaw_ref agent`: the cli-run path, its terminal operator and its exit codes
(policy.md POL-PATH-02, POL-PATH-14..16, POL-APPROVE-15, POL-ASK-02/06)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from zeroclaw_ref.cli import agent as agent_module
from zeroclaw_ref.cli.agent import NO_AGENT, TerminalOperator, choose_agent, run_agent
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import ResolveError, add_resolve_observer, remove_resolve_observer
from zeroclaw_ref.policy.approvals import Decision, runtime_denial_text

DEMO = """
[providers.demo]
kind = "demo"
model = "demo"
[risk_profiles.p]
{profile}
[runtime_profiles.r]
[agents.a]
model_provider = "demo"
risk_profile = "p"
runtime_profile = "r"
{more}
"""
SECOND_AGENT = """
[agents.b]
model_provider = "demo"
risk_profile = "p"
runtime_profile = "r"
"""


def _cfg(tmp_path: Path, profile: str = "", more: str = "", text: str | None = None) -> Path:
    cfg = tmp_path / "cfg"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "config.toml").write_text(
        text if text is not None else DEMO.format(profile=profile, more=more)
    )
    return cfg


def _cli(cfg: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW")}
    return subprocess.run(
        [sys.executable, "-m", "zeroclaw_ref", "--config-dir", str(cfg), "agent", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def _tool_lines(stderr: str) -> list[str]:
    # an approval prompt ends without a newline, so a tool line may follow it on its line
    return re.findall(r"\[tool\] [^\n]*", stderr)


# --- one-shot and streaming (subprocess) -------------------------------------------------


@pytest.mark.req("POL-PATH-14", "POL-PATH-16")
def test_one_shot_prints_the_answer_with_a_trailing_newline(tmp_path: Path) -> None:
    done = _cli(_cfg(tmp_path), "-m", "hello there")
    assert (done.returncode, done.stdout) == (0, "Echo: hello there\n"), done.stderr
    # a fresh configuration: the first run's auto-memory would add a recalled context
    long = _cli(_cfg(tmp_path / "long"), "--message", "hello there")
    assert (long.returncode, long.stdout) == (0, "Echo: hello there\n")


@pytest.mark.req("POL-PATH-16")
def test_tool_activity_goes_to_stderr_and_only_the_answer_to_stdout(tmp_path: Path) -> None:
    done = _cli(_cfg(tmp_path), "-m", "plan: write tests; run them")
    assert done.returncode == 0, done.stderr
    assert _tool_lines(done.stderr) == ["[tool] todo_write", "[tool] todo_write done"]
    assert done.stdout == "todo_write result: 2 todos tracked (0 done)\n"
    failed = _cli(_cfg(tmp_path / "second"), "-m", "read: missing.txt")
    assert failed.returncode == 0, failed.stderr
    assert _tool_lines(failed.stderr) == ["[tool] file_read", "[tool] file_read failed"]
    assert "[tool]" not in failed.stdout and failed.stdout.endswith("\n")


@pytest.mark.req("POL-PATH-15", "POL-APPROVE-07", "DIV-01")
def test_a_piped_run_denies_prompting_tools_at_runtime(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    done = _cli(cfg, "-m", "write: out.txt hello")
    assert done.returncode == 0, done.stderr
    assert _tool_lines(done.stderr) == ["[tool] file_write", "[tool] file_write failed"]
    denial = runtime_denial_text("file_write")
    assert done.stdout.startswith("file_write result: " + denial[:150])
    assert not (cfg / "agents" / "a" / "workspace" / "out.txt").exists()
    assert "Agent wants to execute" not in done.stderr


@pytest.mark.req("POL-PATH-14")
def test_interactive_loop_keeps_history_and_stops_at_exit(tmp_path: Path) -> None:
    stdin = "first message\n\n   \nrecall:\n/exit\nnever sent\n"
    done = _cli(_cfg(tmp_path), stdin=stdin)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Echo: first message\nPrevious: first message\n"


@pytest.mark.req("POL-PATH-14")
@pytest.mark.parametrize(("tail", "expected"), [("/quit\nlater\n", ""), ("", "")])
def test_the_loop_also_ends_on_quit_and_end_of_input(
    tmp_path: Path, tail: str, expected: str
) -> None:
    done = _cli(_cfg(tmp_path), stdin="one\n" + tail)
    assert (done.returncode, done.stdout) == (0, "Echo: one\n" + expected), done.stderr


@pytest.mark.req("POL-PATH-16", "POL-RESOLVE-07")
def test_an_unknown_agent_exits_one_with_an_error_line(tmp_path: Path) -> None:
    done = _cli(_cfg(tmp_path), "--agent", "ghost", "-m", "hi")
    assert done.returncode == 1 and done.stdout == ""
    assert "ERROR: Unknown agent `ghost` \u2014 no [agents.ghost] entry configured\n" in done.stderr


@pytest.mark.req("POL-PATH-16")
def test_a_failed_turn_exits_one(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "model.json").write_text(json.dumps({"turns": [{"error": "model overloaded"}]}))
    (cfg / "config.toml").write_text(
        DEMO.format(profile="", more="").replace(
            '[providers.demo]\nkind = "demo"\nmodel = "demo"',
            '[providers.demo]\nkind = "scripted"\nscript = "model.json"',
        )
    )
    done = _cli(cfg, "-m", "hi")
    assert done.returncode == 1
    assert "ERROR: Agent turn failed: model overloaded" in done.stderr


@pytest.mark.req("POL-PATH-16")
def test_a_configuration_failure_exits_one(tmp_path: Path) -> None:
    done = _cli(_cfg(tmp_path, text="this is = = not toml"), "-m", "hi")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("ERROR: ") or "\nERROR: " in done.stderr


@pytest.mark.req("POL-PATH-16")
@pytest.mark.parametrize("args", [("--bogus",), ("-m",), ("--agent",)])
def test_usage_errors_exit_two(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = _cli(_cfg(tmp_path), *args)
    assert done.returncode == 2 and done.stdout == ""


@pytest.mark.req("POL-PATH-02")
def test_no_agent_and_no_default_is_an_error(tmp_path: Path) -> None:
    done = _cli(_cfg(tmp_path, more=SECOND_AGENT), "-m", "hi")
    assert done.returncode == 1 and done.stdout == ""
    assert f"ERROR: {NO_AGENT}\n" in done.stderr
    assert NO_AGENT == "No agent specified and no default agent is configured"


# --- the agent choice rule (in-process) --------------------------------------------------


def _load(tmp_path: Path, more: str = "", extra: str = "") -> ConfigSnapshot:
    cfg = _cfg(tmp_path, more=more)
    if extra:
        (cfg / "config.toml").write_text(extra + (cfg / "config.toml").read_text())
    return load_config(cfg, tmp_path / "data", {})


@pytest.mark.req("POL-PATH-02")
def test_choose_agent_rule(tmp_path: Path) -> None:
    one = _load(tmp_path / "one")
    assert choose_agent(one, None) == "a"
    assert choose_agent(one, "zzz") == "zzz"  # a named agent is taken as named
    two = _load(tmp_path / "two", more=SECOND_AGENT)
    with pytest.raises(ResolveError, match=f"^{NO_AGENT}$"):
        choose_agent(two, None)
    assert choose_agent(two, "b") == "b"
    defaulted = _load(tmp_path / "d", more=SECOND_AGENT, extra='[acp]\ndefault_agent = "b"\n')
    assert choose_agent(defaulted, None) == "b"
    assert choose_agent(defaulted, "a") == "a"


# --- run_agent in-process: interaction mode --------------------------------------------


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _observe() -> tuple[list[ResolvedAgentExecution], object]:
    seen: list[ResolvedAgentExecution] = []
    add_resolve_observer(seen.append)
    return seen, seen.append


@pytest.mark.req("POL-PATH-15", "POL-PATH-16")
def test_in_process_piped_run_is_non_interactive(tmp_path: Path) -> None:
    config = _load(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    seen, callback = _observe()
    try:
        status = run_agent(config, None, "hi", False, io.StringIO(""), out, err)
    finally:
        remove_resolve_observer(callback)  # type: ignore[arg-type]
    assert (status, out.getvalue()) == (0, "Echo: hi\n")
    (execution,) = seen
    assert execution.path == "cli-run" and execution.io.interaction == "none"
    assert execution.io.approval.approver is None


@pytest.mark.req("POL-PATH-15", "POL-APPROVE-08", "POL-APPROVE-15")
def test_terminals_make_the_run_interactive_with_terminal_approvals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = ["y"]
    monkeypatch.setattr(
        agent_module, "_line_reader", lambda stream: lambda timeout: answers.pop(0) + "\n"
    )
    config = _load(tmp_path)
    out, err = io.StringIO(), Tty()
    seen, callback = _observe()
    try:
        status = run_agent(config, None, "write: out.txt hello", False, Tty(""), out, err)
    finally:
        remove_resolve_observer(callback)  # type: ignore[arg-type]
    assert status == 0 and answers == []
    (execution,) = seen
    assert execution.io.interaction == "terminal"
    assert "\n🔧 Agent wants to execute: file_write\n" in err.getvalue()
    ws = tmp_path / "cfg" / "agents" / "a" / "workspace"
    assert (ws / "out.txt").read_text() == "hello"
    assert _tool_lines(err.getvalue()) == ["[tool] file_write", "[tool] file_write done"]


@pytest.mark.req("POL-PATH-15")
def test_non_interactive_flag_wins_over_terminals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_reader(stream: object) -> object:
        raise AssertionError("no terminal reader in a non-interactive run")

    monkeypatch.setattr(agent_module, "_line_reader", no_reader)
    config = _load(tmp_path)
    out, err = io.StringIO(), Tty()
    seen, callback = _observe()
    try:
        status = run_agent(config, None, "write: out.txt hello", True, Tty(""), out, err)
    finally:
        remove_resolve_observer(callback)  # type: ignore[arg-type]
    assert status == 0
    assert seen[0].io.interaction == "none"
    assert "Agent wants to execute" not in err.getvalue()
    assert not (tmp_path / "cfg" / "agents" / "a" / "workspace" / "out.txt").exists()


@pytest.mark.req("POL-PATH-16", "POL-PATH-02")
def test_in_process_errors_exit_one(tmp_path: Path) -> None:
    config = _load(tmp_path, more=SECOND_AGENT)
    out, err = io.StringIO(), io.StringIO()
    assert run_agent(config, None, "hi", False, io.StringIO(""), out, err) == 1
    assert err.getvalue() == f"ERROR: {NO_AGENT}\n" and out.getvalue() == ""


@pytest.mark.req("POL-PATH-14")
def test_in_process_loop_keeps_history(tmp_path: Path) -> None:
    config = _load(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    stdin = io.StringIO("alpha\nbeta\nrecall:\n/exit\n")
    assert run_agent(config, None, None, False, stdin, out, err) == 0
    assert out.getvalue() == "Echo: alpha\nEcho: beta\nPrevious: beta\n"


# --- TerminalOperator -------------------------------------------------------------------


class Lines:
    def __init__(self, *answers: str | None) -> None:
        self.answers = list(answers)
        self.timeouts: list[float | None] = []

    def __call__(self, timeout: float | None) -> str | None:
        self.timeouts.append(timeout)
        return self.answers.pop(0)


PROMPT = (
    "\n🔧 Agent wants to execute: file_write\n"
    "   path: notes.txt, content: hello, mode: x\n"
    "   [Y]es / [N]o / [A]lways for file_write: "
)


@pytest.mark.req("POL-APPROVE-15", "POL-APPROVE-16")
@pytest.mark.parametrize(
    ("answer", "decision"),
    [
        ("y\n", Decision.ALLOW_ONCE),
        ("Y\n", Decision.ALLOW_ONCE),
        ("  yes \n", Decision.ALLOW_ONCE),
        ("YES", Decision.ALLOW_ONCE),
        ("a\n", Decision.ALLOW_ALWAYS),
        (" Always\n", Decision.ALLOW_ALWAYS),
        ("n\n", Decision.REJECT),
        ("no\n", Decision.REJECT),
        ("\n", Decision.REJECT),
        ("sure\n", Decision.REJECT),
        (None, Decision.REJECT),  # end of input
    ],
)
def test_terminal_prompt_text_and_answer_mapping(answer: str | None, decision: Decision) -> None:
    err = io.StringIO()
    lines = Lines(answer)
    operator = TerminalOperator(err, lines)
    result = operator.approve(
        "file_write", {"content": "hello", "path": "notes.txt", "mode": "x"}, CancelToken()
    )
    assert result.decision is decision
    assert err.getvalue() == PROMPT
    assert len(lines.timeouts) == 1


@pytest.mark.req("POL-APPROVE-16")
def test_terminal_prompt_redacts_secrets() -> None:
    err = io.StringIO()
    TerminalOperator(err, Lines("n")).approve(
        "file_write", {"path": "a", "api_key": "sk-123"}, CancelToken()
    )
    assert "   path: a, api_key: [redacted]\n" in err.getvalue()
    assert "sk-123" not in err.getvalue()


def _ask(answer: str | None, choices: tuple[str, ...] = ("red", "Blue"), timeout: int = 5):  # type: ignore[no-untyped-def]
    err = io.StringIO()
    lines = Lines(answer)
    result = TerminalOperator(err, lines).ask("Pick a colour?", choices, timeout, CancelToken())
    return result, err.getvalue(), lines.timeouts


@pytest.mark.req("POL-ASK-02")
def test_ask_writes_the_question_and_numbered_choices() -> None:
    _, text, timeouts = _ask("1\n")
    assert "Pick a colour?\n" in text
    lines = [line.strip() for line in text.splitlines()]
    assert lines.index("1. red") < lines.index("2. Blue")
    assert timeouts == [5]


@pytest.mark.req("POL-ASK-02")
@pytest.mark.parametrize(
    ("answer", "success", "text"),
    [
        ("2\n", True, "Blue"),
        ("1", True, "red"),
        ("blue\n", True, "Blue"),
        ("  RED \n", True, "red"),
        ("green\n", False, "Answer did not match any choice: green"),
        ("3\n", False, "Answer did not match any choice: 3"),
        (None, False, "ask_user timed out after 5s"),
    ],
)
def test_ask_answers(answer: str | None, success: bool, text: str) -> None:
    result, _, _ = _ask(answer)
    assert result.success is success
    assert (result.output if success else result.error) == text


@pytest.mark.req("POL-ASK-02")
def test_ask_without_choices_returns_the_trimmed_line() -> None:
    result, _, _ = _ask("  anything goes \n", choices=())
    assert result.success and result.output == "anything goes"
    timed_out, _, timeouts = _ask(None, choices=(), timeout=300)
    assert timed_out.error == "ask_user timed out after 300s" and timeouts == [300]


@pytest.mark.req("POL-ASK-06")
def test_escalate_without_waiting_is_delivered() -> None:
    err = io.StringIO()
    lines = Lines()
    result = TerminalOperator(err, lines).escalate(
        "disk full", "on /srv", "high", False, None, CancelToken()
    )
    assert result.success and result.output == "Escalation delivered (urgency: high)"
    assert err.getvalue().startswith("⚠ Escalation [high]: disk full\n")
    assert "on /srv" in err.getvalue()
    assert lines.timeouts == []  # nothing is read


@pytest.mark.req("POL-ASK-06")
def test_escalate_without_context_writes_only_the_headline() -> None:
    err = io.StringIO()
    TerminalOperator(err, Lines()).escalate("note", None, "low", False, None, CancelToken())
    assert err.getvalue() == "⚠ Escalation [low]: note\n"


@pytest.mark.req("POL-ASK-06")
@pytest.mark.parametrize(
    ("answer", "timeout", "success", "text", "bound"),
    [
        ("  on it \n", None, True, "on it", 600),
        (None, None, False, "escalate_to_human timed out after 600s", 600),
        (None, 7, False, "escalate_to_human timed out after 7s", 7),
    ],
)
def test_escalate_waiting_for_a_response(
    answer: str | None, timeout: int | None, success: bool, text: str, bound: int
) -> None:
    lines = Lines(answer)
    result = TerminalOperator(io.StringIO(), lines).escalate(
        "disk full", None, "critical", True, timeout, CancelToken()
    )
    assert result.success is success
    assert (result.output if success else result.error) == text
    assert lines.timeouts == [bound]
