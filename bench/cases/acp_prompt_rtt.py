"""ACP prompt round trip: `session/prompt` "hello" written → its result read.

One process per sample set: `initialize`, three `session/new`, then prompts to the three
sessions in turn, timed one by one. The client is `BlockingClient` (no thread of its own on the
message path) in a process of its own, so it times the agent and not the client's hand-offs.
Our agent runs with its default store, so each of its turns is committed before its result
(ACP-STORE-09); the SDK echo agent stores nothing. The first rounds of each process are
warm-ups and discarded.
"""

from __future__ import annotations

import time
from pathlib import Path

from client import INITIALIZE_PARAMS, AgentSpec, BlockingClient

NAME = "acp_prompt_rtt"
DESCRIPTION = "session/prompt 'hello' → result, 3 sessions per process, blocking client"
SESSIONS = 3


def rounds(quick: bool) -> tuple[int, int]:
    """(warm-up processes discarded, measured processes); each round runs every agent once."""
    return (1, 2) if quick else (1, 6)


def _prompts(quick: bool) -> tuple[int, int]:
    """(warm-up prompts discarded, measured prompts) per session within one process."""
    return (10, 50) if quick else (20, 200)


def sample(spec: AgentSpec, cwd: Path, quick: bool) -> list[float]:
    warm, measured = _prompts(quick)
    samples: list[float] = []
    with BlockingClient(spec, cwd) as client:
        client.request("initialize", INITIALIZE_PARAMS)
        sessions = [
            client.request("session/new", {"cwd": str(cwd), "mcpServers": []})["result"][
                "sessionId"
            ]
            for _ in range(SESSIONS)
        ]
        prompt = [{"type": "text", "text": "hello"}]
        for i in range(warm + measured):
            for session_id in sessions:
                params = {"sessionId": session_id, "prompt": prompt}
                start = time.perf_counter()
                response = client.request("session/prompt", params)
                elapsed = time.perf_counter() - start
                stop = response["result"].get("stopReason")
                if stop != "end_turn":
                    raise RuntimeError(f"{spec.name}: prompt ended with {stop!r}, not end_turn")
                if i >= warm:
                    samples.append(elapsed)
        if client.notifications < SESSIONS * (warm + measured):
            raise RuntimeError(f"{spec.name}: not every prompt streamed a session/update")
    return samples
