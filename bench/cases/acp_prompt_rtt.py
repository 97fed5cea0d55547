"""ACP prompt round trip: after initialize + session/new, `session/prompt` "hello" → its result.

Many prompts per process; the first prompts of each process are warm-ups and discarded.
"""

from __future__ import annotations

import time
from pathlib import Path

from client import INITIALIZE_PARAMS, AgentSpec, RawClient

NAME = "acp_prompt_rtt"
DESCRIPTION = "session/prompt 'hello' → result, same process"


def rounds(quick: bool) -> tuple[int, int]:
    """(warm-up rounds discarded, measured rounds); each round runs every agent once."""
    return (1, 3) if quick else (1, 10)


def _prompts(quick: bool) -> tuple[int, int]:
    """(warm-up prompts discarded, measured prompts) within one process."""
    return (20, 100) if quick else (50, 400)


def sample(spec: AgentSpec, cwd: Path, quick: bool) -> list[float]:
    warm, measured = _prompts(quick)
    samples: list[float] = []
    with RawClient(spec, cwd) as client:
        client.request("initialize", INITIALIZE_PARAMS)
        session = client.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        params = {
            "sessionId": session["result"]["sessionId"],
            "prompt": [{"type": "text", "text": "hello"}],
        }
        for i in range(warm + measured):
            start = time.perf_counter()
            response = client.request("session/prompt", params)
            elapsed = time.perf_counter() - start
            stop = response["result"].get("stopReason")
            if stop != "end_turn":
                raise RuntimeError(f"{spec.name}: prompt ended with {stop!r}, not end_turn")
            if i >= warm:
                samples.append(elapsed)
        if client.notifications == 0:
            raise RuntimeError(f"{spec.name}: no session/update was streamed")
    return samples
