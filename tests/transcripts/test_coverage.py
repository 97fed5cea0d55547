"""`conformance coverage`: both directions over the corpus, and each failure rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zeroclaw_ref.conformance.tools.coverage import evaluate, parse_spec, run_coverage

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
SPEC = REPO.parent / "shared" / "spec"


@pytest.mark.skipif(
    not (FIXTURES / "requirements.json").exists(),
    reason="fixtures/requirements.json (the product's manifest) does not exist yet",
)
def test_coverage_over_the_corpus_passes() -> None:
    problems, _info, _table = evaluate(FIXTURES, SPEC if SPEC.is_dir() else None)
    assert problems == []


def corpus(
    root: Path,
    cited: dict[str, tuple[str, list[str]]],
    manifest: dict[str, tuple[str, list[str]]],
    exemptions: str = "",
) -> Path:
    fixtures = root / "fixtures"
    (fixtures / "acp" / "cov").mkdir(parents=True)
    (fixtures / "spec-index.json").write_text('{"ACP": "acp.md", "POL": "policy.md"}')
    rows = {
        rid: {"statement": "s", "spec": doc, "tags": tags} for rid, (doc, tags) in manifest.items()
    }
    (fixtures / "requirements.json").write_text(json.dumps(rows))
    (fixtures / "coverage-exemptions.txt").write_text("# header\n" + exemptions)
    for name, (level, ids) in cited.items():
        header = {"format": 2, "scenario": f"acp/cov/{name}", "level": level, "requirements": ids}
        (fixtures / "acp" / "cov" / f"{name}.jsonl").write_text(json.dumps(header) + "\n{}\n")
    return fixtures


MANIFEST = {"ACP-TR-01": ("acp.md", ["zc"]), "POL-ACCESS-01": ("policy.md", ["seed", "zc"])}
BOTH = {"a": ("required", ["ACP-TR-01"]), "b": ("optional", ["POL-ACCESS-01"])}


@pytest.mark.req("TX-COVER-03", "TX-COVER-04", "TX-COVER-05")
def test_a_fully_cited_manifest_passes_and_prints_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixtures = corpus(tmp_path, BOTH, MANIFEST)
    assert run_coverage(fixtures, None, tmp_path / "cov.json") == 0
    out = capsys.readouterr().out
    assert "acp.md" in out and "policy.md" in out
    assert json.loads((tmp_path / "cov.json").read_text())["problems"] == []


@pytest.mark.req("TX-COVER-03")
def test_a_cited_id_missing_from_the_manifest_fails(tmp_path: Path) -> None:
    cited = {**BOTH, "c": ("required", ["ACP-NEW-01"])}
    problems = evaluate(corpus(tmp_path, cited, MANIFEST), None)[0]
    assert problems == ["acp/cov/c: cites ACP-NEW-01, which the manifest does not define"]


@pytest.mark.req("TX-COVER-04")
def test_an_uncited_id_fails_unless_exempted(tmp_path: Path) -> None:
    only_a = {"a": ("required", ["ACP-TR-01"]), "i": ("informational", ["POL-ACCESS-01"])}
    fixtures = corpus(tmp_path / "one", only_a, MANIFEST)
    assert evaluate(fixtures, None)[0] == [
        "POL-ACCESS-01: cited by no required or optional scenario"
    ]
    fixtures = corpus(
        tmp_path / "two", {"a": only_a["a"]}, MANIFEST, "POL-ACCESS-01  # unit-tested\n"
    )
    assert evaluate(fixtures, None)[0] == []


@pytest.mark.req("TX-COVER-05")
@pytest.mark.parametrize(
    ("exemptions", "problem"),
    [
        ("ACP-NEW-09  # gone\n", "stale exemption ACP-NEW-09: not in the manifest"),
        ("ACP-TR-01  # cited anyway\n", "stale exemption ACP-TR-01: a scenario cites it"),
    ],
)
def test_stale_exemptions_fail(tmp_path: Path, exemptions: str, problem: str) -> None:
    problems = evaluate(corpus(tmp_path, BOTH, MANIFEST, exemptions), None)[0]
    assert problem in problems


def test_unreadable_inputs_exit_two(tmp_path: Path) -> None:
    fixtures = corpus(tmp_path, BOTH, MANIFEST, "not an exemption line\n")
    assert run_coverage(fixtures, None, None) == 2
    (fixtures / "coverage-exemptions.txt").write_text("")
    (fixtures / "requirements.json").write_text("{broken")
    assert run_coverage(fixtures, None, None) == 2


SPEC_ACP = """# acp
- **ACP-TR-01** [zc] The agent speaks on stdio.
- **ACP-TR-02** [seed][ref: a reason] Another rule.
- **ACP-PROMPT-22** Withdrawn: superseded by MCP-RESULT-16.
```
- **ACP-FAKE-01** inside a code block
```
"""
SPEC_POL = "- **POL-ACCESS-01** [seed][zc] Access.\n"


def spec_dir(root: Path) -> Path:
    spec = root / "spec"
    spec.mkdir()
    (spec / "acp.md").write_text(SPEC_ACP)
    (spec / "policy.md").write_text(SPEC_POL)
    return spec


@pytest.mark.req("TX-COVER-02")
def test_spec_parsing_finds_bold_ids_tags_and_withdrawals(tmp_path: Path) -> None:
    doc = parse_spec(spec_dir(tmp_path) / "acp.md")
    assert doc.defined == {"ACP-TR-01": ("zc",), "ACP-TR-02": ("seed", "ref")}
    assert doc.withdrawn == {"ACP-PROMPT-22"}


@pytest.mark.req("TX-COVER-02", "TX-COVER-03")
@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"ACP-FAKE-01": ("acp.md", [])}, "ACP-FAKE-01: not defined in acp.md (invented)"),
        (
            {"ACP-PROMPT-22": ("acp.md", [])},
            "ACP-PROMPT-22: withdrawn in acp.md; cite its successor",
        ),
        ({"ACP-TR-02": ("policy.md", ["seed", "ref"])}, "ACP-TR-02: manifest says policy.md"),
        ({"ACP-TR-02": ("acp.md", ["seed"])}, "ACP-TR-02: manifest tags"),
    ],
)
def test_with_spec_the_manifest_must_agree_with_the_documents(
    tmp_path: Path, extra: dict[str, tuple[str, list[str]]], problem: str
) -> None:
    rid = next(iter(extra))
    cited = {**BOTH, "x": ("required", [rid])}
    fixtures = corpus(tmp_path, cited, {**MANIFEST, **extra})
    problems, info, _table = evaluate(fixtures, spec_dir(tmp_path))
    assert any(p.startswith(problem) for p in problems), problems
    assert any(line.startswith("acp.md:") for line in info)


@pytest.mark.req("TX-COVER-02")
def test_with_spec_a_defined_id_left_out_of_the_manifest_fails(tmp_path: Path) -> None:
    problems, info, _table = evaluate(corpus(tmp_path, BOTH, MANIFEST), spec_dir(tmp_path))
    assert problems == ["ACP-TR-02: defined in acp.md but not stated in requirements.json"]
    assert "acp.md: 1 spec IDs not yet in the manifest" in info


@pytest.mark.req("TX-COVER-02")
def test_with_spec_a_complete_manifest_passes(tmp_path: Path) -> None:
    manifest = {**MANIFEST, "ACP-TR-02": ("acp.md", ["seed", "ref"])}
    cited = {**BOTH, "c": ("required", ["ACP-TR-02"])}
    problems, info, _table = evaluate(corpus(tmp_path, cited, manifest), spec_dir(tmp_path))
    assert problems == []
    assert "acp.md: 0 spec IDs not yet in the manifest" in info
