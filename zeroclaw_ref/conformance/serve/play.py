"""``serve``: the oracle plays the agent so that an ACP client can be judged (transcripts.md §14).

Usage::

    python -m zeroclaw_ref.conformance serve SCENARIO [--fixtures DIR] [--report FILE]
        [--allow-tail] [--idle-timeout S]

Configure the client under test to launch that command as its ACP agent, then
drive the client through the conversation of one servable scenario (``list
--servable`` names them, ``show SCENARIO`` prints the conversation: the ``-->``
lines are what the client must send). SCENARIO is a scenario id under the
fixtures directory or a path to a scenario file. serve writes the scenario's
``expect`` messages itself, waits for each ``send`` message from the client
and checks it, prints its verdict on stderr (and into FILE with ``--report``),
and exits 0 when the client passed, 1 when it failed and 2 when the scenario
cannot be served. A client that waits longer than ``--idle-timeout`` seconds
(default 30) between two messages fails; a client that keeps the pipe open
after the last message is let go after the same time.

Design: a reader thread turns stdin into classified lines on a queue, so every
wait is a bounded ``queue.get`` ([TX-RUN-11]); the main thread walks the frames
in order with the roles inverted ([TX-SERVE-03]). The rules that need no stream
(servability, invented values, the client checks) live in values.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..core.agent import Pollution
from ..core.checks import check_frames
from ..core.jsonlex import JSON, dumps, pretty, strict_equal
from ..core.match import MatchContext, Mismatch, split_pointer
from ..core.placeholders import PlaceholderError, substitute
from ..core.report import HISTORY, Failed, FailureInfo, failure, render_failure, scrub, status_line
from ..core.transcript import Frame, Problem, Scenario, TranscriptError, load
from ..core.verdicts import ERROR, FAIL, NOT_APPLICABLE, PASS, ScenarioResult
from .input import ClientEvent, ClientInput, _Eof, _Terminated
from .rules import advertised, initialize_problem, is_request, method_of, need_of
from .values import (
    MISSING,
    HostNames,
    Instantiator,
    bind_workspace,
    check_client,
    send_kind,
    servable_problems,
)

__all__ = ["ClientEvent", "ClientInput", "ServeOptions", "ServeSession", "serve_command"]

DEFAULT_IDLE_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """The command-line options of ``serve``."""

    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    allow_tail: bool = False
    report: Path | None = None


class _NotApplicable(Exception):
    """[ZC-SERVE-03] the client lacks a capability the scenario needs."""

    def __init__(self, lacking: list[str]) -> None:
        super().__init__(", ".join(lacking))
        self.lacking = lacking


class _Refused(Exception):
    """[ZC-SERVE-03] serve will not write a request the client cannot take."""


class ServeSession:
    """One scenario played as the agent against one client [TX-SERVE-03].

    ``result`` holds the verdict once ``run`` returns, in ``run``'s terms, so the
    ``serve --suite`` coordinator reports a client as ``run`` reports an agent.
    """

    def __init__(
        self,
        sc: Scenario,
        options: ServeOptions,
        stdin: int,
        stdout: BinaryIO,
        emit: Callable[[str], None],
    ) -> None:
        self.sc = sc
        self.options = options
        self.input = ClientInput(stdin)
        self.stdout = stdout
        self.emit = emit
        self.host = HostNames(sc.fixtures)
        self.bindings: dict[str, JSON] = {}
        self.values = Instantiator(self.host, self.bindings)
        # (the frame's literal id, the id the client really used) [TX-SERVE-05]
        self.ids: list[tuple[JSON, JSON]] = []
        # [ZC-SERVE-08] the ids of serve's own requests (as text) and their methods
        self.asked: dict[str, str] = {}
        self.answered: set[str] = set()
        # [ZC-SERVE-06] the client's initialize params; the initialize id while unanswered
        self.client_caps: JSON | None = None
        self.init_id: JSON | None = None
        self.history: dict[str, deque[str]] = {"acp": deque(maxlen=HISTORY)}
        self.ignore = [split_pointer(p) for p in sc.ignore]
        self.close_frame: Frame | None = None
        self.checked = 0
        self.written = 0
        self.notes: list[str] = []
        self.frame: Frame | None = None
        self.lenient = False  # after not-applicable: --allow-tail behaviour
        self.result = ScenarioResult(
            sc.id, sc.level, ERROR, profile=sc.profile, requirements=sc.requirements
        )

    def _verdict(self, status: str, **fields: object) -> None:
        self.result = dataclasses.replace(self.result, status=status, **fields)  # type: ignore[arg-type]

    def run(self) -> int:
        """Play the scenario and return the exit status [TX-SERVE-01]."""
        try:
            try:
                for frame in self.sc.frames:
                    self.frame = frame
                    self._play(frame)
                self.frame = None
                self._ending()
            except Failed as failed:
                # [TX-SERVE-07] report at once, stop writing, wait for the client to go
                text = self._failure_report(failed.info)
                info = failed.info
                pointer = info.mismatch.pointer if info.mismatch is not None else None
                detail = info.message
                self._verdict(
                    FAIL, reason=info.reason, line=info.line, pointer=pointer, detail=detail
                )
                self._verdict(FAIL, report=text)
                self.emit(text)
                self._drain()
                return 1
            except _NotApplicable as na:
                return self._not_applicable(na.lacking)
            except (PlaceholderError, _Refused) as exc:
                line = self.frame.line if self.frame is not None else 1
                rule = "ZC-SERVE-03" if isinstance(exc, _Refused) else "TX-SERVE-04"
                problem = Problem(self.sc.display, line, rule, str(exc))
                text = f"{status_line('error', self.sc.id, self.sc.level)}\n{problem}"
                self._verdict(ERROR, report=text, detail=str(exc))
                self.emit(text)
                return 2
            text = self._pass_report()
            self._verdict(PASS, report=text)
            self.emit(text)
            return 0
        finally:
            self.input.close()
            self.host.cleanup()

    def _not_applicable(self, lacking: list[str]) -> int:
        """[ZC-SERVE-03] initialize was answered; the rest is not played (exit 0)."""
        missing = tuple(f"client capability {name}" for name in lacking)
        lines = [
            status_line(NOT_APPLICABLE, self.sc.id, self.sc.level),
            f"scenario: {self.sc.id}",
            "the client did not advertise " + ", ".join(lacking) + " in initialize",
        ]
        text = scrub("\n".join(lines), self.host.resolved())
        self._verdict(NOT_APPLICABLE, reason="needs " + ", ".join(missing), missing=missing)
        self._verdict(NOT_APPLICABLE, report=text)
        self.emit(text)
        self.lenient = True
        self.frame = None
        # a lenient ending does not fail; an unusable pipe ends it as well
        with contextlib.suppress(Failed):
            self._ending()
        return 0

    # -- frames ---------------------------------------------------------------

    def _play(self, frame: Frame) -> None:
        if frame.verb == "expect":
            value = self.values.instantiate(frame.value, frame.mods.get("example", MISSING))
            self._write(frame, self._client_id(value))
        elif frame.verb == "expect_unordered":
            for item in frame.value if isinstance(frame.value, list) else []:
                self._write(frame, self._client_id(self.values.instantiate(item)))
        elif frame.verb == "send":
            self._check(frame, self._await(frame))
        elif frame.verb == "do":
            # [TX-SERVE-02] the final close_input: the client ends the session
            self.close_frame = frame

    def _client_id(self, value: JSON) -> JSON:
        """A response to a client request carries the client's own id [TX-SERVE-05]."""
        if not isinstance(value, dict) or "id" not in value or "method" in value:
            return value
        if "result" not in value and "error" not in value:
            return value
        for frame_id, client_id in reversed(self.ids):
            if strict_equal(frame_id, value["id"]):
                return {k: client_id if k == "id" else v for k, v in value.items()}
        return value

    def _write(self, frame: Frame | None, value: JSON) -> None:
        self._before_write(value)
        text = dumps(value)
        try:
            self.stdout.write((text + "\n").encode("utf-8", "surrogatepass"))
            self.stdout.flush()
        except (OSError, ValueError):
            raise failure("unexpected-exit", frame, "the client stopped reading") from None
        self.history["acp"].append("<-- " + text)
        self.written += 1
        self._after_write(value)

    def _before_write(self, value: JSON) -> None:
        """[ZC-SERVE-03] never a capability-gated message (fs/terminal request, elicitation,
        notice or compaction update) to a client that did not offer the capability."""
        method = method_of(value)
        need = need_of(value)
        if need is None:
            return
        if not advertised(self.client_caps if self.client_caps is not None else {}, need):
            raise _Refused(f"serve will not send {method}: the client did not advertise {need}")

    def _after_write(self, value: JSON) -> None:
        if is_request(value) and isinstance(value, dict):
            self.asked[dumps(value["id"])] = str(value["method"])
        elif (
            isinstance(value, dict)
            and self.init_id is not None
            and "method" not in value
            and strict_equal(value.get("id"), self.init_id)
        ):
            # [ZC-SERVE-03] initialize is answered as scripted; then the needs are judged
            self.init_id = None
            caps = self.client_caps if self.client_caps is not None else {}
            lacking = [n for n in self.sc.client_needs if not advertised(caps, n)]
            if lacking:
                raise _NotApplicable(lacking)

    def _await(self, frame: Frame | None) -> JSON:
        idle = self.options.idle_timeout
        event = self.input.next(idle)
        if event is None:
            raise failure("timeout", frame, f"no client message within {idle:g} s")
        if isinstance(event, _Terminated):
            raise failure("unexpected-exit", frame, "serve was terminated (SIGTERM) first")
        if isinstance(event, _Eof):
            raise failure("unexpected-exit", frame, "the client closed its output first")
        if isinstance(event, Pollution):
            # [TX-SERVE-01] the client's output must follow the framing rules too
            raise failure("stdout-pollution", frame, f"{event.why}: {event.raw[:300]!r}")
        self.history["acp"].append("--> " + event.text)
        return event.value

    def _answers_nothing(self, frame: Frame | None, actual: JSON) -> None:
        """[ZC-SERVE-08] a response must answer a request serve wrote, once."""
        if send_kind(actual) != "response" or not isinstance(actual, dict) or "id" not in actual:
            return
        key = dumps(actual["id"])
        if actual["id"] is None:
            why = "the client sent a response with id null: it answers no request"
        elif key not in self.asked:
            why = f"the client answered id {key}, but serve sent no request with that id"
        elif key in self.answered:
            why = f"the client answered serve's {self.asked[key]} request (id {key}) twice"
        else:
            self.answered.add(key)
            return
        extra = ["client message:", *("  " + line for line in pretty(actual).splitlines())]
        raise failure("unexpected-message", frame, why, extra=extra)

    def _check(self, frame: Frame, actual: JSON) -> None:
        self._answers_nothing(frame, actual)
        ctx = MatchContext(self.host, self.bindings, self.ignore)
        if not self.host.workspace_known:
            bind_workspace(frame, actual, self.host, ctx)
        miss, checked = check_client(frame, actual, ctx)
        if miss is None and method_of(frame.value) == "initialize" and isinstance(actual, dict):
            miss = self._initialize(actual)
            checked = "method, id and the types of the client's initialize params"
        if miss is not None:
            raise failure(
                "mismatch",
                frame,
                f"{miss.reason} at {miss.pointer or '(root)'} (checked: {checked})",
                mismatch=miss,
                expected=frame.value,
                actual=actual,
                has_messages=True,
            )
        self.checked += 1
        value = frame.value
        if send_kind(value) != "call" or not isinstance(value, dict) or "id" not in value:
            return
        if isinstance(actual, dict) and "id" in actual:
            self.ids.append((substitute(value["id"], self.host, self.bindings), actual["id"]))

    def _initialize(self, actual: dict[str, JSON]) -> Mismatch | None:
        """[ZC-SERVE-06] the client's own values, whatever the frame shows, held to their types."""
        params = actual.get("params")
        problem = initialize_problem(params)
        if problem is not None:
            pointer, why = problem
            return Mismatch(pointer, "type", why, dumps(params))
        assert isinstance(params, dict)
        caps = params.get("clientCapabilities", {})
        self.client_caps = caps if isinstance(caps, dict) else {}
        self.init_id = actual.get("id")  # the id serve's answer carries [TX-SERVE-05]
        info = params.get("clientInfo")
        if isinstance(info, dict):
            self.notes.append(f"client: {info.get('name')} {info.get('version')}")
        return None

    # -- ending -----------------------------------------------------------------

    def _ending(self) -> None:
        """[TX-SERVE-08] wait for EOF; a tail message fails unless --allow-tail."""
        idle = self.options.idle_timeout
        while True:
            event = self.input.next(idle)
            if event is None:
                if self.close_frame is not None and not self.lenient:
                    message = f"the client did not close its output within {idle:g} s"
                    raise failure("timeout", self.close_frame, message)
                self.notes.append(f"the client kept its output open {idle:g} s after the end")
                return
            if isinstance(event, _Eof):
                return
            if isinstance(event, Pollution):
                if self.lenient:
                    continue
                raise failure("stdout-pollution", None, f"{event.why}: {event.raw[:300]!r}")
            self.history["acp"].append("--> " + event.text)
            self._tail(event.value)

    def _tail(self, value: JSON) -> None:
        if not self.lenient:
            self._answers_nothing(None, value)
        if not (self.options.allow_tail or self.lenient):
            raise failure(
                "unexpected-message",
                None,
                "the client sent a message after the last frame (see --allow-tail)",
                extra=["client message:", *("  " + line for line in pretty(value).splitlines())],
            )
        if isinstance(value, dict) and "id" in value and isinstance(value.get("method"), str):
            error: JSON = {"code": -32601, "message": f"Method not found: {value['method']}"}
            self._write(None, {"jsonrpc": "2.0", "id": value["id"], "error": error})
        if not self.lenient:
            self.notes.append("a message after the last frame was allowed by --allow-tail")

    def _drain(self) -> None:
        while True:
            event = self.input.next(self.options.idle_timeout)
            if event is None or isinstance(event, _Eof):
                return

    # -- reports ------------------------------------------------------------------

    def _failure_report(self, info: FailureInfo) -> str:
        text = render_failure(
            scenario=self.sc.id,
            description=self.sc.description,
            display=self.sc.display,
            failure=info,
            bindings=self.bindings,
            history=self.history,
            stderr_tail=[],
            host=self.host.resolved(),
        )
        # serve has no IUT stderr to show
        text = text[: text.rfind("\nstderr (last")]
        return f"{status_line('fail', self.sc.id, self.sc.level)}\n{text}"

    def _pass_report(self) -> str:
        lines = [
            status_line("pass", self.sc.id, self.sc.level),
            f"scenario: {self.sc.id}",
            f"description: {self.sc.description}",
            f"client messages checked: {self.checked}; messages written: {self.written}",
            *(f"note: {note}" for note in self.notes),
        ]
        return scrub("\n".join(lines), self.host.resolved())


def _locate(scenario: str, fixtures: Path) -> tuple[Path, Path]:
    """(scenario file, corpus root): an id under ``fixtures`` or a path to a file."""
    given = Path(scenario)
    if given.is_file():
        if not fixtures.is_dir():
            for parent in given.resolve().parents:
                if (parent / "VERSION").is_file():
                    return given, parent
        return given, fixtures
    return fixtures / (scenario.removesuffix(".jsonl") + ".jsonl"), fixtures


def serve_command(scenario: str, fixtures: Path, options: ServeOptions) -> int:
    """Entry point of ``python -m zeroclaw_ref.conformance serve``."""

    def emit(text: str) -> None:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
        if options.report is not None:
            try:
                options.report.write_text(text + "\n", encoding="utf-8")
            except OSError as exc:
                sys.stderr.write(f"serve: cannot write {options.report}: {exc.strerror}\n")

    if not options.idle_timeout > 0:
        emit("error: --idle-timeout must be > 0")
        return 2
    path, root = _locate(scenario, fixtures)
    if not path.is_file():
        emit(f"error: no scenario {scenario!r} (looked for {path})")
        return 2
    try:
        sc = load(path, root)
    except TranscriptError as exc:
        emit(f"ERROR {scenario}\n{exc}")
        return 2
    problems = check_frames(sc) or servable_problems(sc)
    if problems:
        # [TX-SERVE-02] a scenario serve cannot play is a transcript error
        emit(f"{status_line('error', sc.id, sc.level)}\n" + "\n".join(map(str, problems)))
        return 2
    session = ServeSession(sc, options, sys.stdin.fileno(), sys.stdout.buffer, emit)
    if threading.current_thread() is not threading.main_thread():
        return session.run()  # only the main thread may install a signal handler
    previous = signal.signal(signal.SIGTERM, session.input.on_sigterm)
    try:
        return session.run()
    finally:
        # None: the handler was not installed from Python; the default is the best guess
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
