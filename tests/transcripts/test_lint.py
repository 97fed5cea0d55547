"""`conformance lint`: the corpus is clean, and each rule catches its own breakage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zeroclaw_ref.conformance.tools.lint import lint_paths, run_lint

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
SPEC = REPO.parent / "shared" / "spec"

HEADER = {
    "format": 2,
    "scenario": "acp/lint/case",
    "description": "The agent answers the handshake.",
    "requirements": ["ACP-TR-01"],
    "level": "required",
    "profile": "zeroclaw",
}
SEND = {"send": {"jsonrpc": "2.0", "id": 1, "method": "initialize"}}
NEW = {"send": {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}}}
EXPECT = {"expect": {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "${sid:uuid}"}}}


NO_MANIFEST = pytest.mark.skipif(
    not (FIXTURES / "requirements.json").exists(),
    reason="fixtures/requirements.json (the product's manifest) does not exist yet",
)


@NO_MANIFEST
def test_lint_over_the_corpus_finds_no_problem() -> None:
    problems = lint_paths(FIXTURES, [], None)
    assert problems == [], "\n".join(str(p) for p in problems)


@NO_MANIFEST
@pytest.mark.skipif(not SPEC.is_dir(), reason="spec documents not found next to the repository")
def test_lint_over_the_corpus_against_the_spec_finds_no_problem() -> None:
    problems = lint_paths(FIXTURES, [], SPEC)
    assert problems == [], "\n".join(str(p) for p in problems)


def make_corpus(root: Path) -> Path:
    fixtures = root / "fixtures"
    (fixtures / "acp" / "lint").mkdir(parents=True)
    (fixtures / "VERSION").write_text("1.0\n")
    (fixtures / "spec-index.json").write_text('{"ACP": "acp.md"}')
    manifest = {
        "ACP-TR-01": {"statement": "stdio transport", "spec": "acp.md", "tags": ["zc"]},
        "ACP-PROMPT-22": {"statement": "old", "spec": "acp.md", "tags": []},
    }
    (fixtures / "requirements.json").write_text(json.dumps(manifest))
    return fixtures


def lines(*objects: object) -> str:
    return "".join(json.dumps(o) + "\n" for o in objects)


def with_header(**changes: object) -> dict[str, object]:
    head = dict(HEADER)
    for key, value in changes.items():
        if value is None:
            head.pop(key, None)
        else:
            head[key] = value
    return head


CASES: list[tuple[str, str, str]] = [
    ("bom", "\ufeff" + lines(HEADER, SEND), "TX-FORMAT-02"),
    ("crlf", lines(HEADER, SEND).replace("\n", "\r\n"), "TX-FORMAT-02"),
    ("blank-line", lines(HEADER) + "\n" + lines(SEND), "TX-FORMAT-02"),
    ("no-final-newline", lines(HEADER, SEND).rstrip("\n"), "TX-FORMAT-02"),
    ("duplicate-key", lines(HEADER) + '{"send":1,"send":2}\n', "TX-FORMAT-03"),
    ("nan", lines(HEADER) + '{"send":NaN}\n', "TX-FORMAT-03"),
    ("header-only", lines(HEADER), "TX-FORMAT-04"),
    ("missing-level", lines(with_header(level=None), SEND), "TX-HEADER-01"),
    ("unknown-member", lines(with_header(colour="red"), SEND), "TX-HEADER-01"),
    ("should", lines(with_header(description="The agent should answer."), SEND), "TX-HEADER-02"),
    (
        "two-sentences",
        lines(with_header(description="It answers. It exits."), SEND),
        "TX-HEADER-02",
    ),
    ("no-requirements", lines(with_header(requirements=[]), SEND), "TX-HEADER-03"),
    ("future-format", lines(with_header(format=3), SEND), "TX-HEADER-05"),
    ("format-1-has-no-profile", lines(with_header(format=1), SEND), "TX-HEADER-05"),
    ("no-profile", lines(with_header(profile=None), SEND), "TX-PROFILE-01"),
    ("unknown-profile", lines(with_header(profile="base"), SEND), "TX-PROFILE-01"),
    (
        "acp-profile-with-config",
        lines(with_header(profile="acp", setup={"config": "[agents.main]\n"}), SEND),
        "TX-PROFILE-02",
    ),
    (
        "acp-profile-needs-a-hook",
        lines(with_header(profile="acp", needs=["model"]), SEND),
        "TX-PROFILE-02",
    ),
    ("acp-profile-without-initialize", lines(with_header(profile="acp"), NEW), "TX-PROFILE-02"),
    ("unknown-need", lines(with_header(needs=["sessionCapabilities.fork"]), SEND), "TX-NEEDS-01"),
    ("needs-not-strings", lines(with_header(needs="loadSession"), SEND), "TX-NEEDS-01"),
    (
        "stderr-not-an-array",
        lines(HEADER, {"expect_exit": 1}, {"expect_stderr": "x"}),
        "TX-STDERR-01",
    ),
    (
        "stderr-only-not-bool",
        lines(HEADER, {"expect_exit": 1}, {"expect_stderr": ["x"], "only": 1}),
        "TX-STDERR-01",
    ),
    ("stderr-on-a-peer", lines(HEADER, {"expect_stderr": ["x"], "ch": "fs"}), "TX-FRAME-01"),
    ("stderr-before-exit", lines(HEADER, {"expect_stderr": ["ERROR: x"]}), "TX-STDERR-02"),
    (
        "stderr-after-restart",
        lines(HEADER, {"expect_exit": 0}, {"do": "restart"}, {"expect_stderr": ["x"]}),
        "TX-STDERR-02",
    ),
    ("need-without-initialize", lines(with_header(needs=["loadSession"]), NEW), "TX-NEEDS-03"),
    ("bad-level", lines(with_header(level="nice"), SEND), "TX-HEADER-04"),
    ("outside-support", lines(with_header(setup={"model": "acp/x.json"}), SEND), "TX-HEADER-06"),
    ("lower-in-setup", lines(with_header(setup={"env": {"X": "${sid}"}}), SEND), "TX-HEADER-07"),
    ("host-env", lines(with_header(setup={"env": {"PATH": "/bin"}}), SEND), "TX-HEADER-08"),
    (
        "acp-channel",
        lines(with_header(channels={"acp": {"role": "mcp-server", "transport": "stdio"}}), SEND),
        "TX-HEADER-09",
    ),
    ("two-verbs", lines(HEADER, {"send": 1, "expect": 2}), "TX-FRAME-01"),
    ("bad-modifier", lines(HEADER, {"send": 1, "within": 2}), "TX-FRAME-01"),
    ("unknown-channel", lines(HEADER, {"send": 1, "ch": "fs"}), "TX-FRAME-01"),
    ("raw-like-send", lines(HEADER, {"send_raw": '{"a":1}'}), "TX-FRAME-03"),
    ("sleep-untagged", lines(HEADER, {"do": "sleep_ms", "ms": 5}), "TX-FRAME-09"),
    ("send-after-close", lines(HEADER, {"do": "close_input"}, SEND), "TX-FRAME-06"),
    ("tiny-unordered", lines(HEADER, {"expect_unordered": [1]}), "TX-FRAME-05"),
    ("malformed-ph", lines(HEADER, {"expect": {"a": "${Sid}"}}), "TX-PH-01"),
    ("ph-in-name", lines(HEADER, {"expect": {"${a}": 1}}), "TX-PH-01"),
    ("unbound-send", lines(HEADER, {"send": {"s": "${sid}"}}), "TX-PH-03"),
    ("wildcard-send", lines(HEADER, {"send": {"s": "${_}"}}), "TX-PH-06"),
    ("unknown-host", lines(HEADER, {"send": {"s": "${NOPE}"}}), "TX-PH-04"),
    ("adjacent-unbound", lines(HEADER, {"expect": {"s": "${a}${b}"}}), "TX-PH-07"),
    ("type-change", lines(HEADER, EXPECT, {"expect": {"s": "${sid:int}"}}), "TX-PH-08"),
    ("wildcard-result", lines(HEADER, {"expect": {"id": 1, "result": "${_}"}}), "TX-PH-10"),
    ("wildcard-message", lines(HEADER, {"expect": "${_}"}), "TX-PH-10"),
    (
        "ignored-member",
        lines(with_header(ignore=["/result/*"]), {"expect": {"result": {"t": 1}}}),
        "TX-MATCH-07",
    ),
    (
        "bad-example",
        lines(HEADER, {"expect": {"a": "${x:int}"}, "example": {"a": "s"}}),
        "TX-LINT-01",
    ),
    ("wrong-id", lines(with_header(scenario="acp/lint/other"), SEND), "TX-FORMAT-05"),
    ("not-in-manifest", lines(with_header(requirements=["ACP-NEW-01"]), SEND), "TX-HEADER-03"),
    ("unknown-prefix", lines(with_header(requirements=["TX-RUN-01"]), SEND), "TX-HEADER-03"),
]


@pytest.mark.req("TX-LINT-01", "TX-LINT-02", "TX-FORMAT-08", "TX-REPORT-03", "TX-STDERR-02")
@pytest.mark.parametrize(("name", "text", "rule"), CASES, ids=[c[0] for c in CASES])
def test_lint_reports_each_broken_rule(tmp_path: Path, name: str, text: str, rule: str) -> None:
    fixtures = make_corpus(tmp_path)
    path = fixtures / "acp" / "lint" / "case.jsonl"
    path.write_bytes(text.encode("utf-8"))
    problems = lint_paths(fixtures, [path], None)
    assert rule in {p.rule for p in problems}, [str(p) for p in problems]
    assert all(
        str(p).startswith("fixtures/acp/lint/case.jsonl:") for p in problems if p.rule == rule
    )


def test_a_clean_scenario_passes_lint_and_exits_zero(tmp_path: Path) -> None:
    fixtures = make_corpus(tmp_path)
    path = fixtures / "acp" / "lint" / "case.jsonl"
    path.write_text(lines(HEADER, SEND, EXPECT, {"send": {"s": "${sid}", "x": "$${x-y} costs $5"}}))
    assert lint_paths(fixtures, [path], None) == []
    assert run_lint(fixtures, [path], None) == 0


@pytest.mark.req("TX-PROFILE-01", "TX-PROFILE-02", "TX-NEEDS-01", "TX-NEEDS-03")
def test_an_acp_scenario_that_needs_a_capability_and_begins_with_initialize_is_clean(
    tmp_path: Path,
) -> None:
    fixtures = make_corpus(tmp_path)
    path = fixtures / "acp" / "lint" / "case.jsonl"
    head = with_header(profile="acp", needs=["loadSession", "sessionCapabilities.close"])
    path.write_text(lines(head, SEND, EXPECT, NEW))
    assert lint_paths(fixtures, [path], None) == []


def test_corpus_level_rules_find_orphans_strays_and_bad_xfail_lines(tmp_path: Path) -> None:
    fixtures = make_corpus(tmp_path)
    (fixtures / "acp" / "lint" / "case.jsonl").write_text(lines(HEADER, SEND))
    (fixtures / "_support" / "models").mkdir(parents=True)
    (fixtures / "_support" / "models" / "unused.json").write_text("{}")
    (fixtures / "acp" / "notes.txt").write_text("stray")
    (fixtures / "expected-failures").mkdir()
    (fixtures / "expected-failures" / "x.txt").write_text("acp/lint/case\n")
    rules = {p.rule: str(p) for p in lint_paths(fixtures, [], None)}
    assert set(rules) == {"TX-LINT-01", "TX-FORMAT-06", "TX-XFAIL-01"}, rules
    assert "unused.json" in rules["TX-LINT-01"]
    assert run_lint(fixtures, [], None) == 2


@pytest.mark.req("TX-COVER-02")
def test_lint_with_spec_rejects_withdrawn_and_undefined_ids(tmp_path: Path) -> None:
    fixtures = make_corpus(tmp_path)
    spec = tmp_path / "spec"
    spec.mkdir()
    (spec / "acp.md").write_text("- **ACP-PROMPT-22** Withdrawn: superseded by MCP-RESULT-16.\n")
    path = fixtures / "acp" / "lint" / "case.jsonl"
    path.write_text(lines(with_header(requirements=["ACP-TR-01", "ACP-PROMPT-22"]), SEND))
    messages = [p.message for p in lint_paths(fixtures, [path], spec)]
    assert any("ACP-PROMPT-22: withdrawn" in m for m in messages), messages
    assert any("ACP-TR-01: not defined" in m for m in messages), messages
