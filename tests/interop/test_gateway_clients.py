"""The official ACP Python SDK client drives `python -m zeroclaw_ref acp-bridge`, which relays to
a `python -m zeroclaw_ref gateway` subprocess (acp.md §13, DESIGN §11.3).

The SDK is asyncio-based, which tests may use; every await is bounded by `bounded()` (10 s), a
safety net that fails with what was awaited and both processes' stderr.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import pytest

WAIT = 10.0
TOKEN = "zc_interop_token"
GATEWAY = (sys.executable, "-m", "zeroclaw_ref", "gateway")
BRIDGE = (sys.executable, "-m", "zeroclaw_ref", "acp-bridge")
T = TypeVar("T")

CONFIG = """
[providers.demo]
kind = "demo"
model = "demo"
[risk_profiles.p]
[runtime_profiles.r]
[agents.a]
model_provider = "demo"
risk_profile = "p"
runtime_profile = "r"
[scheduler]
enabled = false
[gateway]
paired_tokens = ["{digest}"]
"""


@dataclass
class GatewayProcess:
    proc: subprocess.Popen[bytes]
    port: int
    stderr_path: Path


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW")}
    env.update({"HOME": str(home), "LANG": "C.UTF-8"})
    return env


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[GatewayProcess]:
    config_dir = tmp_path / "gateway"
    config_dir.mkdir()
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    (config_dir / "config.toml").write_text(CONFIG.format(digest=digest))
    stderr_path = tmp_path / "gateway.stderr"
    with stderr_path.open("wb") as stderr:
        proc = subprocess.Popen(
            [*GATEWAY, "--config-dir", str(config_dir), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=_clean_env(tmp_path),
        )
    lines: queue.Queue[bytes] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        first = lines.get(timeout=WAIT).decode().strip()
    except queue.Empty:
        proc.kill()
        pytest.fail(f"gateway did not print its address: {stderr_path.read_text()}")
    assert first.startswith("listening 127.0.0.1:"), first
    yield GatewayProcess(proc, int(first.rsplit(":", 1)[1]), stderr_path)
    proc.terminate()
    assert proc.wait(timeout=WAIT) == 0, stderr_path.read_text()


@dataclass
class Operator:
    """The SDK client object: records updates and answers permission requests."""

    answer: str = "allow-once"
    chunks: list[str] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    first_chunk: asyncio.Event = field(default_factory=asyncio.Event)
    acp: ModuleType | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if str(update.session_update) == "agent_message_chunk":
            self.chunks.append(update.content.text)
            self.first_chunk.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        assert self.acp is not None
        self.asked.append(str(tool_call.title))
        assert self.answer in [o.option_id for o in options]
        schema = self.acp.schema
        outcome = schema.AllowedOutcome(outcome="selected", option_id=self.answer)
        return schema.RequestPermissionResponse(outcome=outcome)


async def bounded(awaitable: Awaitable[T], what: str, explain: Callable[[], str]) -> T:
    try:
        return await asyncio.wait_for(awaitable, WAIT)
    except TimeoutError:
        raise AssertionError(
            f"timed out after {WAIT:.0f} s waiting for {what}\n{explain()}"
        ) from None


Scenario = Callable[[ModuleType, Any, Operator, str], Awaitable[None]]


async def drive(
    acp: ModuleType, tmp_path: Path, gw: GatewayProcess, scenario: Scenario
) -> tuple[Operator, int]:
    bridge_dir = tmp_path / "bridge"
    bridge_dir.mkdir()
    (bridge_dir / "config.toml").write_text(f"[gateway]\nport = {gw.port}\n")
    env = _clean_env(tmp_path)
    env["ZEROCLAW_ACP_BRIDGE_TOKEN"] = TOKEN
    operator = Operator(acp=acp)
    bridge_err = tmp_path / "bridge.stderr"

    def explain() -> str:
        return (
            f"--- bridge stderr ---\n{bridge_err.read_text('utf-8', 'replace')}\n"
            f"--- gateway stderr ---\n{gw.stderr_path.read_text('utf-8', 'replace')}"
        )

    with bridge_err.open("wb") as stderr:
        async with acp.spawn_agent_process(
            operator,
            sys.executable,
            "-m",
            "zeroclaw_ref",
            "acp-bridge",
            "--config-dir",
            str(bridge_dir),
            env=env,
            transport_kwargs={"limit": 50 * 1024 * 1024, "stderr": stderr.fileno()},
        ) as (conn, process):
            init = await bounded(
                conn.initialize(
                    protocol_version=1,
                    client_capabilities=acp.schema.ClientCapabilities(),
                    client_info=acp.schema.Implementation(name="gateway-tests", version="0"),
                ),
                "the initialize result",
                explain,
            )
            assert init.protocol_version == 1
            session = await bounded(
                conn.new_session(cwd=str(tmp_path), mcp_servers=[]), "session/new", explain
            )
            await scenario(acp, conn, operator, session.session_id)
        returncode = await bounded(process.wait(), "the bridge to exit", explain)
    return operator, returncode


@pytest.mark.req("ACP-BR-01", "ACP-BR-09", "ACP-BR-10", "ACP-GW-01")
def test_sdk_client_prompts_through_the_bridge(
    require_peer: Callable[[str], ModuleType], tmp_path: Path, gateway: GatewayProcess
) -> None:
    acp = require_peer("acp-python-sdk")

    async def scenario(acp: ModuleType, conn: Any, operator: Operator, session_id: str) -> None:
        response = await conn.prompt(session_id=session_id, prompt=[acp.text_block("hello")])
        assert response.stop_reason == "end_turn"
        assert "".join(operator.chunks) == "Echo: hello"

    _, returncode = asyncio.run(drive(acp, tmp_path, gateway, scenario))
    assert returncode == 0


@pytest.mark.req("ACP-PERM-01", "ACP-BR-09")
def test_sdk_client_answers_a_permission_request_through_the_bridge(
    require_peer: Callable[[str], ModuleType], tmp_path: Path, gateway: GatewayProcess
) -> None:
    acp = require_peer("acp-python-sdk")

    async def scenario(acp: ModuleType, conn: Any, operator: Operator, session_id: str) -> None:
        prompt = [acp.text_block(f"write: {tmp_path / 'out.txt'} hello")]
        response = await conn.prompt(session_id=session_id, prompt=prompt)
        assert response.stop_reason == "end_turn"
        assert len(operator.asked) == 1

    _, returncode = asyncio.run(drive(acp, tmp_path, gateway, scenario))
    assert (tmp_path / "out.txt").read_text() == "hello"
    assert returncode == 0


@pytest.mark.req("ACP-CANCEL-01", "ACP-BR-09")
def test_sdk_client_cancels_a_slow_prompt_through_the_bridge(
    require_peer: Callable[[str], ModuleType], tmp_path: Path, gateway: GatewayProcess
) -> None:
    acp = require_peer("acp-python-sdk")

    async def scenario(acp: ModuleType, conn: Any, operator: Operator, session_id: str) -> None:
        turn = asyncio.ensure_future(
            conn.prompt(session_id=session_id, prompt=[acp.text_block("slow: 200")])
        )
        await asyncio.wait_for(operator.first_chunk.wait(), WAIT)
        await conn.cancel(session_id=session_id)
        response = await asyncio.wait_for(turn, WAIT)
        assert response.stop_reason == "cancelled"
        again = await conn.prompt(session_id=session_id, prompt=[acp.text_block("hi")])
        assert again.stop_reason == "end_turn"

    _, returncode = asyncio.run(drive(acp, tmp_path, gateway, scenario))
    assert returncode == 0


@pytest.mark.req("ACP-BR-03", "ACP-BR-07", "ACP-BR-08", "ACP-BR-02")
def test_bridge_startup_errors_have_their_exact_texts(tmp_path: Path) -> None:
    def bridge(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        full = _clean_env(tmp_path)
        full.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "zeroclaw_ref", "acp-bridge", *args],
            input="",
            capture_output=True,
            text=True,
            env=full,
            timeout=60,
            check=False,
        )

    missing = bridge("--config-dir", str(tmp_path / "nowhere"))
    assert (missing.returncode, missing.stderr) == (
        1,
        "ERROR: config.toml not found.  Are you sure the bridge and ZeroClaw are running on the "
        "same host?  Tool use will not work remotely!\n",
    )
    assert bridge("--config-dir").stderr == "--config-dir requires a path value\n"
    refused_dir = tmp_path / "refused"
    refused_dir.mkdir()
    with __import__("socket").socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (refused_dir / "config.toml").write_text(f"[gateway]\nport = {port}\n")
    refused = bridge(f"--config-dir={refused_dir}", env={"ZEROCLAW_ACP_BRIDGE_TOKEN": "t"})
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"failed to connect to ws://127.0.0.1:{port}/acp: ")
    no_token = bridge(f"--config-dir={refused_dir}", env={"ZEROCLAW_ACP_PAIRING_CODE": ""})
    assert no_token.returncode == 1
    assert no_token.stderr.startswith(f"failed to connect to ws://127.0.0.1:{port}/acp")


@pytest.mark.req("ACP-BR-05", "ACP-BR-06", "ACP-BR-07", "ACP-BR-08", "ACP-GW-11")
def test_bridge_pairs_with_a_code_and_caches_the_token(tmp_path: Path) -> None:
    config_dir = tmp_path / "gw"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text(CONFIG.replace('"{digest}"', ""))
    err_path = tmp_path / "gw.stderr"
    with err_path.open("wb") as err:
        proc = subprocess.Popen(
            [*GATEWAY, "--config-dir", str(config_dir), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=err,
            env=_clean_env(tmp_path),
        )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().decode().strip().rsplit(":", 1)[1])
        bridge_dir = tmp_path / "bridge"
        bridge_dir.mkdir()
        (bridge_dir / "config.toml").write_text(f"[gateway]\nport = {port}\n")

        def bridge(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*BRIDGE, "--config-dir", str(bridge_dir), *args],
                input='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n',
                capture_output=True,
                text=True,
                env=_clean_env(tmp_path),
                timeout=60,
                check=False,
            )

        wrong = bridge("--pair-code", "not-the-code")
        assert (wrong.returncode, wrong.stderr.startswith("ERROR: Gateway pairing is active")) == (
            1,
            True,
        ), wrong.stderr
        code = err_path.read_text().split("Pairing code: ", 1)[1].split()[0]
        paired = bridge(f"--pair-code={code}")
        assert paired.returncode == 0, paired.stderr
        assert '"protocolVersion":1' in paired.stdout
        token_file = bridge_dir / "acp-bridge-token"
        assert token_file.stat().st_mode & 0o777 == 0o600
        token = token_file.read_text()
        assert token.endswith("\n")
        assert token.strip() not in (config_dir / "config.toml").read_text()
        cached = bridge()  # the cached token is reused; the code is gone
        assert cached.returncode == 0 and '"protocolVersion":1' in cached.stdout
    finally:
        proc.terminate()
        proc.wait(timeout=WAIT)


@pytest.mark.req("ACP-BR-10", "ACP-GW-10")
def test_bridge_exits_zero_when_the_gateway_goes_away(
    tmp_path: Path, gateway: GatewayProcess
) -> None:
    bridge_dir = tmp_path / "bridge"
    bridge_dir.mkdir()
    (bridge_dir / "config.toml").write_text(f"[gateway]\nport = {gateway.port}\n")
    env = _clean_env(tmp_path)
    env["ZEROCLAW_ACP_BRIDGE_TOKEN"] = TOKEN
    bridge = subprocess.Popen(
        [*BRIDGE, "--config-dir", str(bridge_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert bridge.stdin is not None and bridge.stdout is not None
    bridge.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n')
    bridge.stdin.flush()
    lines: queue.Queue[bytes] = queue.Queue()
    stdout = bridge.stdout
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    assert b'"protocolVersion":1' in lines.get(timeout=WAIT)
    gateway.proc.terminate()  # stdin of the bridge stays open: the server closes first
    try:
        assert bridge.wait(timeout=WAIT) == 0
    finally:
        bridge.kill()
        bridge.stdin.close()
