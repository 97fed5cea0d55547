"""Running one scenario against an IUT (transcripts.md §3, §4, §7, §9).

Plan: ``run_scenario`` loads and checks the file, builds fresh directories and
the IUT environment ([TX-HOST-02], [TX-HOST-03]), starts the peers and the IUT,
executes the frames in order, performs the implicit ending and the quiescence
check ([TX-FLOW-07], [TX-FLOW-08]), and always cleans up. A failing frame raises
``report.Failed``; a misused placeholder at run time raises ``PlaceholderError``,
which becomes status ``error``.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import queue
import shlex
import shutil
import sys
import tempfile
import time
from collections import deque
from collections.abc import Mapping
from pathlib import Path

from ..peers import RELAY_SCRIPT
from ..peers.httpwire import match_headers
from ..peers.inbox import PeerFailure
from ..peers.stdio import Peer, PeerError, StdioPeer, start_peer
from .agent import AgentProcess, Message, Pollution, StdoutClosed
from .checks import check_frames
from .exchange import (
    BARRIER_EXIT,
    BARRIER_GRACE,
    await_barrier,
    match_stderr,
    stderr_lines,
)
from .header import support_path
from .jsonlex import JSON, Real, dumps
from .match import MatchContext, match, match_unordered, split_pointer
from .options import NotApplicable, RunOptions, default_agent
from .placeholders import PlaceholderError, substitute, substitute_host_text
from .profiles import CLIENT_ONLY, CLIENT_PROFILE, all_needs, capability_needs, missing
from .report import HISTORY, STDERR_TAIL, Failed, FailureInfo, failure, render_failure
from .schema import JudgedExchange
from .transcript import Frame, Scenario, TranscriptError, frame_ignore, load
from .verdicts import ERROR, FAIL, NOT_APPLICABLE, PASS, ScenarioResult

__all__ = ["RunOptions", "ScenarioResult", "ScenarioRun", "default_agent", "run_scenario"]


def run_scenario(path: Path, fixtures: Path, options: RunOptions) -> ScenarioResult:
    """Run one scenario file and return its verdict (never raises for scenario problems)."""
    try:
        sc = load(path, fixtures)
    except TranscriptError as exc:
        return ScenarioResult(_guess_id(path, fixtures), "required", ERROR, report=str(exc))
    problems = check_frames(sc)
    if problems:
        report = "\n".join(str(p) for p in problems)
        return _verdict(sc, ERROR, report=report)
    if sc.profile == CLIENT_PROFILE:  # [ZC-SERVE-02] it judges clients, never an agent
        return _verdict(sc, NOT_APPLICABLE, reason=CLIENT_ONLY)
    # [TX-NEEDS-04] a hook the agent does not honour is known before it starts
    lacking = missing(all_needs(sc.needs, sc.setup, len(sc.channels)), options.hooks, None)
    if lacking:
        return _not_applicable(sc, lacking)
    return ScenarioRun(sc, options).execute()


def _verdict(sc: Scenario, status: str, **fields: object) -> ScenarioResult:
    base = ScenarioResult(
        sc.id, sc.level, status, tags=sc.tags, profile=sc.profile, requirements=sc.requirements
    )
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


def _not_applicable(sc: Scenario, lacking: list[str]) -> ScenarioResult:
    reason = "needs " + ", ".join(lacking)
    return _verdict(sc, NOT_APPLICABLE, reason=reason, missing=tuple(lacking))


def _guess_id(path: Path, fixtures: Path) -> str:
    try:
        return path.resolve().relative_to(fixtures.resolve()).with_suffix("").as_posix()
    except ValueError:
        return path.as_posix()


class ScenarioRun:
    """One run of one checked scenario: its directories, peers, IUT and bindings.

    This is an extension point: tools/record.py subclasses it to run the agent in
    deterministic mode and to draft expected frames instead of judging them, so
    the frame handlers (``_send``, ``_expect``, ``_environment``...) and the
    helpers they use are meant to be overridden or called from a subclass.
    """

    def __init__(self, sc: Scenario, options: RunOptions) -> None:
        self.sc = sc
        self.options = options
        self.root = Path(os.path.realpath(tempfile.mkdtemp(prefix="zc-conformance-")))
        config = self.root / "config"
        self.host: dict[str, str] = {
            "WORKSPACE": str(self.root / "workspace"),
            "CONFIG_DIR": str(config),
            "DATA_DIR": str(config / "data"),
            "HOME": str(self.root / "home"),
            "FIXTURES": os.path.realpath(sc.fixtures),
            "PYTHON": os.path.realpath(sys.executable),
            "RELAY": str(RELAY_SCRIPT),
        }
        self.bindings: dict[str, JSON] = {}
        self.history: dict[str, deque[str]] = {"acp": deque(maxlen=HISTORY)}
        self.agent: AgentProcess | None = None
        self.peers: dict[str, Peer] = {}
        self.peer_headers: Mapping[str, str] | None = None  # of the last message taken
        self.exit_seen = False
        self.env: dict[str, str] = {}
        self.exchange = JudgedExchange(sc)  # [TX-LINT-03] the official schema judges too
        self.stderr_offset = 0

    # -- lifecycle ---------------------------------------------------------

    def execute(self) -> ScenarioResult:
        try:
            self._prepare()
            self._start_agent()
            for frame in self.sc.frames:
                self._check_pollution(frame)
                self._do_frame(frame)
            self._ending()
            self._quiescence()
            return self._result(PASS)
        except NotApplicable as exc:
            return _not_applicable(self.sc, exc.lacking)
        except Failed as failed:
            return self._fail(failed.info)
        except (PlaceholderError, PeerError, OSError) as exc:
            return self._result(ERROR, report=f"{self.sc.display}: {exc}")
        finally:
            self._cleanup()

    def _prepare(self) -> None:
        """[TX-HOST-03] [TX-HOST-05] fresh directories and the IUT environment."""
        setup = self.sc.setup
        Path(self.host["HOME"]).mkdir()
        config = Path(self.host["CONFIG_DIR"])
        config.mkdir()
        if (src := support_path(setup.get("config_dir"), self.sc.fixtures)) is not None:
            shutil.copytree(src, config, dirs_exist_ok=True)
        text = setup.get("config")
        if isinstance(text, dict):
            cfg_path = support_path(text.get("path"), self.sc.fixtures)
            text = cfg_path.read_text(encoding="utf-8") if cfg_path else None
        for name, channel in self.sc.channels.items():
            peer = start_peer(channel, self.options.timeout_scale)
            self.peers[name] = peer
            self.history[name] = deque(maxlen=HISTORY)
            self.host[peer.placeholder] = peer.value
        if isinstance(text, str):
            toml = substitute_host_text(text, self.host, escape=True)
            (config / "config.toml").write_text(toml, encoding="utf-8")
        model = support_path(setup.get("model"), self.sc.fixtures)
        if model is not None:
            self._install_model(model)
        workspace = Path(self.host["WORKSPACE"])
        if (src := support_path(setup.get("workspace"), self.sc.fixtures)) is not None:
            shutil.copytree(src, workspace)
        else:
            workspace.mkdir()
        self.env = self._environment()

    def _install_model(self, model: Path) -> None:
        config = Path(self.host["CONFIG_DIR"])
        for old in ("model.json", "model.toml"):
            (config / old).unlink(missing_ok=True)
        target = config / ("model.toml" if model.suffix == ".toml" else "model.json")
        shutil.copyfile(model, target)
        self.model_script = str(target)

    def _environment(self) -> dict[str, str]:
        """[TX-HOST-02] built from nothing but the listed variables."""
        env = {"PATH": os.environ.get("PATH", os.defpath)}
        for name in ("PYTHONPATH", *self.options.pass_env):
            if name in os.environ:
                env[name] = os.environ[name]
        env |= {
            "HOME": self.host["HOME"],
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TZ": "UTC",
            "ZEROCLAW_CONFIG_DIR": self.host["CONFIG_DIR"],
            "ZEROCLAW_DATA_DIR": self.host["DATA_DIR"],
            "ZEROCLAW_CONFORMANCE": "1",
        }
        if getattr(self, "model_script", None):
            env["ZEROCLAW_CONFORMANCE_MODEL_SCRIPT"] = self.model_script
        extra = self.sc.setup.get("env")
        if isinstance(extra, dict):
            for name, value in extra.items():
                if isinstance(value, str):
                    env[name] = substitute_host_text(value, self.host)
        env |= dict(self.options.env)
        return env

    def _start_agent(self) -> None:
        argv = shlex.split(self.options.agent)
        stderr = self.root / "stderr.log"
        self.stderr_offset = stderr.stat().st_size if stderr.exists() else 0
        self.agent = AgentProcess(argv, self.env, Path(self.host["WORKSPACE"]), stderr)
        self.exit_seen = False

    def _cleanup(self) -> None:
        if self.agent is not None:
            self.agent.finish()
        for peer in self.peers.values():
            peer.stop()
        if self.options.keep:
            print(f"kept {self.sc.id}: {self.root}", file=sys.stderr)
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- helpers -----------------------------------------------------------

    def _deadline(self, frame: Frame | None, default: float) -> float:
        within = frame.mods.get("within") if frame is not None else None
        seconds = default
        if isinstance(within, Real):
            seconds = float(within.value)
        elif isinstance(within, int) and not isinstance(within, bool):
            seconds = float(within)
        return time.monotonic() + seconds * self.options.timeout_scale

    def _iut(self) -> AgentProcess:
        assert self.agent is not None
        return self.agent

    def _check_pollution(self, frame: Frame | None) -> None:
        polluted = self._iut().polluted
        if polluted is not None:
            raise self._pollution(frame, polluted)

    def _pollution(self, frame: Frame | None, event: Pollution) -> Failed:
        # [TX-FLOW-05] quote the offending bytes
        return failure("stdout-pollution", frame, f"{event.why}: {event.raw[:300]!r}")

    def _next_acp(self, frame: Frame | None, deadline: float) -> Message:
        iut = self._iut()
        try:
            event = iut.events.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            raise failure("timeout", frame, "no message before the deadline") from None
        if isinstance(event, Pollution):
            raise self._pollution(frame, event)
        if isinstance(event, StdoutClosed):
            iut.events.put(event)
            status = iut.wait(self.sc.timeout_exit * self.options.timeout_scale)
            raise failure("unexpected-exit", frame, f"the IUT closed stdout ({_how(status)})")
        self.history["acp"].append("<-- " + event.text)
        if self.exchange.received(event.value, frame):
            self._judge_capabilities()
        return event

    def _judge_capabilities(self) -> None:
        """[TX-NEEDS-03] the initialize answer says which capability needs are met."""
        needs = capability_needs(self.sc.needs)
        lacking = missing(needs, self.options.hooks, self.exchange.capabilities)
        if lacking:
            raise NotApplicable(lacking)

    def _next_peer(self, frame: Frame, deadline: float) -> JSON:
        peer = self.peers[frame.ch]
        try:
            value, self.peer_headers = peer.next_message(max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            raise failure("timeout", frame, "no message before the deadline") from None
        except PeerFailure as exc:  # [TX-RUN-06] the peer refused what the IUT sent instead
            raise failure(exc.reason, frame, str(exc)) from None
        self.history[frame.ch].append("--> " + dumps(value))
        return value

    def _ctx(self, frame: Frame | None = None) -> MatchContext:
        patterns = self.sc.ignore + ((frame_ignore(frame) or ()) if frame is not None else ())
        ignore = [split_pointer(p) for p in patterns]
        return MatchContext(self.host, self.bindings, ignore)

    # -- frames ------------------------------------------------------------

    def _do_frame(self, frame: Frame) -> None:
        handler = {
            "note": lambda f: None,
            "send": self._send,
            "send_raw": self._send_raw,
            "expect": self._expect,
            "expect_unordered": self._expect_unordered,
            "do": self._do,
            "expect_exit": self._expect_exit,
            "expect_stderr": self._expect_stderr,
        }[frame.verb]
        handler(frame)

    def _send(self, frame: Frame) -> None:
        text = dumps(substitute(frame.value, self.host, self.bindings))
        self._write(frame, (text + "\n").encode("utf-8", "surrogatepass"), text)

    def _send_raw(self, frame: Frame) -> None:
        raw = frame.value if isinstance(frame.value, str) else ""
        if frame.mods.get("encoding") == "base64":
            data = base64.b64decode(raw)
        else:
            sent = substitute(raw, self.host, self.bindings)
            data = (sent if isinstance(sent, str) else dumps(sent)).encode("utf-8", "surrogatepass")
        if frame.mods.get("newline", True) is not False:
            data += b"\n"
        self._write(frame, data, "(raw) " + data.decode("utf-8", "replace").rstrip("\n"))

    def _write(self, frame: Frame, data: bytes, shown: str) -> None:
        if frame.ch != "acp":
            peer = self.peers[frame.ch]
            self.history[frame.ch].append("<-- " + shown)
            if isinstance(peer, StdioPeer):
                peer.send(data, str(frame.mods.get("stream", "stdout")))
                return
            http = substitute(frame.mods.get("http"), self.host, self.bindings)
            deadline = self._deadline(frame, self.sc.timeout_expect)
            try:  # [TX-PEER-07] [TX-PEER-09]
                peer.deliver(frame.verb, data, http, deadline)
            except PeerFailure as exc:
                raise failure(exc.reason, frame, str(exc)) from None
            return
        self.history["acp"].append("--> " + shown)
        self.exchange.sent(data)
        if not self._iut().write(data):
            status = self._iut().wait(self.sc.timeout_exit * self.options.timeout_scale)
            raise failure("unexpected-exit", frame, f"the IUT stopped reading ({_how(status)})")

    def _expect(self, frame: Frame) -> None:
        deadline = self._deadline(frame, self.sc.timeout_expect)
        if frame.ch == "acp":
            actual = self._next_acp(frame, deadline).value
        else:
            actual = self._next_peer(frame, deadline)
        miss = match(frame.value, actual, self._ctx(frame))
        if miss is None and frame.ch != "acp":  # [TX-PEER-08] request headers, when listed
            miss = match_headers(frame.mods.get("http"), self.peer_headers, self._ctx())
        if miss is not None:
            raise failure(
                "mismatch",
                frame,
                f"{miss.reason} at {miss.pointer or '(root)'}",
                mismatch=miss,
                expected=frame.value,
                actual=actual,
                has_messages=True,
            )

    def _expect_unordered(self, frame: Frame) -> None:
        values = frame.value if isinstance(frame.value, list) else []
        deadline = self._deadline(frame, self.sc.timeout_expect)
        actual: list[JSON] = []
        for _ in values:
            if frame.ch == "acp":
                actual.append(self._next_acp(frame, deadline).value)
            else:
                actual.append(self._next_peer(frame, deadline))
        result = match_unordered(values, actual, self._ctx())
        if result.complete:
            return
        pairs = ", ".join(
            f"value {i + 1} -> message {j + 1}" for i, j in enumerate(result.assignment)
        )
        raise failure(
            "mismatch",
            frame,
            f"no assignment matches; best: {pairs or 'none'}",
            mismatch=result.mismatch,
            expected=values,
            actual=actual,
            has_messages=True,
        )

    def _do(self, frame: Frame) -> None:
        action = frame.value
        if frame.ch != "acp":
            peer = self.peers[frame.ch]
            if action == "close_input":
                peer.close_output()
            elif action == "kill":
                status = frame.mods.get("status")
                peer.kill(status if isinstance(status, int) else None)
            elif action == "sleep_ms":
                self._sleep(frame)
            return
        if action == "close_input":
            self._iut().close_input()
        elif action == "kill":
            self._iut().kill()
            self.exit_seen = True
        elif action == "sleep_ms":
            self._sleep(frame)
        elif action == "restart":
            self._restart(frame)

    def _sleep(self, frame: Frame) -> None:
        ms = frame.mods.get("ms")
        # [TX-FRAME-09] [TX-RUN-11] the one deliberate wait of the runner
        time.sleep((ms if isinstance(ms, int) else 0) / 1000)

    def _restart(self, frame: Frame) -> None:
        """[TX-FRAME-07] orderly stop, empty queue, same directories, new process."""
        iut = self._iut()
        if iut.returncode is None:
            iut.close_input()
            status = iut.wait(self.sc.timeout_exit * self.options.timeout_scale)
            if status is None:
                raise failure("no-exit-on-eof", frame, "the IUT did not exit before restart")
            if status != 0:
                raise failure("exit-status", frame, f"before restart: {_how(status)}")
        self._drain_quiet(frame)
        iut.finish()
        model = support_path(frame.mods.get("model"), self.sc.fixtures)
        if model is not None:
            self._install_model(model)
        self._start_agent()

    def _expect_exit(self, frame: Frame) -> None:
        deadline = self._deadline(frame, self.sc.timeout_exit)
        if frame.ch != "acp":
            try:
                self.peers[frame.ch].eofs.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                raise failure("timeout", frame, "the IUT did not end its session") from None
            return
        status = self._iut().wait(deadline - time.monotonic())
        if status is None:
            raise failure("timeout", frame, "the IUT did not exit before the deadline")
        self.exit_seen = True
        if status != frame.value:
            raise failure("exit-status", frame, f"expected exit {frame.value}, {_how(status)}")

    def _expect_stderr(self, frame: Frame) -> None:
        """[TX-STDERR-01] the line patterns match the stderr of the exited IUT, in order."""
        lines = stderr_lines(self.root / "stderr.log", self.stderr_offset)
        patterns = frame.value if isinstance(frame.value, list) else []
        only = frame.mods.get("only") is True
        unmatched, ctx = match_stderr(patterns, lines, self._ctx, only)
        if ctx is not None:
            self.bindings.update(ctx.bindings)
            return
        what = "every line, one to one" if only else "lines in order"
        raise failure(
            "stderr-mismatch",
            frame,
            f"stderr does not match {what}; first unmatched pattern: {unmatched[0]}",
            extra=["stderr patterns:", *(f"  {p}" for p in map(dumps, patterns))],
        )

    # -- ending and quiescence ---------------------------------------------

    def _ending(self) -> None:
        """[TX-FLOW-07] close stdin and require exit 0, unless the IUT already exited.

        An ``acp`` scenario does not judge the exit ([TX-BARRIER-03]): base ACP says
        nothing about end of input. When it is settled it ends with the barrier.
        """
        iut = self._iut()
        scale = self.options.timeout_scale
        if self.sc.profile == "acp":
            if iut.returncode is None:
                settled = self.exchange.settled() and not iut.input_closed
                if settled and self.options.barrier:
                    self._barrier()
                iut.close_input()
                if iut.wait(BARRIER_EXIT * scale) is None:
                    iut.kill()
            self.exit_seen = True
            return
        if iut.returncode is None:
            iut.close_input()
            status = iut.wait(self.sc.timeout_exit * scale)
            if status is None:
                iut.kill()
                raise failure("no-exit-on-eof", None, "the IUT did not exit after stdin EOF")
        else:
            status = iut.returncode
            if self.exit_seen:
                return
        if status != 0:
            raise failure("exit-status", None, f"expected exit 0, {_how(status)}")

    def _barrier(self) -> None:
        """[TX-BARRIER-01] [TX-BARRIER-02] nothing arrives before the barrier's answer."""
        scale = self.options.timeout_scale
        seconds = self.sc.timeout_expect * scale
        early = await_barrier(self._iut(), self.history["acp"], seconds, BARRIER_GRACE * scale)
        if early:
            raise failure(
                "unexpected-message",
                None,
                f"{len(early)} message(s) before the barrier's answer",
                extra=["left-over messages:", *("  acp: " + m for m in early)],
            )

    def _quiescence(self) -> None:
        """[TX-FLOW-08] after exit and stdout EOF, every queue must be empty."""
        self._drain_quiet(None)

    def _drain_quiet(self, frame: Frame | None) -> None:
        iut = self._iut()
        if not iut.join_reader(self.sc.timeout_exit * self.options.timeout_scale):
            iut.kill()
            iut.join_reader(self.sc.timeout_exit * self.options.timeout_scale)
        left: list[str] = []
        for event in iut.queued():
            if isinstance(event, Pollution):
                raise self._pollution(frame, event)
            if isinstance(event, Message):
                left.append("acp: " + event.text)
        for name, peer in self.peers.items():
            left += [f"{name}: {dumps(v)}" for v in peer.drain()]
        if left:
            raise failure(
                "unexpected-message",
                frame,
                f"{len(left)} message(s) left over",
                extra=["left-over messages:", *("  " + m for m in left)],
            )

    # -- results -----------------------------------------------------------

    def _result(
        self,
        status: str,
        reason: str | None = None,
        line: int | None = None,
        pointer: str | None = None,
        report: str = "",
    ) -> ScenarioResult:
        return _verdict(self.sc, status, reason=reason, line=line, pointer=pointer, report=report)

    def _fail(self, info: FailureInfo) -> ScenarioResult:
        """[TX-RUN-05] close input, wait, kill; then write the report ([TX-REPORT-01]).

        Nothing is judged any more, so the wait is short: an agent that does not
        exit on end of input costs a second, not the exit deadline.
        """
        iut = self.agent
        if iut is not None:
            iut.close_input()
            limit = min(self.sc.timeout_exit, BARRIER_EXIT) * self.options.timeout_scale
            if iut.wait(limit) is None:
                iut.kill()
            iut.join_reader(1.0)
            for event in iut.queued():
                if isinstance(event, Message):
                    self.history["acp"].append("<-- (not expected yet) " + event.text)
        report = render_failure(
            scenario=self.sc.id,
            description=self.sc.description,
            display=self.sc.display,
            failure=info,
            bindings=self.bindings,
            history=self.history,
            stderr_tail=self._stderr_tail(),
            host=self.host,
        )
        pointer = info.mismatch.pointer if info.mismatch is not None else None
        return _verdict(
            self.sc,
            FAIL,
            reason=info.reason,
            line=info.line,
            pointer=pointer,
            report=report,
            detail=info.message,
        )

    def _stderr_tail(self) -> list[str]:
        try:
            data = (self.root / "stderr.log").read_bytes()
        except OSError:
            return []
        return data.decode("utf-8", "replace").splitlines()[-STDERR_TAIL:]


def _how(status: int | None) -> str:
    if status is None:
        return "still running"
    if status < 0:
        # [TX-FRAME-10] a death by signal matches no integer
        return f"terminated by signal {-status}"
    return f"exit status {status}"
