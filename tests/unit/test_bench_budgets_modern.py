"""Issue 16 (mcp.md §14, §15.3): the 2026-07-28 bench cases carry the budgets of their legacy
counterparts: echo over stdio ≤ 0.67 × the SDK client (as MCP-PERF-02), over Streamable HTTP
≤ 1.0 × (as MCP-PERF-03), and the stdio probe adds ≤ 20 ms to a legacy-only server's start-up
(the allowance of MCP-PERF-04). Configuration only: nothing is measured here."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

from tests.unit.test_bench_budgets import (
    BENCH,
    KINDS,
    _as_list,
    _budgets,
    _case_clients,
    _run_py_cases,
)

RULES = [
    ("MCP-PERF-02", "mcp_stdio_echo_modern", "sdk", "max_ratio", 0.67),
    ("MCP-PERF-03", "mcp_http_echo_modern", "sdk", "max_ratio", 1.0),
    ("MCP-PERF-04", "mcp_stdio_probe", "legacy", "max_difference_ms", 20),
]


@pytest.mark.req("MCP-PERF-02", "MCP-PERF-03", "MCP-PERF-04", "MCP-MOD-01")
@pytest.mark.parametrize(("rule", "case", "peer", "kind", "ceiling"), RULES)
def test_each_modern_case_has_the_budget_of_its_legacy_counterpart(
    rule: str, case: str, peer: str, kind: str, ceiling: float
) -> None:
    budgets = _budgets()
    matching = [b for b in _as_list(budgets.get(case, [])) if b.get("peer") == peer]
    assert len(matching) == 1, f"{case}: expected one budget against {peer}"
    budget = matching[0]
    assert budget["statistic"] == "median"
    assert [k for k in KINDS if k in budget] == [kind]
    assert budget[kind] == ceiling, f"{case}: ceiling {budget[kind]}, {rule} says {ceiling}"
    assert (BENCH / "cases" / f"{case}.py").is_file()
    assert case in _run_py_cases()
    clients = _case_clients(case)
    assert clients[0] == "ours" and peer in clients


def test_the_modern_echo_cases_run_the_modern_transports() -> None:
    """Read as source: each modern case asks its clients for a `modern-*` transport, which
    makes both clients prove they ended in 2026-07-28 before timing anything."""
    for case, transport in (
        ("mcp_stdio_echo_modern", '"modern-stdio"'),
        ("mcp_http_echo_modern", '"modern-http"'),
    ):
        assert transport in (BENCH / "cases" / f"{case}.py").read_text(encoding="utf-8")
    clients = (BENCH / "peers" / "mcp_echo_clients.py").read_text(encoding="utf-8")
    assert 'mode="auto"' in clients and "not {MODERN}" in clients


def _lean_server_argv(mode: str, *extra: str) -> list[str]:
    return [sys.executable, str(BENCH / "peers" / "mcp_modern_lean_server.py"), mode, *extra]


def _session(client: str, transport: str, target: str) -> list[float]:
    """One short session of a bench client (it fails unless it ended in 2026-07-28)."""
    argv = [sys.executable, str(BENCH / "peers" / "mcp_echo_clients.py"), client]
    proc = subprocess.run(
        [*argv, transport, target, "0", "2"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    samples: list[float] = json.loads(proc.stdout)
    return samples


@pytest.mark.req("MCP-MOD-01", "MCP-PERF-02")
@pytest.mark.parametrize("client", ["ours", "sdk"])
def test_the_lean_echo_server_serves_both_clients_modern_over_stdio(client: str) -> None:
    """The modern cases' shared fixture really is a 2026-07-28 server to both clients: each
    client's session checks `Echo: hello` on every call and its era before timing."""
    assert len(_session(client, "modern-stdio", json.dumps(_lean_server_argv("stdio")))) == 2


@pytest.mark.req("MCP-MOD-01", "MCP-PERF-03")
@pytest.mark.parametrize("client", ["ours", "sdk"])
def test_the_lean_echo_server_serves_both_clients_modern_over_http(client: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(_lean_server_argv("http", str(port)))
    try:
        deadline = time.monotonic() + 20
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert server.poll() is None and time.monotonic() < deadline, "server never listened"
            time.sleep(0.02)
        assert len(_session(client, "modern-http", f"http://127.0.0.1:{port}/mcp")) == 2
    finally:
        server.terminate()
        server.wait(10)


def test_the_lean_echo_server_refuses_the_handshake() -> None:
    """A client that fell back to `initialize` cannot pass as modern against this server."""
    proc = subprocess.run(
        _lean_server_argv("stdio"),
        input='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n',
        capture_output=True,
        text=True,
        timeout=30,
    )
    reply = json.loads(proc.stdout)
    assert reply["error"]["code"] == -32022
    assert reply["error"]["data"]["supported"] == ["2026-07-28"]
