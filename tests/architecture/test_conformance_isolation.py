"""The oracle runs from a copy of its directory with zeroclaw_ref off the path (TX-RUN-10)."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "zeroclaw_ref" / "conformance"
STDLIB = sys.stdlib_module_names


def _imports(path: Path) -> list[tuple[str, int]]:
    """(module, level) for every import in a module, including function-local ones."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module or "", node.level))
    return found


@pytest.mark.req("TX-RUN-10")
@pytest.mark.parametrize(
    "module", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.relative_to(PACKAGE).as_posix()
)
def test_the_oracle_imports_only_the_stdlib_and_itself(module: Path) -> None:
    for name, level in _imports(module):
        if level > 0:
            continue
        top = name.split(".")[0]
        assert top in STDLIB or top == "__future__", f"{module.name} imports {name}"


@pytest.mark.req("TX-RUN-10")
def test_a_copied_oracle_lints_and_runs_without_the_package(tmp_path: Path) -> None:
    shutil.copytree(PACKAGE, tmp_path / "conformance", ignore=shutil.ignore_patterns("__pycache__"))
    fixtures = tmp_path / "fixtures"
    (fixtures / "acp" / "copy").mkdir(parents=True)
    (fixtures / "VERSION").write_text("1.0\n")
    (fixtures / "spec-index.json").write_text('{"ACP": "acp.md"}')
    (fixtures / "requirements.json").write_text(
        json.dumps({"ACP-TR-01": {"statement": "s", "spec": "acp.md", "tags": ["zc"]}})
    )
    header = {
        "format": 2,
        "scenario": "acp/copy/echo",
        "description": "The agent exits cleanly at end of input.",
        "requirements": ["ACP-TR-01"],
        "level": "required",
        "profile": "zeroclaw",
    }
    scenario = fixtures / "acp" / "copy" / "echo.jsonl"
    scenario.write_text(json.dumps(header) + '\n{"note":"nothing is sent"}\n')
    env = {"PATH": "/usr/bin:/bin"}
    # -S keeps site-packages (where zeroclaw_ref might be installed) off the path
    base = [sys.executable, "-E", "-S", "-m", "conformance"]
    lint = subprocess.run(
        [*base, "lint", "--fixtures", "fixtures"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    agent = f"{sys.executable} -I -c 'import sys; sys.stdin.read()'"
    run = subprocess.run(
        [*base, "run", "--fixtures", "fixtures", "--agent", agent, "--profile", "zeroclaw"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "[1/1] pass acp/copy/echo" in run.stdout
