"""The oracle judges agents that are not ours: the `acp` profile against the official SDKs' agents.

`python -m zeroclaw_ref.conformance run --profile acp` runs every base-ACP scenario (those true
of any agent on the ACP v1 stable schema) against three agents: an echo agent on the official
ACP Python SDK (bench/peers/sdk_echo_agent.py), one on the official TypeScript SDK
(tests/peers/ts_sdk_echo_agent.mjs) and ours. Each run passes the agent's pinned list of known
deviations (fixtures/expected-failures/<agent>.txt), so every other applicable scenario must
pass: the exit status is 0 and the counts per outcome are exactly the ones below. A scenario
that starts failing, a deviation that gets fixed (an unexpected pass) or a stale list entry
changes them. The peers skip locally when absent and fail in CI (ZEROCLAW_REF_REQUIRE_PEERS=1).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import require_peer

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
# A failing scenario waits out its 5 s deadline; bound the whole run generously.
RUN_TIMEOUT_S = 600


@dataclass(frozen=True)
class Agent:
    """One agent under test: how to start it and what its run must end with."""

    name: str  # also the name of its fixtures/expected-failures/<name>.txt
    command: Callable[[], str]
    counts: dict[str, int]


def _python_sdk_echo() -> str:
    require_peer("acp-python-sdk")
    script = REPO / "bench" / "peers" / "sdk_echo_agent.py"
    return shlex.join([sys.executable, str(script)])


def _typescript_sdk_echo() -> str:
    node = require_peer("node")
    # the path of .../node_modules/@agentclientprotocol/sdk/package.json
    package = require_peer("acp-typescript-sdk")
    assert isinstance(node, str) and isinstance(package, str)
    modules = Path(package).parents[2]
    return shlex.join([node, str(REPO / "tests" / "peers" / "ts_sdk_echo_agent.mjs"), str(modules)])


def _reference() -> str:
    return shlex.join([sys.executable, "-m", "zeroclaw_ref", "acp"])


AGENTS = (
    Agent(
        "acp-python-sdk-echo",
        _python_sdk_echo,
        {"pass": 52, "fail": 0, "not-applicable": 26, "expected-fail": 14},
    ),
    Agent(
        "acp-typescript-sdk-echo",
        _typescript_sdk_echo,
        {"pass": 65, "fail": 0, "not-applicable": 26, "expected-fail": 1},
    ),
    Agent(
        "zeroclaw_ref", _reference, {"pass": 92, "fail": 0, "not-applicable": 0, "expected-fail": 0}
    ),
)


def _listed(name: str) -> set[str]:
    """The scenario ids of an expected-failures file (`<id>  # <reason>` lines)."""
    text = (FIXTURES / "expected-failures" / f"{name}.txt").read_text(encoding="utf-8")
    return {
        line.split()[0] for line in text.splitlines() if line.strip() and not line.startswith("#")
    }


@pytest.mark.req("TX-PROFILE-01", "TX-NEEDS-04", "TX-XFAIL-02", "TX-XFAIL-03", "TX-XFAIL-04")
@pytest.mark.parametrize("agent", AGENTS, ids=[a.name for a in AGENTS])
def test_the_acp_profile_judges_the_agent(agent: Agent, tmp_path: Path) -> None:
    command = agent.command()
    report = tmp_path / "run.json"
    argv = [sys.executable, "-m", "zeroclaw_ref.conformance", "run", "--profile", "acp"]
    # Two jobs on two shared cores, and deadlines doubled: a slow start must not pass for a failure.
    argv += ["--agent", command, "--jobs", "2", "--timeout-scale", "2", "--json", str(report)]
    argv += ["--expected-failures", str(FIXTURES / "expected-failures" / f"{agent.name}.txt")]
    inherited = os.environ.get("PYTHONPATH")
    env = dict(os.environ, PYTHONPATH=str(REPO) + (os.pathsep + inherited if inherited else ""))
    proc = subprocess.run(
        argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )
    tail = proc.stdout[-6000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, tail
    document = json.loads(report.read_text(encoding="utf-8"))
    results = document["results"]
    assert {r["profile"] for r in results} == {"acp"}, tail
    outcomes = document["summary"]["outcomes"]
    got = {name: outcomes.get(name, 0) for name in agent.counts}
    assert got == agent.counts, tail
    assert outcomes.get("unexpected-pass", 0) == 0 and outcomes.get("error", 0) == 0, tail
    assert document["summary"]["stale_expected_failures"] == [], tail
    # Every listed deviation was seen failing, and nothing else failed.
    expected_fail = {r["id"] for r in results if r["outcome"] == "expected-fail"}
    assert expected_fail == _listed(agent.name), tail
    # A deviation is pinned on a scenario the agent can be judged on, never on a missing capability.
    not_applicable = {r["id"] for r in results if r["outcome"] == "not-applicable"}
    assert not (not_applicable & _listed(agent.name)), tail
