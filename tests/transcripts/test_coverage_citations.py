"""`coverage` holds test marks and code tags to the manifest, not only scenario headers.

Every ID below is made up and spelt in pieces, so that this file itself cites nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from zeroclaw_ref.conformance.tools.citations import scan
from zeroclaw_ref.conformance.tools.coverage import evaluate, run_coverage

REPO = Path(__file__).resolve().parents[2]
STATED = "ACP-" + "TR-01"
UNSTATED = "ACP-" + "NOPE-07"
UNSTATED_TX = "TX-" + "NOPE-01"
CATALOGUE = "MCP-" + "ERR-05"


def repository(root: Path, *, test: str = "", code: str = "", bench: str = "") -> Path:
    """A checkout in miniature: a corpus citing one stated ID, and some sources."""
    fixtures = root / "fixtures"
    (fixtures / "acp" / "cov").mkdir(parents=True)
    (fixtures / "spec-index.json").write_text('{"ACP": "acp.md", "MCP": "mcp.md"}')
    manifest = {STATED: {"statement": "s", "spec": "acp.md", "tags": ["zc"]}}
    (fixtures / "requirements.json").write_text(json.dumps(manifest))
    header = {"format": 2, "scenario": "acp/cov/a", "level": "required", "requirements": [STATED]}
    (fixtures / "acp" / "cov" / "a.jsonl").write_text(json.dumps(header) + "\n{}\n")
    for folder, text in (("tests/unit", test), ("zeroclaw_ref", code), ("bench", bench)):
        if text:
            (root / folder).mkdir(parents=True, exist_ok=True)
            (root / folder / "x.py").write_text(text)
    return fixtures


def mark(*ids: str) -> str:
    args = ", ".join(json.dumps(i) for i in ids)
    return f"import pytest\n\n\n@pytest.mark.req({args})\ndef test_x() -> None:\n    pass\n"


@pytest.mark.req("TX-COVER-03")
def test_an_unstated_id_in_a_test_mark_fails_coverage(tmp_path: Path) -> None:
    fixtures = repository(tmp_path, test=mark(STATED, UNSTATED))
    problems = evaluate(fixtures, None)[0]
    assert problems == [
        f"{UNSTATED}: cited at tests/unit/x.py:4 (mark), but not stated in requirements.json"
    ]
    assert run_coverage(fixtures, None, None) == 1


@pytest.mark.req("TX-COVER-03")
def test_an_unstated_id_in_a_code_tag_fails_coverage_whatever_its_prefix(tmp_path: Path) -> None:
    code = f'"""Module."""\n\n# [{STATED}] fine\nX = 1  # [{UNSTATED_TX}] a contract rule\n'
    fixtures = repository(tmp_path, code=code, bench=f"# [{UNSTATED}]\n")
    problems = evaluate(fixtures, None)[0]
    assert problems == [
        f"{UNSTATED}: cited at bench/x.py:1 (tag), but not stated in requirements.json",
        f"{UNSTATED_TX}: cited at zeroclaw_ref/x.py:4 (tag), but not stated in requirements.json",
    ]


@pytest.mark.req("TX-COVER-03")
def test_stating_the_id_makes_coverage_pass(tmp_path: Path) -> None:
    fixtures = repository(tmp_path, test=mark(UNSTATED), code=f"# [{UNSTATED}]\n")
    rows = json.loads((fixtures / "requirements.json").read_text())
    rows[UNSTATED] = {"statement": "t", "spec": "acp.md", "tags": []}
    (fixtures / "requirements.json").write_text(json.dumps(rows))
    (fixtures / "coverage-exemptions.txt").write_text(f"{UNSTATED}  # unit-tested\n")
    assert evaluate(fixtures, None)[0] == []


@pytest.mark.req("TX-COVER-02")
def test_catalogue_texts_are_not_requirements_but_must_exist_with_the_spec(
    tmp_path: Path,
) -> None:
    fixtures = repository(tmp_path, test=mark(CATALOGUE), code="# [" + "DIV-01] not an ID\n")
    assert evaluate(fixtures, None)[0] == []  # a text, not a requirement
    spec = tmp_path / "spec"
    spec.mkdir()
    (spec / "acp.md").write_text(f"- **{STATED}** [zc] The agent starts.\n")
    (spec / "mcp.md").write_text("```\nMCP-" + "ERR-04 [zc]  some text\n```\n")
    assert evaluate(fixtures, spec)[0] == [
        f"{CATALOGUE}: cited at tests/unit/x.py:4 (mark), but no catalogue text has that number"
    ]
    (spec / "mcp.md").write_text("```\n" + CATALOGUE + " [zc]  some text\n```\n")
    assert evaluate(fixtures, spec)[0] == []


def test_scan_finds_marks_and_tags_but_not_prose(tmp_path: Path) -> None:
    prose = f'"""Implements {UNSTATED} (prose is not a citation)."""\n# [{STATED}]\n'
    repository(tmp_path, test=prose + mark(UNSTATED))
    cited = scan(tmp_path, {"ACP", "TX"})
    assert cited.requirements == {
        STATED: ["tests/unit/x.py:2 (tag)"],
        UNSTATED: ["tests/unit/x.py:6 (mark)"],
    }


@pytest.mark.req("TX-COVER-03", "TX-COVER-05")
def test_the_command_exits_1_on_an_unstated_citation(tmp_path: Path) -> None:
    fixtures = repository(tmp_path, test=mark(UNSTATED))
    done = subprocess.run(
        [sys.executable, "-m", "zeroclaw_ref.conformance", "coverage", "--fixtures", fixtures],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"FAIL {UNSTATED}: cited at tests/unit/x.py:4 (mark)" in done.stdout
