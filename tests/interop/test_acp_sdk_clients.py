"""The official ACP Python SDK client drives `python -m zeroclaw_ref acp` (DESIGN.md §11.3).

The SDK is asyncio-based, which is allowed here and never in the package. Each test runs its
coroutine with `asyncio.run`; every await is bounded by `bounded()` (10 s), a safety net that
fails with what was awaited, the raw traffic and the agent's stderr — never a timed assertion.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import pytest

WAIT = 10.0
CANCELLED_SUFFIX = "[turn cancelled via client]"
T = TypeVar("T")


@dataclass
class Recorder:
    """The SDK client object: collects updates, and the raw wire trace through an observer."""

    chunks: dict[str, list[str]] = field(default_factory=dict)
    updates: list[tuple[str, str]] = field(default_factory=list)
    first_chunk: asyncio.Event = field(default_factory=asyncio.Event)
    # The wire in arrival order, plus ("mark", ...) entries the test adds before each prompt.
    trace: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    stderr_path: Path | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        kind = str(update.session_update)
        self.updates.append((session_id, kind))
        if kind == "agent_message_chunk" and update.content.type == "text":
            self.chunks.setdefault(session_id, []).append(update.content.text)
            self.first_chunk.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"the demo provider must not ask for permission: {kwargs}")

    def observe(self, event: Any) -> None:
        self.trace.append((str(event.direction.value), event.message))

    def mark_turn_start(self) -> None:
        self.trace.append(("mark", {"turn": "start"}))

    def raw_result(self, request_id: int) -> dict[str, Any]:
        for direction, message in self.trace:
            if (
                direction == "incoming"
                and message.get("id") == request_id
                and "method" not in message
            ):
                result = message.get("result")
                assert isinstance(result, dict), self.explain(f"no result for id {request_id}")
                return result
        raise AssertionError(self.explain(f"no response with id {request_id}"))

    def last_request_id(self, method: str) -> int:
        ids = [
            m["id"]
            for d, m in self.trace
            if d == "outgoing" and m.get("method") == method and "id" in m
        ]
        assert ids, self.explain(f"no {method} request sent")
        return int(ids[-1])

    def updates_outside_turns(self) -> list[dict[str, Any]]:
        """session/update notifications that arrived when no prompt was open (ACP-UPD-25)."""
        open_prompts: set[Any] = set()
        pending_start = False
        stray: list[dict[str, Any]] = []
        for direction, message in self.trace:
            if direction == "mark":
                pending_start = True
            elif direction == "outgoing" and message.get("method") == "session/prompt":
                open_prompts.add(message.get("id"))
                pending_start = False
            elif direction == "incoming" and message.get("method") == "session/update":
                if not open_prompts and not pending_start:
                    stray.append(message)
            elif direction == "incoming" and "method" not in message:
                open_prompts.discard(message.get("id"))
        return stray

    def explain(self, what: str) -> str:
        wire = "\n".join(
            f"{d:>8} {json.dumps(m)[:300]}"
            for d, m in self.trace[-30:]
            if not (d == "incoming" and m.get("method") == "session/update")
        )
        stderr = ""
        if self.stderr_path is not None and self.stderr_path.exists():
            stderr = self.stderr_path.read_text("utf-8", "replace")[-3000:]
        traffic = f"--- recent traffic (updates elided) ---\n{wire}"
        return f"{what}\n{traffic}\n--- agent stderr ---\n{stderr}"


async def bounded(recorder: Recorder, awaitable: Awaitable[T], what: str) -> T:
    try:
        return await asyncio.wait_for(awaitable, WAIT)
    except TimeoutError:
        raise AssertionError(
            recorder.explain(f"timed out after {WAIT:.0f} s waiting for {what}")
        ) from None


def agent_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    config_dir = home / "config"
    config_dir.mkdir(parents=True)
    return {"HOME": str(home), "ZEROCLAW_CONFIG_DIR": str(config_dir), "LANG": "C.UTF-8"}


Scenario = Callable[[ModuleType, Any, Recorder, str], Awaitable[None]]


async def drive(acp: ModuleType, tmp_path: Path, scenario: Scenario) -> tuple[Recorder, int]:
    """Spawn the agent under the SDK client, initialize, open a session, run `scenario`."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    recorder = Recorder(stderr_path=tmp_path / "agent.stderr")
    with recorder.stderr_path.open("wb") as stderr:
        async with acp.spawn_agent_process(
            recorder,
            sys.executable,
            "-m",
            "zeroclaw_ref",
            "acp",
            env=agent_env(tmp_path),
            cwd=workspace,
            transport_kwargs={"limit": 50 * 1024 * 1024, "stderr": stderr.fileno()},
            observers=[recorder.observe],
        ) as (conn, process):
            init = await bounded(
                recorder,
                conn.initialize(
                    protocol_version=1,
                    client_capabilities=acp.schema.ClientCapabilities(),
                    client_info=acp.schema.Implementation(name="zeroclaw-ref-tests", version="0"),
                ),
                "the initialize result",
            )
            assert init.protocol_version == 1, recorder.explain("protocolVersion is not 1")
            session = await bounded(
                recorder,
                conn.new_session(cwd=str(workspace), mcp_servers=[]),
                "the session/new result",
            )
            assert session.session_id, recorder.explain("empty sessionId")
            await scenario(acp, conn, recorder, session.session_id)
        # Leaving the block closed stdin and waited (the SDK escalates to SIGTERM after 2 s).
        returncode = await bounded(recorder, process.wait(), "the agent to exit")
    return recorder, returncode


async def prompt_once(
    acp: ModuleType, conn: Any, recorder: Recorder, session_id: str, text: str
) -> tuple[Any, list[str], dict[str, Any]]:
    recorder.chunks[session_id] = []
    recorder.mark_turn_start()
    response = await bounded(
        recorder,
        conn.prompt(session_id=session_id, prompt=[acp.text_block(text)]),
        f"the result of prompt {text!r}",
    )
    raw = recorder.raw_result(recorder.last_request_id("session/prompt"))
    return response, list(recorder.chunks[session_id]), raw


def assert_clean(recorder: Recorder, returncode: int, caplog: pytest.LogCaptureFixture) -> None:
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not errors, recorder.explain(f"the SDK client logged problems: {errors}")
    stray = recorder.updates_outside_turns()
    assert not stray, recorder.explain(f"session/update outside a prompt turn: {stray}")
    assert returncode == 0, recorder.explain(f"agent exited with {returncode} after stdin closed")


@pytest.mark.req("ACP-TR-01", "ACP-INIT-02", "ACP-PROMPT-27", "ACP-UPD-01", "ACP-UPD-25")
def test_python_sdk_client_streams_three_echo_prompts_ending_in_end_turn(
    require_peer: Callable[[str], ModuleType],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    acp = require_peer("acp-python-sdk")
    texts = ["hello", "second prompt, with punctuation!", "třetí — unicode ✓"]

    async def scenario(acp: ModuleType, conn: Any, recorder: Recorder, session_id: str) -> None:
        for text in texts:
            response, chunks, raw = await prompt_once(acp, conn, recorder, session_id, text)
            assert response.stop_reason == "end_turn", recorder.explain(f"prompt {text!r}")
            assert chunks, recorder.explain(f"no agent_message_chunk for {text!r}")
            assert "".join(chunks) == f"Echo: {text}", recorder.explain(f"chunks {chunks!r}")
            assert raw.get("content") == "".join(chunks), recorder.explain(f"result {raw!r}")
            assert raw.get("sessionId") == session_id, recorder.explain(f"result {raw!r}")

    caplog.set_level(logging.WARNING)
    recorder, returncode = asyncio.run(drive(acp, tmp_path, scenario))
    assert_clean(recorder, returncode, caplog)


@pytest.mark.req(
    "ACP-CANCEL-01", "ACP-CANCEL-03", "ACP-CANCEL-05", "ACP-CANCEL-06", "ACP-PROMPT-28"
)
def test_python_sdk_client_cancel_during_slow_prompt_yields_cancelled_then_session_continues(
    require_peer: Callable[[str], ModuleType],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    acp = require_peer("acp-python-sdk")

    async def scenario(acp: ModuleType, conn: Any, recorder: Recorder, session_id: str) -> None:
        recorder.chunks[session_id] = []
        recorder.mark_turn_start()
        turn = asyncio.ensure_future(
            conn.prompt(session_id=session_id, prompt=[acp.text_block("slow: 200")])
        )
        await bounded(recorder, recorder.first_chunk.wait(), "the first tick of the slow prompt")
        await bounded(recorder, conn.cancel(session_id=session_id), "sending session/cancel")
        response = await bounded(recorder, turn, "the result of the cancelled prompt")
        assert response.stop_reason == "cancelled", recorder.explain("cancel not reported")
        chunks = list(recorder.chunks[session_id])
        assert 0 < len(chunks) < 200, recorder.explain(f"{len(chunks)} ticks before cancel")
        assert all(c.startswith("tick ") for c in chunks), recorder.explain(f"{chunks[:5]!r}")
        raw = recorder.raw_result(recorder.last_request_id("session/prompt"))
        expected = "".join(chunks) + "\n\n" + CANCELLED_SUFFIX
        assert raw.get("content") == expected, recorder.explain(f"result {raw!r}")

        # The session stays usable once the cancelled result has been written (ACP-CANCEL-06).
        response, chunks, _ = await prompt_once(acp, conn, recorder, session_id, "hello")
        assert response.stop_reason == "end_turn", recorder.explain("prompt after cancel")
        assert "".join(chunks) == "Echo: hello", recorder.explain(f"chunks {chunks!r}")

    caplog.set_level(logging.WARNING)
    recorder, returncode = asyncio.run(drive(acp, tmp_path, scenario))
    assert_clean(recorder, returncode, caplog)
