"""ACP start-up: spawn the agent → its `initialize` result has been read. One sample per process."""

from __future__ import annotations

import time
from pathlib import Path

from client import INITIALIZE_PARAMS, AgentSpec, RawClient

NAME = "acp_startup"
DESCRIPTION = "spawn → initialize answered"


def rounds(quick: bool) -> tuple[int, int]:
    """(warm-up rounds discarded, measured rounds); each round runs every agent once."""
    return (1, 6) if quick else (2, 30)


def sample(spec: AgentSpec, cwd: Path, quick: bool) -> list[float]:
    start = time.perf_counter()
    client = RawClient(spec, cwd)
    try:
        client.request("initialize", INITIALIZE_PARAMS)
        elapsed = time.perf_counter() - start
    finally:
        client.close()
    return [elapsed]
