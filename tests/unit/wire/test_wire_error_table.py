"""Every ACP error is a row of acp.md Table 14-1: the code enum, and every error the golden
corpus expects on the ACP channel (acp.md §14)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from zeroclaw_ref.wire.errors import ErrorCode

REPO = Path(__file__).resolve().parents[3]
SPEC = REPO.parent / "shared" / "spec" / "acp.md"
TABLE_CODES = {-32700, -32600, -32601, -32602, -32603, -32000, -32001, -32002}
NEVER = {-32003, -32010, -32011, -32800}


def _pattern(text: str) -> str:
    """A table message with its `<placeholders>` as wildcards."""
    parts = re.split(r"<[^<>]+>", text)
    return ".*".join(re.escape(p) for p in parts)


def _table() -> dict[int, list[re.Pattern[str]]]:
    text = SPEC.read_text(encoding="utf-8")
    start = text.index("Table 14-1")
    rows: dict[int, list[re.Pattern[str]]] = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("Table 14-2"):
            break
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 5 or not cells[1].startswith("−"):
            continue
        code = -int(cells[1][1:])
        message = cells[3]
        found = re.fullmatch(r"``\s?(.*?)\s?``|`(.*?)`(?: \(.*\))?", message)
        if found is None:
            continue  # the P1–P11 row, read below
        literal = found.group(1) if found.group(1) is not None else found.group(2)
        rows.setdefault(code, []).append(re.compile(_pattern(literal)))
    block = text[text.index("Element error messages, exact text") :]
    block = block[block.index("```text") + 7 : block.index("```", block.index("```text") + 7)]
    for line in block.strip().splitlines():
        rows.setdefault(-32602, []).append(re.compile(_pattern(line.split(None, 1)[1].strip())))
    return rows


def _expected_errors() -> list[tuple[str, int, str]]:
    out = []
    for path in sorted((REPO / "fixtures" / "acp").rglob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        header = json.loads(lines[0])
        if header.get("profile") == "acp":
            continue  # base-ACP scenarios leave codes and texts to the agent under test
        if any(r.startswith("ZC-") for r in header.get("requirements", [])):
            continue  # the project's own methods (session/list, delete) have their own texts
        for line in lines[1:]:
            frame = json.loads(line)
            if frame.get("ch", "acp") != "acp":
                continue
            values = frame.get("expect_unordered") or [frame.get("expect")]
            for value in values:
                if isinstance(value, dict) and isinstance(value.get("error"), dict):
                    error = value["error"]
                    out.append((path.stem, error.get("code"), error.get("message")))
    return out


@pytest.mark.req("ACP-ERR-01")
def test_the_code_enum_is_exactly_the_table() -> None:
    assert {int(c) for c in ErrorCode} == TABLE_CODES
    assert not NEVER & {int(c) for c in ErrorCode}


@pytest.mark.req("ACP-ERR-01")
def test_no_forbidden_code_appears_in_the_acp_sources() -> None:
    for folder in ("acp", "wire"):
        for source in (REPO / "zeroclaw_ref" / folder).rglob("*.py"):
            text = source.read_text(encoding="utf-8")
            for code in NEVER:
                assert str(code) not in text, f"{source}: {code}"


@pytest.mark.skipif(not SPEC.exists(), reason="the shared spec is not next to the repository")
@pytest.mark.req("ACP-ERR-01")
def test_every_error_the_corpus_expects_is_a_table_row() -> None:
    table = _table()
    assert set(table) == TABLE_CODES
    errors = _expected_errors()
    assert len(errors) > 40
    for scenario, code, message in errors:
        assert code in table, f"{scenario}: code {code} is not in Table 14-1"
        assert isinstance(message, str), scenario
        concrete = re.sub(r"\$\{[^}]*\}", "x", message)
        assert any(p.fullmatch(concrete) for p in table[code]), f"{scenario}: {message!r}"
