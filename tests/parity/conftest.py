"""Shared pieces of the parity harness (policy.md §8.1).

- `capturing()`: every execution `resolve()` mints while it is open, through the resolve
  observer (POL-RESOLVE-17), closed when it ends;
- front-door drivers: `AcpDriver` (the ACP server in-process, fed line by line),
  `GatewayDriver` (an in-process gateway on an ephemeral loopback port, called over HTTP with
  its bearer token: `POST /api/chat`, `GET /api/tools`), `run_cli` (the `agent` command's
  `run_agent`, one-shot), `run_cron` (a stored job made due under a frozen clock, then
  `run_due`);
- `serial_opens()`: every device path handed to pyserial while it is open;
- `write_config()`: a configuration directory with scripted-model files; `GATEWAY_TOML` is the
  `[gateway]`/`[scheduler]` part every parity configuration carries;
- `mcp_server_toml()`: a `[[mcp.servers]]` entry running the stdio MCP test server
  (`mcp_parity_server.py`, the scripted server of `tests/helpers/mcp_server.py` serving named
  tools, its resources `test://doc/0..2` and its prompt `greet`) with `sys.executable`, so
  every path that connects MCP really starts, lists and reads a server.
"""

from __future__ import annotations

import hashlib
import io
import json
import queue
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import serial
from freezegun import freeze_time

from zeroclaw_ref.acp.server import AcpServer
from zeroclaw_ref.cli.agent import choose_agent, run_agent
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.config.store import ConfigStore
from zeroclaw_ref.core.clock import SystemClock
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.cron.scheduler import run_due
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import add_resolve_observer, remove_resolve_observer
from zeroclaw_ref.gateway.request import GatewayDeps
from zeroclaw_ref.gateway.server import Gateway
from zeroclaw_ref.store.cron import CronJob, CronStore

WAIT_SECS = 10.0  # bound of every wait for the in-process ACP server
CRON_T0 = "2026-03-02T10:00:00Z"
EVERY_MINUTE: JSONObject = {"kind": "every", "every_ms": 60000}
GATEWAY_TOKEN = "zc_parity_gateway_token"

# The gateway authenticates with a paired token (POL-PATH-12), and runs no scheduler thread:
# the cron path is driven by `run_cron` alone, under a frozen clock.
GATEWAY_TOML = f"""
[scheduler]
enabled = false

[gateway]
paired_tokens = ["{hashlib.sha256(GATEWAY_TOKEN.encode()).hexdigest()}"]
"""


# --- configuration ---------------------------------------------------------------------------

MCP_TEST_SERVER = Path(__file__).with_name("mcp_parity_server.py")


def mcp_server_toml(name: str, tools: list[str], pinned: list[str]) -> str:
    """One `[[mcp.servers]]` entry: the stdio test server serving `tools`, pinning `pinned`."""
    args = [str(MCP_TEST_SERVER), "--tools", ",".join(tools)]
    return f"""
[[mcp.servers]]
name = "{name}"
command = {json.dumps(sys.executable)}
args = {json.dumps(args)}
pinned_resources = {json.dumps(pinned)}
"""


def write_config(
    config_dir: Path, data_dir: Path, toml: str, scripts: dict[str, list[JSONObject]]
) -> ConfigSnapshot:
    """Write `config.toml` and one `<name>.json` script per entry, then load the snapshot."""
    config_dir.mkdir(parents=True, exist_ok=True)
    for name, turns in scripts.items():
        (config_dir / f"{name}.json").write_text(json.dumps({"turns": turns}), encoding="utf-8")
    (config_dir / "config.toml").write_text(toml, encoding="utf-8")
    return load_config(config_dir, data_dir, {})


def write_skill(workspace: Path, name: str, instructions: str, manifest: str) -> None:
    """A skill laid out as POL-SKILL-01 says: `<agent workspace>/skills/<name>/`."""
    folder = workspace / "skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(instructions, encoding="utf-8")
    (folder / "SKILL.toml").write_text(manifest, encoding="utf-8")


# --- capturing minted executions -------------------------------------------------------------


@dataclass
class Captured:
    executions: list[ResolvedAgentExecution] = field(default_factory=list)

    def __call__(self, execution: ResolvedAgentExecution) -> None:
        self.executions.append(execution)

    def of(self, alias: str, path: str | None = None) -> list[ResolvedAgentExecution]:
        return [
            e
            for e in self.executions
            if e.agent_alias == alias and (path is None or e.path == path)
        ]

    def one(self, alias: str, path: str | None = None) -> ResolvedAgentExecution:
        found = self.of(alias, path)
        assert len(found) == 1, f"expected one execution of {alias} on {path}: {found}"
        return found[0]


@contextmanager
def capturing() -> Iterator[Captured]:
    """Record every execution minted inside the block; close them all when it ends."""
    captured = Captured()
    add_resolve_observer(captured)
    try:
        yield captured
    finally:
        remove_resolve_observer(captured)
        for execution in captured.executions:
            execution.close()  # idempotent (POL-RESOLVE-15)


def requests_of(execution: ResolvedAgentExecution) -> list[JSONObject]:
    """What the execution's own scripted provider was sent (config.md CFG-PROV-15)."""
    requests: list[JSONObject] = execution.model.provider.requests
    return requests


def tool_results(execution: ResolvedAgentExecution) -> dict[str, str]:
    """Tool name -> the result text the model was given, from the last request sent."""
    last = requests_of(execution)[-1]
    messages: list[dict[str, Any]] = last["messages"]  # type: ignore[assignment]
    return {m["name"]: m["content"] for m in messages if m.get("role") == "tool"}


# --- the acp front door: the ACP server in-process -------------------------------------------

PermissionAnswer = Callable[[dict[str, Any]], dict[str, Any]]


def reject_once(request: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "reject-once"}}


# One id space for every surface the harness drives. The surfaces share one data directory (as
# one installation's processes do), and records there are named by run id (delegations/<run>.json);
# in production each process draws random ids, which never meet, but separate sequential
# factories would hand two surfaces the same run id and one record would overwrite the other.
WORLD_IDS = SequentialIds()


class AcpDriver:
    """An `AcpServer` driven through `endpoint.dispatch`, as the stdio reader would."""

    def __init__(self, config: ConfigSnapshot) -> None:
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.permission_requests: list[dict[str, Any]] = []
        self.server = AcpServer(config, self._send_line, WORLD_IDS, SystemClock())
        self._next_id = 0

    def _send_line(self, line: str) -> None:
        self.inbox.put(json.loads(line))

    def call(
        self, method: str, params: JSONObject, answer: PermissionAnswer | None = None
    ) -> dict[str, Any]:
        """Send one request; answer permission requests with `answer` until the response."""
        self._next_id += 1
        msg_id = self._next_id
        request = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        self.server.endpoint.dispatch(json.dumps(request).encode())
        while True:
            try:
                message = self.inbox.get(timeout=WAIT_SECS)
            except queue.Empty:
                raise AssertionError(
                    f"no answer to {method} within {WAIT_SECS}s: {self.seen}"
                ) from None
            self.seen.append(message)
            if message.get("id") == msg_id and ("result" in message or "error" in message):
                return message
            if message.get("method") == "session/request_permission":
                self.permission_requests.append(message)
                assert answer is not None, f"unexpected permission request: {message}"
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message)}
                self.server.endpoint.dispatch(json.dumps(reply).encode())

    def new_session(self, alias: str, cwd: Path) -> str:
        response = self.call(
            "session/new", {"agentAlias": alias, "cwd": str(cwd), "mcpServers": []}
        )
        assert "result" in response, response
        return str(response["result"]["sessionId"])

    def prompt(
        self, session_id: str, text: str, answer: PermissionAnswer | None = None
    ) -> dict[str, Any]:
        return self.call("session/prompt", {"sessionId": session_id, "prompt": text}, answer)

    def close(self) -> None:
        self.server.shutdown(WAIT_SECS)


@contextmanager
def acp_driver(config: ConfigSnapshot) -> Iterator[AcpDriver]:
    driver = AcpDriver(config)
    try:
        yield driver
    finally:
        driver.close()


# --- the gateway front doors: gateway-chat and gateway-tools ---------------------------------


class GatewayDriver:
    """A `Gateway` on an ephemeral loopback port over the configuration's own directory."""

    def __init__(self, config: ConfigSnapshot) -> None:
        store = ConfigStore(config.config_dir, config.data_dir, {})
        self.announced: list[str] = []
        deps = GatewayDeps(store, WORLD_IDS, SystemClock(), choose_agent, self.announced.append)
        self.gateway = Gateway(deps, "127.0.0.1", 0)
        self.gateway.start()
        host, port = self.gateway.address
        self.base = f"http://{host}:{port}"
        self._auth = {"Authorization": f"Bearer {GATEWAY_TOKEN}"}

    def chat(self, alias: str | None, message: str) -> requests.Response:
        """`POST /api/chat` (path `gateway-chat`): one turn on a fresh execution."""
        body: dict[str, str] = {"message": message}
        if alias is not None:
            body["agent"] = alias
        return requests.post(
            f"{self.base}/api/chat", json=body, headers=self._auth, timeout=WAIT_SECS
        )

    def tools(self, alias: str) -> requests.Response:
        """`GET /api/tools?agent=<alias>` (path `gateway-tools`): the listing."""
        return requests.get(
            f"{self.base}/api/tools",
            params={"agent": alias},
            headers=self._auth,
            timeout=WAIT_SECS,
        )

    def close(self) -> None:
        self.gateway.close()


@contextmanager
def gateway_driver(config: ConfigSnapshot) -> Iterator[GatewayDriver]:
    driver = GatewayDriver(config)
    try:
        yield driver
    finally:
        driver.close()


@contextmanager
def serial_opens() -> Iterator[list[str]]:
    """Record every device path handed to pyserial inside the block (any thread)."""
    seen: list[str] = []
    real = serial.Serial

    def counting(path: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(path)
        return real(path, *args, **kwargs)

    serial.Serial = counting
    try:
        yield seen
    finally:
        serial.Serial = real


# --- the cli-run front door ------------------------------------------------------------------


@dataclass(frozen=True)
class CliRun:
    status: int
    stdout: str
    stderr: str


def run_cli(config: ConfigSnapshot, alias: str, message: str) -> CliRun:
    """`zeroclaw_ref agent --agent <alias> -m <message> --non-interactive` in-process."""
    stdin, stdout, stderr = io.StringIO(""), io.StringIO(), io.StringIO()
    status = run_agent(config, alias, message, True, stdin, stdout, stderr)
    return CliRun(status, stdout.getvalue(), stderr.getvalue())


# --- the cron front door ---------------------------------------------------------------------


def add_job(
    config: ConfigSnapshot, alias: str, prompt: str, allowed_tools: list[str] | None
) -> str:
    """Store an agent job of `alias`, due at CRON_T0; returns its id."""
    job_id = str(uuid.uuid4())
    job = CronJob(
        id=job_id,
        schedule=EVERY_MINUTE,
        agent=alias,
        name=None,
        prompt=prompt,
        allowed_tools=None if allowed_tools is None else tuple(allowed_tools),
        delete_after_run=False,
        approved=False,
        created_at=CRON_T0,
        next_run_at=CRON_T0,
    )
    store = CronStore.open(config.data_dir)
    try:
        assert store.add(job)
    finally:
        store.close()
    return job_id


def run_cron(
    config: ConfigSnapshot, alias: str, prompt: str, allowed_tools: list[str] | None
) -> list[tuple[str, str]]:
    """Make one job of `alias` due and run the due jobs of `alias` (`cron run-due --agent`)."""
    add_job(config, alias, prompt, allowed_tools)
    # The MCP client keeps real time: its deadlines (time.monotonic) must not stand still, or
    # a server started by the job would time out at once.
    with freeze_time(CRON_T0, ignore=["zeroclaw_ref.mcp"]):
        return run_due(config, agent=alias, ids=WORLD_IDS)
