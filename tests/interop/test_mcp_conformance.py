"""The official MCP conformance suite against our driver (mcp.md §15.1, MCP-CONF-01..06).

Each scenario runs alone (`conformance client --scenario <name>`): single-scenario runs exit 1
on any FAILURE or WARNING, a timeout or a non-zero client exit, whereas suite mode ignores the
client's exit status (MCP-CONF-06). The suite needs Node >= 22, installed apart in
`.peers/node22/` (PEERS.md).
"""

from __future__ import annotations

import io
import json
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_peer
from zeroclaw_ref.cli.mcp_conformance import SCENARIO_ENV, run_conformance_client

SCENARIOS = ("initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry")
# The harness gives a client 30 s by default; this bounds the whole run (mock server included).
RUN_TIMEOUT_S = 90
REPO = Path(__file__).resolve().parents[2]


def _peer(name: str) -> str:
    peer = require_peer(name)
    assert isinstance(peer, str)
    return peer


@pytest.mark.req(
    "MCP-CONF-01", "MCP-CONF-02", "MCP-CONF-03", "MCP-CONF-04", "MCP-CONF-05", "MCP-CONF-06"
)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_official_suite_passes_each_scenario_run_alone(scenario: str, tmp_path: Path) -> None:
    node22 = _peer("node22")
    suite = _peer("mcp-conformance")
    command = f"{shlex.quote(sys.executable)} -m zeroclaw_ref mcp-conformance-client"
    argv = [node22, suite, "client", "--command", command, "--scenario", scenario]
    argv += ["-o", str(tmp_path)]
    proc = subprocess.run(
        argv, cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )
    runs = sorted(tmp_path.glob(f"{scenario}-*/checks.json"))
    assert len(runs) == 1, proc.stdout + proc.stderr
    checks = json.loads(runs[0].read_text(encoding="utf-8"))
    bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    client_stderr = runs[0].with_name("stderr.txt")
    detail = client_stderr.read_text(encoding="utf-8") if client_stderr.is_file() else ""
    assert bad == [], f"{json.dumps(bad, indent=2)}\nclient stderr:\n{detail}"
    assert any(c.get("status") == "SUCCESS" for c in checks)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:] + detail
    assert "OVERALL: PASSED" in proc.stdout + proc.stderr


@pytest.mark.req("MCP-CONF-01")
@pytest.mark.parametrize("name", ["", "auth/basic-cimd", "nonsense"])
def test_a_missing_or_unknown_scenario_exits_2_naming_it(name: str) -> None:
    err = io.StringIO()
    environ = {SCENARIO_ENV: name} if name else {}
    assert run_conformance_client("http://127.0.0.1:9/mcp", environ, err) == 2
    assert err.getvalue() == f"unknown conformance scenario: {name}\n"


@pytest.mark.req("MCP-CONF-01")
def test_a_server_that_cannot_be_reached_exits_1() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused
        err = io.StringIO()
        status = run_conformance_client(
            f"http://127.0.0.1:{port}/mcp", {SCENARIO_ENV: "initialize"}, err
        )
    assert status == 1
    assert "conformance" in err.getvalue()
