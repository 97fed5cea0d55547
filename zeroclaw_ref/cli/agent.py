"""`zeroclaw_ref agent`: the `cli-run` construction path (policy.md POL-PATH-14..16).

One execution per process, built by `resolve()`; one turn with `-m`, otherwise one turn per
input line. The answer streams to stdout; tool activity, approvals and questions go to stderr,
so stdout can be piped. Interactive only when stdin and stderr are terminals (POL-PATH-15).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.ids import RandomIds
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.engine.events import (
    Completed,
    Failed,
    TextDelta,
    ToolCallStarted,
    ToolFinished,
    TurnEvent,
)
from zeroclaw_ref.engine.resolve import PathRequest, ResolveError, resolve
from zeroclaw_ref.engine.turn import TurnEngine
from zeroclaw_ref.policy.approvals import Answer, Decision, summarize_arguments
from zeroclaw_ref.tools.base import ToolResult

NO_AGENT = "No agent specified and no default agent is configured"  # [POL-PATH-02]
ESCALATE_TIMEOUT = 600  # [POL-ASK-06]


def choose_agent(config: ConfigSnapshot, requested: str | None) -> str:
    """[POL-PATH-02] the named agent, else `[acp].default_agent`, else the only agent.

    Raises:
        ResolveError: with the POL-PATH-02 text when no agent can be chosen.
    """
    if requested:
        return requested
    default = (config.acp.default_agent or "").strip()
    if default:
        return default
    if len(config.agents) == 1:
        return next(iter(config.agents))
    raise ResolveError(NO_AGENT)


class TerminalOperator:
    """Approvals and operator questions on the terminal (POL-APPROVE-15, POL-ASK-02/06)."""

    def __init__(self, err: TextIO, read_line: Callable[[float | None], str | None]) -> None:
        self._err = err
        self._read_line = read_line

    def approve(self, tool: str, arguments: JSON, cancel: CancelToken) -> Answer:
        shown = dict(arguments) if isinstance(arguments, dict) else arguments
        if tool in ("shell", "cron_add") and isinstance(shown, dict):
            shown["approved"] = False  # the runtime's value at the time of asking
        self._err.write(f"\n🔧 Agent wants to execute: {tool}\n   {summarize_arguments(shown)}\n")
        self._err.write(f"   [Y]es / [N]o / [A]lways for {tool}: ")
        self._err.flush()
        answer = (self._read_line(None) or "").strip().lower()
        if answer in ("y", "yes"):
            return Answer(Decision.ALLOW_ONCE)
        if answer in ("a", "always"):
            return Answer(Decision.ALLOW_ALWAYS)
        return Answer(Decision.REJECT)  # anything else, end of input included

    def ask(
        self, question: str, choices: tuple[str, ...], timeout_secs: int, cancel: CancelToken
    ) -> ToolResult:
        self._err.write(f"\n{question}\n")
        for number, choice in enumerate(choices, 1):
            self._err.write(f"  {number}. {choice}\n")
        self._err.flush()
        line = self._read_line(float(timeout_secs))
        if line is None:
            return ToolResult.fail(f"ask_user timed out after {timeout_secs}s")
        answer = line.strip()
        if not choices:
            return ToolResult.ok(answer)
        if answer.isdigit() and 1 <= int(answer) <= len(choices):
            return ToolResult.ok(choices[int(answer) - 1])
        for choice in choices:
            if choice.lower() == answer.lower():
                return ToolResult.ok(choice)
        return ToolResult.fail(f"Answer did not match any choice: {answer}")

    def escalate(
        self,
        summary: str,
        context: str | None,
        urgency: str,
        wait_for_response: bool,
        timeout_secs: int | None,
        cancel: CancelToken,
    ) -> ToolResult:
        self._err.write(f"⚠ Escalation [{urgency}]: {summary}\n")
        if context:
            self._err.write(f"{context}\n")
        self._err.flush()
        if not wait_for_response:
            return ToolResult.ok(f"Escalation delivered (urgency: {urgency})")
        limit = timeout_secs if timeout_secs is not None else ESCALATE_TIMEOUT
        line = self._read_line(float(limit))
        if line is None:
            return ToolResult.fail(f"escalate_to_human timed out after {limit}s")
        return ToolResult.ok(line.strip())


def _line_reader(stream: TextIO) -> Callable[[float | None], str | None]:
    """Read one line from the controlling terminal (else `stream`), with an optional bound."""
    try:
        tty: TextIO = Path("/dev/tty").open(encoding="utf-8")  # noqa: SIM115 - process-long
    except OSError:
        tty = stream

    def read(timeout: float | None) -> str | None:
        box: list[str] = []
        reader = threading.Thread(target=lambda: box.append(tty.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        return box[0] if box and box[0] else None

    return read


def run_agent(
    config: ConfigSnapshot,
    alias: str | None,
    message: str | None,
    non_interactive: bool,
    stdin: TextIO = sys.stdin,
    stdout: TextIO = sys.stdout,
    stderr: TextIO = sys.stderr,
) -> int:
    """Run the cli-run path; returns the exit status of POL-PATH-16."""
    interactive = stdin.isatty() and stderr.isatty() and not non_interactive
    operator = TerminalOperator(stderr, _line_reader(stdin)) if interactive else None
    ids = RandomIds()  # the process run id (POL-MEM-09) and every id of its turns
    try:
        chosen = choose_agent(config, alias)
        execution = resolve(
            config, chosen, PathRequest("cli-run", approver=operator, interactive=interactive), ids
        )
    except ResolveError as exc:
        stderr.write(f"ERROR: {exc}\n")
        return 1
    engine = TurnEngine(ids)
    history: list[JSONObject] = []
    try:
        if message is not None:
            return _turn(engine, execution, history, message, stdout, stderr)
        status = 0
        for line in stdin:
            text = line.strip()
            if not text:
                continue
            if text in ("/exit", "/quit"):
                break
            status = _turn(engine, execution, history, text, stdout, stderr) or status
        return status
    finally:
        execution.close()


def _turn(
    engine: TurnEngine,
    execution: object,
    history: list[JSONObject],
    message: str,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    def show(event: TurnEvent) -> None:
        if isinstance(event, TextDelta):
            stdout.write(event.text)
            stdout.flush()
        elif isinstance(event, ToolCallStarted):
            stderr.write(f"[tool] {event.name}\n")
        elif isinstance(event, ToolFinished):
            stderr.write(f"[tool] {event.name} {'done' if event.success else 'failed'}\n")

    outcome = engine.run_turn(execution, history, message, show, CancelToken())  # type: ignore[arg-type]
    stdout.write("\n")
    stdout.flush()
    if isinstance(outcome, Completed):
        history.extend(outcome.messages)
        return 0
    detail = outcome.diagnostic if isinstance(outcome, Failed) else "the turn was cancelled"
    stderr.write(f"ERROR: Agent turn failed: {detail}\n")
    return 1
