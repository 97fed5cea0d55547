"""``serve --suite``: one agent command for a whole selection of servable scenarios ([ZC-SERVE-09]).

The coordinator listens on a UNIX socket and tells the client author the agent
command to configure: ``serve --connect PATH`` (relay.py). Each connection
made through that command plays the next scenario of ``list --servable
SELECTION`` (id order) with the single-scenario logic of play.py, so a client
is judged exactly as ``serve SCENARIO`` judges it. The run ends with ``run``'s
progress lines, summary and ``--json``/``--junit`` documents (core/verdicts.py).

Every wait is bounded by ``--idle-timeout``: a client that does not connect for
the next scenario in time fails that scenario and every later one with
"client never connected" (reason ``timeout``), and the coordinator ends.
"""

from __future__ import annotations

import contextlib
import shlex
import socket
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..core.checks import check_frames
from ..core.report import status_line
from ..core.suite import SelectionError, contract_version, discover
from ..core.transcript import Scenario, TranscriptError, load
from ..core.verdicts import (
    ERROR,
    FAIL,
    RunOutcome,
    ScenarioResult,
    json_document,
    junit_document,
    progress_line,
    summary_lines,
)
from .play import ServeOptions, ServeSession
from .values import servable_problems

AGENT_LABEL = "the client under test (serve --suite)"
JOIN_WAIT = 5.0  # for a reader thread to see the end of a connection serve shut down


def agent_command(path: str) -> str:
    """What the client must launch as its agent for every scenario of the suite."""
    words = [sys.executable, "-m", "zeroclaw_ref.conformance", "serve", "--connect", path]
    return shlex.join(words)


def play_connection(sc: Scenario, conn: socket.socket, options: ServeOptions) -> ScenarioResult:
    """Judge the client on one connection with serve's own session logic."""
    problems = check_frames(sc)
    if problems:
        report = f"{status_line('error', sc.id, sc.level)}\n" + "\n".join(map(str, problems))
        conn.close()
        return ScenarioResult(
            sc.id, sc.level, ERROR, report=report, profile=sc.profile, requirements=sc.requirements
        )
    writer = conn.makefile("wb")
    session = ServeSession(sc, options, conn.fileno(), writer, lambda _text: None)
    try:
        session.run()
    finally:
        # shutdown ends the reader thread's os.read before the descriptor is closed
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)
        for thread in session.input.threads:
            thread.join(JOIN_WAIT)
        with contextlib.suppress(OSError):
            writer.close()
        conn.close()
    return session.result


def never_connected(sc: Scenario, idle: float) -> ScenarioResult:
    detail = f"client never connected within {idle:g} s"
    return ScenarioResult(
        sc.id,
        sc.level,
        FAIL,
        reason="timeout",
        detail=detail,
        report=f"{status_line('fail', sc.id, sc.level)}\n{detail}",
        profile=sc.profile,
        requirements=sc.requirements,
    )


def _listen(path: Path) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
    except OSError as exc:
        listener.close()
        raise SelectionError(f"--socket {path}: cannot listen: {exc.strerror}") from None
    listener.listen(8)
    return listener


def servable_scenarios(
    fixtures: Path, selection: Sequence[Path] = (), profiles: Sequence[str] | None = None
) -> tuple[list[Scenario], list[str]]:
    """The servable scenarios of a selection in id order (what ``serve --suite`` plays),
    and the transcript errors met on the way."""
    if not fixtures.is_dir():
        raise SelectionError(f"{fixtures}: no such corpus directory")
    found: list[Scenario] = []
    errors: list[str] = []
    for path in discover(fixtures, selection):
        try:
            sc = load(path, fixtures)
        except TranscriptError as exc:
            errors.append(str(exc))
            continue
        if (profiles is None or sc.profile in profiles) and not servable_problems(sc):
            found.append(sc)
    return sorted(found, key=lambda s: s.id), errors


def serve_suite(
    fixtures: Path,
    selection: Sequence[Path],
    profiles: Sequence[str] | None,
    options: ServeOptions,
    socket_path: Path | None,
    json_out: Path | None,
    junit_out: Path | None,
) -> int:
    """The ``serve --suite`` command; its exit status is ``run``'s ([TX-RUN-07])."""
    scenarios, errors = servable_scenarios(fixtures, selection, profiles)
    for error in errors:
        sys.stderr.write(error + "\n")
    if not scenarios:
        raise SelectionError("no servable scenario in the selection")
    scratch = None
    if socket_path is None:
        scratch = tempfile.mkdtemp(prefix="zc-serve-suite-")
        socket_path = Path(scratch) / "serve.sock"
    listener = _listen(socket_path)
    sys.stderr.write(
        f"serve --suite: {len(scenarios)} scenarios; configure the client's agent command as\n"
        f"  {agent_command(str(socket_path))}\n"
        "each launch plays the next scenario (list --servable order)\n"
    )
    sys.stderr.flush()
    results: list[ScenarioResult] = []
    try:
        for index, sc in enumerate(scenarios):
            listener.settimeout(options.idle_timeout)
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                results += [never_connected(s, options.idle_timeout) for s in scenarios[index:]]
                for n, r in enumerate(results[index:], index + 1):
                    print(progress_line(n, len(scenarios), r), flush=True)
                break
            conn.settimeout(None)
            result = play_connection(sc, conn, options)
            results.append(result)
            print(progress_line(len(results), len(scenarios), result))
            if result.status in (FAIL, ERROR) and result.report:
                print("    " + result.report.replace("\n", "\n    "))
            sys.stdout.flush()
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            socket_path.unlink()
        if scratch is not None:
            with contextlib.suppress(OSError):
                Path(scratch).rmdir()
    outcome = RunOutcome(results)
    contract = contract_version(fixtures)
    print("\n".join(summary_lines(contract, outcome)))
    for target, render in ((json_out, json_document), (junit_out, junit_document)):
        if target is None:
            continue
        try:
            target.write_text(render(contract, AGENT_LABEL, outcome), encoding="utf-8")
        except OSError as exc:
            raise SelectionError(f"{target}: cannot write: {exc.strerror}") from None
    return outcome.exit_status()
