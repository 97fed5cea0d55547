"""mcp.md §15.3: every MCP-PERF target is a budget in bench/budgets.toml with the spec's ceiling,
on a bench case that exists and compares against the named peer; likewise the ACP agent's own
targets (ZC-PERF-01, ZC-PERF-02) against the SDK echo agent.

Configuration only: nothing here runs a benchmark or measures time (DESIGN §11.2, §12). The case
modules are read as source (never imported), since bench/ is not a package of this project.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"

# (requirement, case, peer, kind of ceiling, ceiling) as mcp.md §15.3 states them.
PERF_RULES = [
    ("MCP-PERF-01", "mcp_stdio_echo", "minimal", "max_ratio", 1.5),
    ("MCP-PERF-02", "mcp_stdio_echo", "sdk", "max_ratio", 0.67),
    ("MCP-PERF-03", "mcp_http_echo", "sdk", "max_ratio", 1.0),
    ("MCP-PERF-04", "mcp_stdio_ready", "bare", "max_difference_ms", 20),
    ("MCP-PERF-05", "mcp_import", "requests", "max_ratio", 2.0),
]
KINDS = ("max_ratio", "max_difference_ms")


def _budgets() -> dict[str, Any]:
    return tomllib.loads((BENCH / "budgets.toml").read_text(encoding="utf-8"))


def _as_list(entry: object) -> list[dict[str, Any]]:
    return entry if isinstance(entry, list) else [entry]  # type: ignore[list-item]


def _case_clients(case: str) -> tuple[str, ...]:
    """The literal `CLIENTS` tuple of bench/cases/<case>.py, checked to be what `specs` uses."""
    tree = ast.parse((BENCH / "cases" / f"{case}.py").read_text(encoding="utf-8"))
    clients: tuple[str, ...] | None = None
    specs_uses_clients = False
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "CLIENTS" for t in node.targets
        ):
            clients = ast.literal_eval(node.value)
        if isinstance(node, ast.FunctionDef) and node.name == "specs":
            specs_uses_clients = any(
                isinstance(n, ast.Name) and n.id == "CLIENTS" for n in ast.walk(node)
            )
    assert clients is not None, f"bench/cases/{case}.py declares no CLIENTS"
    assert specs_uses_clients, f"bench/cases/{case}.py: specs() does not build from CLIENTS"
    return clients


def _run_py_cases() -> tuple[str, ...]:
    tree = ast.parse((BENCH / "run.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "CASES" for t in node.targets
        ):
            cases: tuple[str, ...] = ast.literal_eval(node.value)
            return cases
    raise AssertionError("bench/run.py declares no CASES")


@pytest.mark.req("MCP-PERF-01", "MCP-PERF-02", "MCP-PERF-03", "MCP-PERF-04", "MCP-PERF-05")
@pytest.mark.parametrize(("rule", "case", "peer", "kind", "ceiling"), PERF_RULES)
def test_each_mcp_perf_target_is_a_budget_with_the_spec_ceiling(
    rule: str, case: str, peer: str, kind: str, ceiling: float
) -> None:
    budgets = _budgets()
    assert case in budgets, f"{rule}: no budget for {case}"
    matching = [b for b in _as_list(budgets[case]) if b.get("peer") == peer]
    assert len(matching) == 1, f"{rule}: expected one budget of {case} against {peer}"
    budget = matching[0]
    assert budget["statistic"] == "median", rule
    assert [k for k in KINDS if k in budget] == [kind], f"{rule}: exactly one ceiling, {kind}"
    assert budget[kind] == ceiling, f"{rule}: ceiling {budget[kind]}, spec says {ceiling}"
    assert (BENCH / "cases" / f"{case}.py").is_file(), f"{rule}: bench/cases/{case}.py missing"
    assert case in _run_py_cases(), f"{rule}: bench/run.py does not run {case}"
    clients = _case_clients(case)
    assert clients[0] == "ours", f"{rule}: {case} does not measure ours first"
    assert peer in clients, f"{rule}: {case} does not run the peer {peer}"


# (requirement, case, ceiling) of the ACP agent cases; both compare against the SDK echo agent.
ACP_RULES = [
    ("ZC-PERF-01", "acp_startup", 0.25),
    ("ZC-PERF-02", "acp_prompt_rtt", 2.0),
]


def _literal_function_result(case: str, function: str) -> object:
    """What a case function returns when its body is `return <literal>` for the full run."""
    tree = ast.parse((BENCH / "cases" / f"{case}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            returned = [n for n in ast.walk(node) if isinstance(n, ast.Return)]
            assert len(returned) == 1 and isinstance(returned[0].value, ast.IfExp), function
            return ast.literal_eval(returned[0].value.orelse)  # `quick_value if quick else full`
    raise AssertionError(f"bench/cases/{case}.py has no {function}()")


def _module_constant(case: str, name: str) -> object:
    tree = ast.parse((BENCH / "cases" / f"{case}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise AssertionError(f"bench/cases/{case}.py declares no {name}")


@pytest.mark.req("ZC-PERF-01", "ZC-PERF-02")
@pytest.mark.parametrize(("rule", "case", "ceiling"), ACP_RULES)
def test_each_acp_agent_target_is_a_budget_against_the_sdk_echo_agent(
    rule: str, case: str, ceiling: float
) -> None:
    budget = _budgets()[case]
    assert isinstance(budget, dict), f"{rule}: one budget for {case}"
    assert budget["peer"] == "sdk" and budget["statistic"] == "median", rule
    assert [k for k in KINDS if k in budget] == ["max_ratio"], f"{rule}: a ratio ceiling only"
    assert budget["max_ratio"] == ceiling, f"{rule}: ceiling {budget['max_ratio']}, not {ceiling}"
    assert case in _run_py_cases(), f"{rule}: bench/run.py does not run {case}"
    # The ACP cases run bench/client.py's agent_specs: ours (no config.toml, so the default
    # store) and the SDK echo agent.
    client = (BENCH / "client.py").read_text(encoding="utf-8")
    assert 'AgentSpec("ours", (sys.executable, "-m", "zeroclaw_ref", "acp"), env)' in client
    assert (
        'AgentSpec("sdk", (sys.executable, str(BENCH_DIR / "peers" / "sdk_echo_agent.py"))'
        in client
    )


@pytest.mark.req("ZC-PERF-02")
def test_the_round_trip_case_times_200_prompts_to_3_sessions_with_a_blocking_client() -> None:
    source = (BENCH / "cases" / "acp_prompt_rtt.py").read_text(encoding="utf-8")
    assert _module_constant("acp_prompt_rtt", "SESSIONS") == 3
    prompts = _literal_function_result("acp_prompt_rtt", "_prompts")
    assert isinstance(prompts, tuple) and len(prompts) == 2
    warm, measured = prompts
    assert measured == 200 and warm > 0
    assert "BlockingClient(spec, cwd)" in source and "RawClient" not in source


@pytest.fixture
def check_budget(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., dict[str, Any]]]:
    """bench/run.py's pure `check_budget`, loaded without leaving bench/ on the path."""
    monkeypatch.setattr(sys, "path", list(sys.path))  # run.py prepends bench/; undone after
    before = set(sys.modules)
    spec = importlib.util.spec_from_file_location("_bench_run", BENCH / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        yield module.check_budget
    finally:
        for name in set(sys.modules) - before:
            del sys.modules[name]


def _result(ours_ms: float, peer_ms: float) -> dict[str, Any]:
    return {"agents": {"ours": {"median_ms": ours_ms}, "bare": {"median_ms": peer_ms}}}


@pytest.mark.req("MCP-PERF-04")
def test_a_difference_budget_is_judged_as_ours_minus_the_peer_in_ms(
    check_budget: Callable[..., dict[str, Any]],
) -> None:
    budget = {"peer": "bare", "statistic": "median", "max_difference_ms": 20}
    within = check_budget(budget, _result(250.0, 230.0))
    assert within["ok"] and within["difference_ms"] == 20.0
    beyond = check_budget(budget, _result(250.5, 230.0))
    assert not beyond["ok"] and beyond["difference_ms"] == 20.5
    # A ratio budget on the same numbers is still a ratio: 250 / 230 < 1.5.
    ratio = check_budget(
        {**{k: budget[k] for k in ("peer", "statistic")}, "max_ratio": 1.5}, _result(250.0, 230.0)
    )
    assert ratio["ok"] and "difference_ms" not in ratio
    # A budget must name exactly one kind: both, or neither, is a mistake in budgets.toml.
    with pytest.raises(ValueError, match="exactly one"):
        check_budget({**budget, "max_ratio": 1.5}, _result(250.0, 230.0))
    with pytest.raises(ValueError, match="exactly one"):
        check_budget({"peer": "bare", "statistic": "median"}, _result(250.0, 230.0))
