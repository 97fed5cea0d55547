"""`session/load` of a long session: a figure, not a ratio (the SDK echo agent stores nothing).

    python bench/acp_load.py [--messages 10000] [--repeat 5]

Builds a stored session of N ConversationMessages (N/2 demo turns, each with its logged
updates) directly through the store, then times, for a fresh agent process each time,
`session/load` from the request until its result, with every replayed update read by the
client. Prints median and maximum; exits 1 when the median misses the 1 s target (issue 4).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from client import AgentSpec, RawClient, agent_specs  # noqa: E402

from zeroclaw_ref.store.sessions import SessionStore  # noqa: E402

TARGET_SECS = 1.0


def build_session(data_dir: Path, workspace: Path, messages: int) -> str:
    store = SessionStore.open(data_dir)
    session_id = str(uuid.uuid4())
    now = "2026-01-01T00:00:00Z"
    store.insert_session(session_id, "default", str(workspace), now)
    for turn in range(messages // 2):
        text = f"message number {turn}"
        convo = [
            {"role": "user", "content": text},
            {"role": "assistant", "content": f"Echo: {text}"},
        ]
        updates = [
            {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}},
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": f"Echo: {text}"},
            },
        ]
        store.append_turn(session_id, json.dumps(convo), json.dumps(updates), None, now)
    store.close()
    return session_id


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        spec: AgentSpec = agent_specs(Path(scratch))[0]
        config_dir = Path(spec.env["ZEROCLAW_CONFIG_DIR"])
        workspace = Path(scratch) / "ws"
        workspace.mkdir()
        session_id = build_session(config_dir / "data", workspace, args.messages)
        samples = []
        for _ in range(args.repeat):
            client = RawClient(spec, workspace)
            try:
                start = time.perf_counter()
                client.request("session/load", {"sessionId": session_id})
                samples.append(time.perf_counter() - start)
                replayed = client.notifications
            finally:
                client.close()
    median = statistics.median(samples)
    print(
        f"session/load of {args.messages} messages: median {median * 1e3:.1f} ms, "
        f"max {max(samples) * 1e3:.1f} ms, n={len(samples)}, {replayed} updates replayed "
        f"(target < {TARGET_SECS:.0f} s: {'ok' if median < TARGET_SECS else 'MISSED'})"
    )
    return 0 if median < TARGET_SECS else 1


if __name__ == "__main__":
    raise SystemExit(main())
