"""Run every benchmark case, A/B interleaved, print a table, write JSON, check budgets.

    python bench/run.py [--quick] [--case NAME ...]

Exit status: 0 all budgets met, 1 a budget was breached, 2 the run could not be made (a peer
is missing or an agent failed). Never run under pytest (DESIGN.md §12).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from client import AgentDied, AgentSpec, agent_specs  # noqa: E402

CASES = (
    "acp_startup",
    "acp_prompt_rtt",
    "mcp_stdio_echo",
    "mcp_http_echo",
    "mcp_stdio_ready",
    "mcp_stdio_probe",
    "mcp_stdio_echo_modern",
    "mcp_http_echo_modern",
    "mcp_import",
    "sandbox_cost",
)
OURS = "ours"


def p90(values: list[float]) -> float:
    """Nearest-rank 90th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def summarise(samples: list[float]) -> dict[str, float | int]:
    return {
        "n": len(samples),
        "median_ms": statistics.median(samples) * 1e3,
        "p90_ms": p90(samples) * 1e3,
        "min_ms": min(samples) * 1e3,
    }


def run_case(case: ModuleType, specs: list[AgentSpec], cwd: Path, quick: bool) -> dict[str, Any]:
    warm, measured = case.rounds(quick)
    samples: dict[str, list[float]] = {spec.name: [] for spec in specs}
    for r in range(warm + measured):
        # Interleave A/B and alternate who goes first, so drift hits both sides alike.
        order = specs if r % 2 == 0 else list(reversed(specs))
        for spec in order:
            got = case.sample(spec, cwd, quick)
            if r >= warm:
                samples[spec.name].extend(got)
        print(f"  {case.NAME}: round {r + 1}/{warm + measured}", file=sys.stderr, end="\r")
    print(file=sys.stderr)
    return {
        "agents": {name: summarise(values) for name, values in samples.items()},
        "samples_ms": {name: [v * 1e3 for v in values] for name, values in samples.items()},
        "warmup_rounds_discarded": warm,
        "measured_rounds": measured,
    }


def check_budgets(
    name: str, result: dict[str, Any], budgets: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every budget of `name`: a case has one table, or an array of tables (one per peer)."""
    entry = budgets.get(name)
    if entry is None:
        return [{"checked": False}]
    return [check_budget(b, result) for b in (entry if isinstance(entry, list) else [entry])]


def check_budget(budget: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """A ceiling on ours / peer (`max_ratio`) or on ours − peer in ms (`max_difference_ms`).

    Raises:
        ValueError: the budget names both kinds or neither (budgets.toml: exactly one).
    """
    kinds = [k for k in ("max_ratio", "max_difference_ms") if k in budget]
    if len(kinds) != 1:
        raise ValueError(f"a budget needs exactly one of max_ratio, max_difference_ms: {budget}")
    stat = f"{budget['statistic']}_ms"
    ours = result["agents"][OURS][stat]
    peer = result["agents"][budget["peer"]][stat]
    verdict = {"checked": True, "peer": budget["peer"], "statistic": budget["statistic"]}
    if "max_difference_ms" in budget:
        difference = ours - peer
        limit = budget["max_difference_ms"]
        return {
            **verdict,
            "difference_ms": difference,
            "max_difference_ms": limit,
            "ok": difference <= limit,
        }
    ratio = ours / peer
    return {
        **verdict,
        "ratio": ratio,
        "max_ratio": budget["max_ratio"],
        "ok": ratio <= budget["max_ratio"],
    }


def print_table(rows: list[tuple[str, dict[str, Any]]]) -> None:
    header = (
        f"{'case':<22}{'agent':<9}{'median ms':>11}{'p90 ms':>10}{'n':>6}"
        f"{'ratio med':>11}{'ratio p90':>11}  budget"
    )
    print(header)
    print("-" * len(header))
    for name, result in rows:
        agents = result["agents"]
        for agent, s in agents.items():
            line = f"{name:<22}{agent:<9}{s['median_ms']:>11.3f}{s['p90_ms']:>10.3f}{s['n']:>6}"
            print(line + (_ratios(agents, result["budgets"]) if agent == OURS else ""))


def _ratios(agents: dict[str, Any], budgets: list[dict[str, Any]]) -> str:
    """Our ratios against each budget's peer, one per line (continuation lines are indented)."""
    lines = []
    for budget in budgets:
        peer = budget.get("peer", "sdk")
        if peer not in agents:
            continue
        ours = agents[OURS]
        r_med = ours["median_ms"] / agents[peer]["median_ms"]
        r_p90 = ours["p90_ms"] / agents[peer]["p90_ms"]
        text = f"{r_med:>11.3f}{r_p90:>11.3f}"
        if budget["checked"]:
            verdict = "ok" if budget["ok"] else "BREACH"
            stat = budget["statistic"]
            if "max_difference_ms" in budget:
                text += (
                    f"  {stat} − {peer} = {budget['difference_ms']:+.1f} ms"
                    f" ≤ {budget['max_difference_ms']} ms: {verdict}"
                )
            else:
                text += f"  {stat} ≤ {budget['max_ratio']} × {peer}: {verdict}"
        lines.append(text)
    return ("\n" + " " * 58).join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few rounds, for a smoke run")
    parser.add_argument("--case", action="append", choices=CASES, help="run only these cases")
    parser.add_argument("--results", type=Path, default=BENCH_DIR / "results")
    args = parser.parse_args(argv)

    selected = args.case or list(CASES)
    if any(n.startswith("acp_") for n in selected) and importlib.util.find_spec("acp") is None:
        print(
            "peer acp-python-sdk missing: pip install agent-client-protocol==0.12.1",
            file=sys.stderr,
        )
        return 2
    budgets = tomllib.loads((BENCH_DIR / "budgets.toml").read_text("utf-8"))
    args.results.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="zeroclaw-bench-") as scratch:
        cwd = Path(scratch) / "workspace"
        cwd.mkdir()
        specs = agent_specs(Path(scratch))
        for name in selected:
            case = importlib.import_module(f"cases.{name}")
            lacking = case.missing() if hasattr(case, "missing") else None
            if lacking is not None:
                print(f"{name}: peer missing: {lacking}", file=sys.stderr)
                return 2
            # A case may compare its own set of clients (the MCP cases); else the ACP agents.
            case_specs = case.specs(Path(scratch)) if hasattr(case, "specs") else specs
            started = time.perf_counter()
            try:
                result = run_case(case, case_specs, cwd, args.quick)
            except (AgentDied, RuntimeError, subprocess.TimeoutExpired) as exc:
                print(f"{name}: run failed: {exc}", file=sys.stderr)
                return 2
            result["budgets"] = check_budgets(name, result, budgets)
            result["budget"] = result["budgets"][0]
            result.update(
                case=name,
                description=case.DESCRIPTION,
                quick=args.quick,
                wall_s=time.perf_counter() - started,
                when=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                python=sys.version.split()[0],
                platform=platform.platform(),
                cpus=os.cpu_count(),
                agents_argv={spec.name: list(spec.argv) for spec in case_specs},
            )
            out = args.results / f"{name}.json"
            out.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
            rows.append((name, result))
    print_table(rows)
    breached = [name for name, r in rows if any(b["checked"] and not b["ok"] for b in r["budgets"])]
    if breached:
        print(f"budget breached: {', '.join(breached)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
