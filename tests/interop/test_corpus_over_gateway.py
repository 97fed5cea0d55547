"""The whole golden-transcript corpus, run through the gateway and the bridge (acp.md §13).

`tests/helpers/gateway_agent.py` starts `python -m zeroclaw_ref gateway` for each scenario and
relays the runner's stdio through `python -m zeroclaw_ref acp-bridge`, so every scenario that
the stdio agent passes is judged again over WebSocket `/acp`. The scenarios that cannot pass
over that transport are listed, each with the rule that makes the difference, in
`tests/transcripts/gateway-expected-failures.txt`; the runner exits non-zero on any other
failure, on an unexpected pass and on a stale entry (transcripts.md TX-RUN-07, TX-XFAIL-04).

About a minute with two jobs: each scenario starts three interpreters instead of one.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "tests" / "helpers" / "gateway_agent.py"
XFAIL = REPO / "tests" / "transcripts" / "gateway-expected-failures.txt"
RUN_TIMEOUT_SECS = 900.0  # a safety net far above the normal run time


@pytest.mark.req(
    "ACP-GW-01",  # the gateway serves ACP at /acp and announces its ephemeral port
    "ACP-GW-02",  # the upgrade is authenticated by the bridge's `Authorization: Bearer`
    "ACP-GW-03",  # ... against a configured digest (set by an environment override)
    "ACP-GW-09",  # one frame, one message, both ways, for every scenario's traffic
    "ACP-GW-10",  # a close ends the server like end of input, without the drain (an xfail pins it)
    "ACP-BR-01",  # the bridge relays the whole conversation between stdio and /acp
    "ACP-BR-04",  # it connects where `[gateway]` points
    "ACP-BR-05",  # with the token from ZEROCLAW_ACP_BRIDGE_TOKEN
    "ACP-BR-09",  # line to frame, frame to line, stdout holding protocol messages only
    "ACP-BR-10",  # end of input closes the socket and exits 0 (exit-on-end-of-input)
)
def test_the_corpus_passes_over_gateway_and_bridge() -> None:
    agent = f"{shlex.quote(sys.executable)} {shlex.quote(str(LAUNCHER))}"
    argv = [
        sys.executable,
        "-m",
        "zeroclaw_ref.conformance",
        "run",
        "--agent",
        agent,
        "--expected-failures",
        str(XFAIL),
        "--jobs",
        "2",
        "--hooks",
        "all",  # the reference behind the gateway honours every hook
        "fixtures/acp",
        "fixtures/mcp",
    ]
    done = subprocess.run(
        argv, cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_SECS, check=False
    )
    # Everything but the passes: the failures with their reports, xfails, stale entries, summary.
    shown = "\n".join(line for line in done.stdout.splitlines() if "] pass " not in line)
    assert done.returncode == 0, f"{shown}\n{done.stderr}"
