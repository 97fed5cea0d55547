"""Issue 16 (mcp.md §14, §15.3): the 2026-07-28 bench cases carry the budgets of their legacy
counterparts: echo over stdio ≤ 0.67 × the SDK client (as MCP-PERF-02), over Streamable HTTP
≤ 1.0 × (as MCP-PERF-03), and the stdio probe adds ≤ 20 ms to a legacy-only server's start-up
(the allowance of MCP-PERF-04). Configuration only: nothing is measured here."""

from __future__ import annotations

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
