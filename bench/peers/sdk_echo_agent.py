"""Benchmark anchor: an echo agent on the official ACP Python SDK (agent-client-protocol 0.12.1).

`prompt` sends one `agent_message_chunk` with `Echo: <text>` and returns `end_turn`, the same
observable behaviour as our `demo` provider for a short prompt. Test/bench-only: asyncio here is
fine, and the package never imports this file.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import acp
from acp.schema import AgentCapabilities, Implementation


class EchoAgent(acp.Agent):
    def __init__(self) -> None:
        self._conn: acp.Client | None = None

    def on_connect(self, conn: acp.Client) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: object) -> acp.InitializeResponse:
        return acp.InitializeResponse(
            protocol_version=1,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="sdk-echo-agent", version="0.12.1"),
        )

    async def new_session(self, cwd: str, **kwargs: object) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id=str(uuid.uuid4()))

    async def prompt(
        self, session_id: str, prompt: list[Any], **kwargs: object
    ) -> acp.PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        assert self._conn is not None, "on_connect runs before any request"
        await self._conn.session_update(
            session_id=session_id, update=acp.update_agent_message_text(f"Echo: {text}")
        )
        return acp.PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: object) -> None:
        return None


def main() -> None:
    asyncio.run(acp.run_agent(EchoAgent()))


if __name__ == "__main__":
    main()
