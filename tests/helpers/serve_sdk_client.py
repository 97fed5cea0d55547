"""Drive servable scenarios with the official ACP Python SDK client (test-only).

``show --json SCENARIO`` lists the steps a client must take (serve-client-format:
requests, notifications, answers to the agent's requests, each with the conditions
that must hold first); tests/helpers/serve_plans.py fetches them in-process, with the
``binds`` and ``final`` state a harness needs. :func:`play` starts an agent command
under the SDK's ``spawn_agent_process`` -- ``serve SCENARIO``, or the ``serve
--connect PATH`` of a ``serve --suite`` coordinator (:func:`play_suite`: one agent
process, one connection, per scenario) -- and takes those steps the way an editor
would: its own request ids, its own cwd (a temporary workspace holding the scenario's
``client_files``), real files for ``fs/*`` and real subprocesses for ``terminal/*``.
Once the agent has written everything the scenario holds (``final``) the client closes
its output at once, so serve ends the scenario on EOF instead of its idle timeout
(TX-SERVE-08). serve judges what the SDK writes; the verdict is serve's exit status and
report (single scenario) or the coordinator's ``--json`` report (suite).

The SDK is asyncio-based, which is allowed in tests only (never in the package).
Every wait is bounded by ``WAIT``: a safety net that turns a hang into a failure
naming what was awaited, never a timed assertion.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from tests.helpers import serve_plans

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
WAIT = 20.0
T = TypeVar("T")
PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::[a-z0-9]+)?\}")
# What the driver offers: the SDK's stable client surface. Not offered, so the scenarios
# needing them are not-applicable (SDK_CANNOT_ADVERTISE says why):
SDK_CANNOT_ADVERTISE = {
    # 0.12.1 routes elicitation/create only with use_unstable_protocol (else it warns that the
    # method is unstable and refuses it); the driver plays the SDK's stable client
    "elicitation.form": "SDK 0.12.1 serves elicitation/create only as unstable protocol",
    "elicitation.url": "SDK 0.12.1 serves elicitation/create only as unstable protocol",
    # its ClientSessionCapabilities model has no such member and drops it from initialize
    "session.notices": "SDK 0.12.1's ClientCapabilities model drops session.notices",
    "session.compaction": "SDK 0.12.1's ClientCapabilities model drops session.compaction",
}
FULL_CAPABILITIES: dict[str, Any] = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
}


class Stuck(Exception):
    """A step's conditions did not hold within WAIT (serve stopped, or the driver is wrong)."""


def servable_ids() -> list[str]:
    """The scenarios ``serve --suite`` plays, in its order (``list --servable --json``)."""
    return serve_plans.servable([])


@dataclass
class Pending:
    """One request of the agent to the client, answered when its step comes."""

    method: str
    msg_id: Any
    params: dict[str, Any]
    future: asyncio.Future[Any]


@dataclass
class Wire:
    """What crossed the connection, counted from the SDK's raw stream observer."""

    updates: int = 0
    requests: int = 0
    outgoing: int = 0
    last_id: Any = None  # the id of the client's last request
    responses: dict[str, Any] = field(default_factory=dict)  # json(id) -> raw response
    closed: bool = False  # the agent process ended: nothing more will come
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def close(self) -> None:
        self.closed = True
        self.changed.set()

    def observe(self, event: Any) -> None:
        message = event.message
        if event.direction.value == "outgoing":
            self.outgoing += 1
            if "method" in message and "id" in message:
                self.last_id = message["id"]
        elif "method" in message:
            if message["method"] == "session/update":
                self.updates += 1
            elif "id" in message:
                self.requests += 1
        elif "id" in message:
            self.responses[json.dumps(message["id"])] = message
        self.changed.set()


class Terminal:
    """A real subprocess behind one ``terminal/create``."""

    def __init__(self, proc: asyncio.subprocess.Process, limit: int | None) -> None:
        self.proc = proc
        self.limit = limit
        self.data = bytearray()
        self.truncated = False
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(65536):
            self.data += chunk
            if self.limit is not None and len(self.data) > self.limit:
                # ACP: keep the end, cut at a character boundary (drop continuation bytes)
                del self.data[: len(self.data) - self.limit]
                while self.data and self.data[0] & 0xC0 == 0x80:
                    del self.data[0]
                self.truncated = True

    def exit_status(self) -> dict[str, Any] | None:
        code = self.proc.returncode
        if code is None:
            return None
        if code < 0:
            return {"exitCode": None, "signal": signal.Signals(-code).name}
        return {"exitCode": code, "signal": None}

    async def wait(self) -> dict[str, Any]:
        await self.proc.wait()
        await self.reader
        status = self.exit_status()
        assert status is not None
        return status

    def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()


class Harness:
    """The client object of the SDK plus the step walker."""

    def __init__(
        self,
        acp: ModuleType,
        workspace: Path,
        capabilities: dict[str, Any],
        wrong: Callable[[str, Any], Any] | None = None,
    ) -> None:
        self.acp = acp
        self.wrong = wrong  # a deliberately wrong client: rewrites its answers
        self.workspace = workspace
        self.capabilities = capabilities
        self.conn: Any = None
        self.wire = Wire()
        self.pending: list[Pending] = []
        self.terminals: dict[str, Terminal] = {}
        self.bindings: dict[str, Any] = {"WORKSPACE": str(workspace)}
        self.tasks: dict[int, asyncio.Task[Any]] = {}  # frame -> request task
        # (the SDK's id of a sent request, {pointer in its response: placeholder it defines})
        self.unbound: list[tuple[Any, dict[str, str]]] = []

    # -- the SDK's Client interface: every agent request waits for its step ----------

    async def _asked(self, method: str, **params: Any) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending.append(Pending(method, None, params, future))
        self.wire.changed.set()
        return await future

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None  # counted on the wire: the SDK drops variants it does not know

    async def request_permission(self, **kw: Any) -> Any:
        return await self._asked("session/request_permission", **kw)

    async def read_text_file(self, **kw: Any) -> Any:
        return await self._asked("fs/read_text_file", **kw)

    async def write_text_file(self, **kw: Any) -> Any:
        return await self._asked("fs/write_text_file", **kw)

    async def create_terminal(self, **kw: Any) -> Any:
        return await self._asked("terminal/create", **kw)

    async def terminal_output(self, **kw: Any) -> Any:
        return await self._asked("terminal/output", **kw)

    async def wait_for_terminal_exit(self, **kw: Any) -> Any:
        return await self._asked("terminal/wait_for_exit", **kw)

    async def kill_terminal(self, **kw: Any) -> Any:
        return await self._asked("terminal/kill", **kw)

    async def release_terminal(self, **kw: Any) -> Any:
        return await self._asked("terminal/release", **kw)

    def on_connect(self, conn: Any) -> None:
        return None

    # -- waiting -------------------------------------------------------------------

    async def until(self, ready: Callable[[], bool], what: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT
        while not ready():
            self.wire.changed.clear()
            if self.wire.closed:
                raise Stuck(f"the agent ended the connection while the client waited for {what}")
            left = deadline - loop.time()
            if left <= 0:
                raise Stuck(f"timed out waiting for {what}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wire.changed.wait(), min(left, 0.5))

    async def after(self, step: dict[str, Any]) -> None:
        cond = step.get("after", {})
        want_updates, want_requests = cond.get("updates", 0), cond.get("requests", 0)
        results = [self.tasks[f] for f in cond.get("results", []) if f in self.tasks]
        await self.until(
            lambda: (
                self.wire.updates >= want_updates
                and self.wire.requests >= want_requests
                and all(t.done() for t in results)
            ),
            f"frame {step['frame']}'s conditions {cond}",
        )

    # -- placeholders --------------------------------------------------------------

    def fill(self, value: Any) -> Any:
        self.bind_answered()
        return self._fill(value)

    def _fill(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self._fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._fill(v) for v in value]
        if isinstance(value, str):
            whole = PLACEHOLDER.fullmatch(value)
            if whole:
                return self.bindings[whole.group(1)]
            return PLACEHOLDER.sub(lambda m: str(self.bindings[m.group(1)]), value)
        return value

    # -- steps -----------------------------------------------------------------------

    async def request(self, step: dict[str, Any], binds: dict[str, dict[str, str]]) -> None:
        method, params = step["method"], self.fill(step.get("params") or {})
        sent = self.wire.outgoing
        task = asyncio.ensure_future(self._call(method, params))
        task.add_done_callback(lambda _: self.wire.changed.set())
        self.tasks[step["frame"]] = task
        await self.until(lambda: self.wire.outgoing > sent or task.done(), f"{method} to be sent")
        if self.wire.outgoing == sent:
            task.result()  # the SDK refused to send it: raise why
        defines = binds.get(str(step["frame"]))
        if defines:
            self.unbound.append((self.wire.last_id, defines))

    def bind_answered(self) -> None:
        """Bind the placeholders serve's answers define, once their raw response came."""
        for item in list(self.unbound):
            raw = self.wire.responses.get(json.dumps(item[0]))
            if raw is None:
                continue
            self.unbound.remove(item)
            for pointer, name in item[1].items():
                found, value = _at(raw, pointer)
                if found and name not in self.bindings:
                    self.bindings[name] = value

    async def _call(self, method: str, params: dict[str, Any]) -> Any:
        schema, conn = self.acp.schema, self.conn
        meta = params.get("_meta") or {}
        if method == "initialize":
            return await conn.initialize(
                protocol_version=params.get("protocolVersion", 1),
                client_capabilities=schema.ClientCapabilities.model_validate(self.capabilities),
                client_info=schema.Implementation(name="acp-python-sdk-harness", version="0.12.1"),
            )
        if method == "session/new":
            return await conn.new_session(cwd=str(self.workspace), mcp_servers=[], **meta)
        if method == "session/load":
            return await conn.load_session(
                cwd=str(self.workspace), session_id=params["sessionId"], mcp_servers=[]
            )
        if method == "session/resume":
            return await conn.resume_session(
                cwd=str(self.workspace), session_id=params["sessionId"], mcp_servers=[]
            )
        if method == "session/prompt":
            request = schema.PromptRequest.model_validate(params)
            return await conn.prompt(session_id=request.session_id, prompt=request.prompt, **meta)
        if method == "session/close":
            return await conn.close_session(session_id=params["sessionId"])
        if method == "session/list":
            return await conn.list_sessions(cwd=params.get("cwd"), cursor=params.get("cursor"))
        if method == "session/set_mode":
            return await conn.set_session_mode(
                session_id=params["sessionId"], mode_id=params["modeId"]
            )
        if method == "session/set_config_option":
            return await conn.set_config_option(
                config_id=params["configId"], session_id=params["sessionId"], value=params["value"]
            )
        return await conn._conn.send_request(method, params)  # any other method, verbatim

    async def notification(self, step: dict[str, Any]) -> None:
        method, params = step["method"], self.fill(step.get("params") or {})
        if method == "session/cancel":
            await self.conn.cancel(session_id=params["sessionId"])
        else:
            await self.conn._conn.send_notification(method, params)

    async def response(self, step: dict[str, Any]) -> None:
        method = step["method"]
        await self.until(
            lambda: any(p.method == method for p in self.pending), f"the agent's {method} request"
        )
        pending = next(p for p in self.pending if p.method == method)
        self.pending.remove(pending)
        sent = self.wire.outgoing
        if step.get("auto"):
            try:
                pending.future.set_result(await self.compute(pending))
            except self.acp.RequestError as exc:
                pending.future.set_exception(exc)
        elif "error" in step:
            error = self.fill(step["error"])
            pending.future.set_exception(
                self.acp.RequestError(error["code"], error["message"], error.get("data"))
            )
        else:
            answer = self.fill(step["result"])
            pending.future.set_result(answer if self.wrong is None else self.wrong(method, answer))
        # the answer must be on the wire before the next step sends anything
        await self.until(lambda: self.wire.outgoing > sent, f"the answer to {method}")

    # -- the client's own fs and terminals ---------------------------------------------

    async def compute(self, p: Pending) -> Any:
        schema, kw = self.acp.schema, p.params
        if p.method == "fs/read_text_file":
            path = Path(kw["path"])
            if not path.is_file():
                raise self.acp.RequestError(-32002, "Resource not found", {"path": str(path)})
            lines = path.read_text("utf-8").splitlines(keepends=True)
            start = max((kw.get("line") or 1) - 1, 0)
            limit = kw.get("limit")
            chosen = lines[start : start + limit] if limit is not None else lines[start:]
            return schema.ReadTextFileResponse(content="".join(chosen))
        if p.method == "fs/write_text_file":
            Path(kw["path"]).write_text(kw["content"], "utf-8")
            return schema.WriteTextFileResponse()
        if p.method == "terminal/create":
            env = dict(os.environ)
            env.update({v.name: v.value for v in kw.get("env") or []})
            proc = await asyncio.create_subprocess_exec(
                kw["command"],
                *(kw.get("args") or []),
                cwd=kw.get("cwd") or str(self.workspace),
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
            tid = f"term-{len(self.terminals) + 1}"
            self.terminals[tid] = Terminal(proc, kw.get("output_byte_limit"))
            return schema.CreateTerminalResponse(terminal_id=tid)
        term = self.terminals[kw["terminal_id"]]
        if p.method == "terminal/output":
            status = term.exit_status()
            if status is not None:
                await term.reader  # an exited command's output is complete
            return schema.TerminalOutputResponse(
                output=term.data.decode("utf-8", "replace"),
                truncated=term.truncated,
                exit_status=None if status is None else schema.TerminalExitStatus(**_snake(status)),
            )
        if p.method == "terminal/wait_for_exit":
            status = await asyncio.wait_for(term.wait(), WAIT)
            return schema.WaitForTerminalExitResponse(**_snake(status))
        if p.method == "terminal/kill":
            term.kill()
            return schema.KillTerminalResponse()
        if p.method == "terminal/release":
            term.kill()
            del self.terminals[kw["terminal_id"]]
            return schema.ReleaseTerminalResponse()
        raise self.acp.RequestError(-32601, f"Method not found: {p.method}")

    async def cleanup(self) -> None:
        for term in self.terminals.values():
            term.kill()
        for term in self.terminals.values():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(term.wait(), 5)


def _snake(status: dict[str, Any]) -> dict[str, Any]:
    return {"exit_code": status["exitCode"], "signal": status["signal"]}


def _at(doc: Any, pointer: str) -> tuple[bool, Any]:
    """(found, value) at a JSON pointer."""
    node = doc
    for raw in pointer.split("/")[1:]:
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return False, None
    return True, node


# the SDK's own model of each request or notification a client sends
SDK_MODELS = {
    "initialize": "InitializeRequest",
    "session/new": "NewSessionRequest",
    "session/load": "LoadSessionRequest",
    "session/resume": "ResumeSessionRequest",
    "session/close": "CloseSessionRequest",
    "session/list": "ListSessionsRequest",
    "session/prompt": "PromptRequest",
    "session/cancel": "CancelNotification",
    "session/set_mode": "SetSessionModeRequest",
}


def _dummy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _dummy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_dummy(v) for v in value]
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: "/ws" if m.group(1) == "WORKSPACE" else "x", value)
    return value


def advertisable(acp: ModuleType, capabilities: dict[str, Any], need: str) -> bool:
    """Whether ``need`` survives the SDK's ClientCapabilities model (what it really sends)."""
    sent = acp.schema.ClientCapabilities.model_validate(capabilities)
    value: Any = sent.model_dump(by_alias=True, exclude_none=True)
    for part in need.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return value is True or isinstance(value, dict)


def unwritable(acp: ModuleType, shown: dict[str, Any]) -> str | None:
    """Why the SDK client could not play this scenario faithfully, or None.

    A typed client only writes what its schema allows: no batch or scalar lines, no
    schema-invalid params (a prompt that is a string or a number, a missing sessionId), and
    no answer to a request it was never sent. Since ZC-SERVE-10 no servable scenario asks for
    any of those, so the suite test holds this to finding nothing.
    """
    lines = (FIXTURES / f"{shown['scenario']}.jsonl").read_text("utf-8").split("\n")[1:-1]
    for line in lines:
        frame = json.loads(line)
        sent = frame.get("send", {})
        if "send_raw" in frame or not isinstance(sent, dict):
            return "the client would have to write a line that is not a JSON-RPC object"
    for step in shown["steps"]:
        if step["kind"] == "response" and not step.get("method"):
            return f"frame {step['frame']}: a client never answers a request it was not sent"
        name = SDK_MODELS.get(step.get("method", ""))
        if step["kind"] == "response" or name is None:
            continue
        try:
            getattr(acp.schema, name).model_validate(_dummy(step.get("params")))
        except Exception as exc:  # pydantic's ValidationError: the SDK would refuse it
            first = " ".join(str(exc).splitlines()[:2])
            method = step["method"]
            return f"frame {step['frame']}: the SDK client refuses these {method} params ({first})"
    return None


@dataclass
class Outcome:
    """What one agent process left: its exit status, its stderr (serve SCENARIO's report;
    nothing under a suite, whose verdicts are the coordinator's), and the driver's problem."""

    scenario: str
    status: int
    report: str
    problem: str = ""

    @property
    def verdict(self) -> str:
        return self.report.split(" ", 1)[0].strip() if self.report else "NONE"


async def _bounded(awaitable: Awaitable[T], seconds: float = WAIT) -> T:
    return await asyncio.wait_for(awaitable, seconds)


def serve_command(scenario: str, idle_timeout: str = "5") -> list[str]:
    """The single-scenario agent command: ``serve SCENARIO``."""
    return [
        sys.executable,
        "-m",
        "zeroclaw_ref.conformance",
        "serve",
        scenario,
        "--fixtures",
        str(FIXTURES),
        "--idle-timeout",
        idle_timeout,
    ]


async def play(
    acp: ModuleType,
    shown: dict[str, Any] | str,
    workdir: Path,
    agent: Sequence[str] | None = None,
    capabilities: dict[str, Any] | None = None,
    idle_timeout: str = "5",
    wrong: Callable[[str, Any], Any] | None = None,
) -> Outcome:
    """Play one scenario with the SDK client against ``agent`` (default: ``serve SCENARIO``).

    ``shown`` is the scenario's plan (serve_plans.show) or its id."""
    if isinstance(shown, str):
        shown = serve_plans.show(shown)
    scenario = str(shown["scenario"])
    command = list(agent) if agent is not None else serve_command(scenario, idle_timeout)
    steps: list[dict[str, Any]] = shown["steps"]
    workspace = workdir / "workspace"
    workspace.mkdir(parents=True)
    for name, content in (shown.get("client_files") or {}).items():
        target = workspace / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, "utf-8")
    binds: dict[str, dict[str, str]] = shown.get("binds") or {}
    harness = Harness(acp, workspace.resolve(), capabilities or FULL_CAPABILITIES, wrong)
    stderr_path = workdir / "agent.stderr"
    problem = ""
    with stderr_path.open("wb") as stderr:
        async with acp.spawn_agent_process(
            harness,
            command[0],
            *command[1:],
            cwd=REPO,
            env=dict(os.environ),
            transport_kwargs={"limit": 50 * 1024 * 1024, "stderr": stderr.fileno()},
        ) as (conn, process):
            harness.conn = conn
            conn._conn.add_observer(harness.wire.observe)
            ended = asyncio.ensure_future(process.wait())
            ended.add_done_callback(lambda _: harness.wire.close())
            try:
                for step in steps:
                    await harness.after(step)
                    if step["kind"] == "request":
                        await harness.request(step, binds)
                    elif step["kind"] == "notification":
                        await harness.notification(step)
                    else:
                        await harness.response(step)
                # [TX-SERVE-08] leave as soon as the agent wrote its last frame: serve ends the
                # scenario on our EOF, not after --idle-timeout
                await harness.after({"frame": "the end", "after": shown["final"]})
            except (Stuck, KeyError, ConnectionError, TimeoutError) as exc:
                problem = f"{type(exc).__name__}: {exc}"
            finally:
                await harness.cleanup()
                for task in harness.tasks.values():
                    task.cancel()
        status = await _bounded(process.wait(), 60)
    report = stderr_path.read_text("utf-8", "replace")
    return Outcome(scenario, status, report, problem)


async def play_suite(
    acp: ModuleType, shows: Sequence[dict[str, Any]], agent: Sequence[str], workdir: Path
) -> list[Outcome]:
    """Play each scenario in turn through one agent command (``serve --suite``'s ``serve
    --connect PATH``): the client restarts its agent per scenario, as ZC-SERVE-09 expects."""
    outcomes = []
    for index, shown in enumerate(shows):
        outcomes.append(await play(acp, shown, workdir / f"{index:04d}", agent=agent))
    return outcomes


def play_sync(acp: ModuleType, scenario: str, workdir: Path, **kw: Any) -> Outcome:
    return asyncio.run(play(acp, scenario, workdir, **kw))
