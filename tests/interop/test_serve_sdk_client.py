"""The official ACP Python SDK client is judged by `serve` (transcripts.md §14).

`python -m zeroclaw_ref.conformance serve SCENARIO` plays the agent; the SDK's client
drives it through the scenario's conversation the way an editor would, with its own
request ids, and serve must exit 0. The SDK is asyncio-based, allowed here and never in
the package; every await is bounded by `WAIT`, a safety net and never a timed assertion.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import pytest

REPO = Path(__file__).resolve().parents[2]
WAIT = 15.0
T = TypeVar("T")


@dataclass
class Client:
    """The SDK client object: answers permission requests, records updates."""

    acp: ModuleType
    option: str = "allow-once"
    cancel_first: bool = False
    conn: Any = None
    updates: list[str] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    permission_requests: list[str] = field(default_factory=list)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        kind = str(update.session_update)
        self.updates.append(kind)
        if kind == "agent_message_chunk" and update.content.type == "text":
            self.chunks.append(update.content.text)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        self.permission_requests.append(str(tool_call.title))
        schema = self.acp.schema
        if self.cancel_first:
            # base ACP: cancel the turn, then answer the pending request with cancelled
            await self.conn.cancel(session_id=session_id)
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled")
            )
        assert self.option in [o.option_id for o in options]
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(option_id=self.option, outcome="selected")
        )


async def bounded(awaitable: Awaitable[T], what: str, stderr: Path) -> T:
    try:
        return await asyncio.wait_for(awaitable, WAIT)
    except TimeoutError:
        report = stderr.read_text("utf-8", "replace") if stderr.exists() else ""
        raise AssertionError(f"timed out waiting for {what}; serve said:\n{report}") from None


Conversation = Callable[[ModuleType, Any, Client, str, Path], Awaitable[None]]


async def drive(
    acp: ModuleType,
    tmp_path: Path,
    scenario: str,
    client: Client,
    talk: Conversation,
    idle_timeout: str = "10",
) -> tuple[int, str]:
    """Spawn serve under the SDK client, initialize, open a session, then `talk`."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    stderr_path = tmp_path / "serve.stderr"
    with stderr_path.open("wb") as stderr:
        async with acp.spawn_agent_process(
            client,
            sys.executable,
            "-m",
            "zeroclaw_ref.conformance",
            "serve",
            scenario,
            "--fixtures",
            str(REPO / "fixtures"),
            "--idle-timeout",
            idle_timeout,
            cwd=REPO,
            transport_kwargs={"limit": 50 * 1024 * 1024, "stderr": stderr.fileno()},
        ) as (conn, process):
            client.conn = conn
            init = await bounded(
                conn.initialize(
                    protocol_version=1,
                    client_capabilities=acp.schema.ClientCapabilities(),
                    client_info=acp.schema.Implementation(name="zeroclaw-ref-tests", version="0"),
                ),
                "the initialize result",
                stderr_path,
            )
            assert init.protocol_version == 1
            session = await bounded(
                conn.new_session(cwd=str(workspace), mcp_servers=[]),
                "the session/new result",
                stderr_path,
            )
            assert session.session_id
            await talk(acp, conn, client, session.session_id, stderr_path)
        # leaving the block closed serve's stdin: serve gives its verdict and exits
        status = await bounded(process.wait(), "serve to exit", stderr_path)
    return status, stderr_path.read_text("utf-8", "replace")


@pytest.mark.req("TX-SERVE-01", "TX-SERVE-03", "TX-SERVE-05", "TX-SERVE-06", "TX-SERVE-08")
def test_the_sdk_client_passes_a_prompt_with_an_allowed_permission_request(
    require_peer: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    acp = require_peer("acp-python-sdk")
    client = Client(acp)

    async def talk(acp: ModuleType, conn: Any, client: Client, sid: str, err: Path) -> None:
        response = await bounded(
            conn.prompt(session_id=sid, prompt=[acp.text_block("Say hello from the shell.")]),
            "the prompt result",
            err,
        )
        assert response.stop_reason == "end_turn"

    scenario = "acp/permission/allow-once-runs-the-tool"
    status, report = asyncio.run(drive(acp, tmp_path, scenario, client, talk))
    assert status == 0, report
    assert report.startswith(f"PASS  {scenario}"), report
    assert client.permission_requests == ["Approve shell?"]
    assert client.chunks == ["The shell printed hello."]


@pytest.mark.req("TX-SERVE-05", "TX-SERVE-06")
def test_the_sdk_client_passes_a_cancel_during_a_permission_request(
    require_peer: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    acp = require_peer("acp-python-sdk")
    client = Client(acp, cancel_first=True)

    async def talk(acp: ModuleType, conn: Any, client: Client, sid: str, err: Path) -> None:
        first = await bounded(
            conn.prompt(session_id=sid, prompt=[acp.text_block("Say hello from the shell.")]),
            "the cancelled prompt's result",
            err,
        )
        assert first.stop_reason == "cancelled"
        second = await bounded(
            conn.prompt(session_id=sid, prompt=[acp.text_block("Are you still there?")]),
            "the second prompt's result",
            err,
        )
        assert second.stop_reason == "end_turn"

    scenario = "acp/cancel/cancel-during-permission-request"
    status, report = asyncio.run(drive(acp, tmp_path, scenario, client, talk))
    assert status == 0, report
    assert client.chunks == ["Yes, still here."]


@pytest.mark.req("TX-SERVE-06", "TX-SERVE-07")
def test_serve_fails_the_sdk_client_that_rejects_instead_of_allowing(
    require_peer: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    acp = require_peer("acp-python-sdk")
    client = Client(acp, option="reject-once")

    async def talk(acp: ModuleType, conn: Any, client: Client, sid: str, err: Path) -> None:
        # serve stops writing at the mismatch and leaves at its idle timeout, which ends
        # the connection under the pending prompt
        with pytest.raises(ConnectionError):
            await bounded(
                conn.prompt(session_id=sid, prompt=[acp.text_block("Say hello from the shell.")]),
                "the prompt to end with the connection",
                err,
            )

    scenario = "acp/permission/allow-once-runs-the-tool"
    status, report = asyncio.run(drive(acp, tmp_path, scenario, client, talk, "1"))
    assert status == 1, report
    assert "pointer: /result/outcome/optionId" in report, report
