#!/usr/bin/env python3
"""Where each requirement ID is verified: fixtures, tests and code tags (DESIGN §13).

Reads the manifest `fixtures/requirements.json`, the `requirements` of every scenario header,
every `@pytest.mark.req(...)` in `tests/`, and every `[ID]` tag in `zeroclaw_ref/`. Prints one
line per manifest ID with its counts, then the problems: IDs cited by tests that the manifest
does not define, and manifest IDs that no fixture or test cites. IDs found only in code tags are
listed for information ("code tags without a verifying test"): a tag alone does not claim an ID.
Exit status 1 when there are problems (unless --report-only), 0 otherwise. Stdlib only.

    python3 tools/req_coverage.py [--report-only] [--id PREFIX]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ID = re.compile(r"\b(?:ACP|MCP|POL|CFG|TX|ZC)-[A-Z0-9]+-\d{2,3}\b")
CATALOGUE = re.compile(r"^MCP-ERR-(?!01$)\d{2,3}$")
TAG = re.compile(r"\[((?:ACP|MCP|POL|CFG|TX|ZC)-[A-Z0-9]+-\d{2,3})\]")


def fixture_citations() -> dict[str, set[str]]:
    cited: dict[str, set[str]] = defaultdict(set)
    for path in sorted((ROOT / "fixtures").rglob("*.jsonl")):
        if "_support" in path.parts:
            continue
        header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        for req in header.get("requirements", []):
            cited[req].add(str(path.relative_to(ROOT / "fixtures")))
    return cited


def test_citations() -> dict[str, set[str]]:
    cited: dict[str, set[str]] = defaultdict(set)
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            is_req = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "req"
            )
            if not is_req:
                continue
            assert isinstance(node, ast.Call)
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    cited[arg.value].add(str(path.relative_to(ROOT)))
    return cited


def code_citations() -> dict[str, set[str]]:
    cited: dict[str, set[str]] = defaultdict(set)
    for path in sorted((ROOT / "zeroclaw_ref").rglob("*.py")):
        for match in TAG.finditer(path.read_text(encoding="utf-8")):
            cited[match.group(1)].add(str(path.relative_to(ROOT)))
    return cited


def _claimable(rid: str, prefix: str) -> bool:
    """Product IDs within --id. The contract's TX-* IDs are stated in the manifest too (spec
    transcripts.md) but are the runner's own rules, verified by its tests and by `conformance
    coverage`, which also holds code tags to the manifest; this tool leaves them alone."""
    return not rid.startswith("TX-") and rid.startswith(prefix)


def exempted() -> set[str]:
    """IDs verified outside fixtures and test marks, per fixtures/coverage-exemptions.txt."""
    path = ROOT / "fixtures" / "coverage-exemptions.txt"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return {line.split()[0] for line in lines if line.strip() and not line.startswith("#")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--id", default="", help="only IDs starting with this prefix")
    args = parser.parse_args(argv)
    manifest = json.loads((ROOT / "fixtures" / "requirements.json").read_text(encoding="utf-8"))
    fixtures, tests, code = fixture_citations(), test_citations(), code_citations()
    print(f"{'ID':<18} {'fixtures':>8} {'tests':>6} {'code':>5}")
    for rid in sorted(manifest):
        if rid.startswith(args.id):
            print(f"{rid:<18} {len(fixtures[rid]):>8} {len(tests[rid]):>6} {len(code[rid]):>5}")
    problems = []
    others = []  # markers such as a spec divergence row (DIV-01): no manifest can hold them
    catalogue = []  # mcp.md §16 text lines (MCP-ERR-02 onwards): texts, not requirements
    for rid in sorted(tests):
        if not _claimable(rid, args.id) or rid in manifest:
            continue
        if CATALOGUE.match(rid):
            catalogue.append(rid)
        elif rid.startswith(("ACP-", "MCP-", "POL-", "CFG-")):
            problems.append(f"test cites {rid}, which the manifest does not define")
        else:
            others.append(rid)
    if others:
        print(f"info: test markers that are not requirement IDs: {', '.join(others)}")
    if catalogue:
        # TX-COVER-02: these name the exact text a test pins; the requirement that produces the
        # text is what the manifest claims.
        print(f"info: test markers naming catalogue texts: {len(catalogue)}")
    verified_elsewhere = exempted()
    for rid in sorted(manifest):
        if not _claimable(rid, args.id) or rid in verified_elsewhere:
            continue
        if not (fixtures[rid] or tests[rid]):
            problems.append(f"{rid} is in the manifest but no fixture or test cites it")
    # An ID is claimed only when something verifies it: a code tag alone does not put it in
    # the manifest, so untested tags are listed for information, not as problems.
    untested = [r for r in sorted(code) if _claimable(r, args.id) and r not in manifest]
    if untested:
        print(f"info: code tags without a verifying test: {', '.join(untested)}")
    for line in problems:
        print(f"problem: {line}")
    return 1 if problems and not args.report_only else 0


if __name__ == "__main__":
    sys.exit(main())
