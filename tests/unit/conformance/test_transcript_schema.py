"""The transcript format's JSON Schema and the oracle's own checks say the same (issue 17 item 2).

fixtures/schema/transcript.schema.json states the lines of a scenario; core/header.py keeps
the header as a table of members, core/transcript.py the verbs and their modifiers. These
tests hold each to the other: the same members with the same types and the same required
ones, the same verbs, modifiers, actions and enumerations; every corpus file valid under the
schema, by the oracle's built-in checker and by the `jsonschema` package; the two checkers
giving the same verdicts; and `lint` reporting what the schema rejects.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from zeroclaw_ref.conformance.core import header as header_module
from zeroclaw_ref.conformance.core import profiles, transcript
from zeroclaw_ref.conformance.core.header import HEADER
from zeroclaw_ref.conformance.core.jsonlex import JSON, loads
from zeroclaw_ref.conformance.core.suite import discover
from zeroclaw_ref.conformance.core.transcript import TranscriptError, load
from zeroclaw_ref.conformance.tools import transcript_schema
from zeroclaw_ref.conformance.tools.lint import lint_paths
from zeroclaw_ref.conformance.tools.transcript_schema import (
    FRAME_DEF,
    HEADER_DEF,
    SchemaError,
    errors,
    read_schema,
)

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures"
SCHEMA_PATH = FIXTURES / "schema" / "transcript.schema.json"
SCHEMA: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
HEADER_SCHEMA: dict[str, Any] = SCHEMA["$defs"]["header"]
FRAMES: dict[str, dict[str, Any]] = {
    branch["title"]: branch for branch in SCHEMA["$defs"]["frame"]["oneOf"]
}
MINIMAL: dict[str, JSON] = {
    "format": 2,
    "scenario": "acp/schema/case",
    "description": "The agent answers the handshake.",
    "requirements": ["ACP-TR-01"],
    "level": "required",
    "profile": "zeroclaw",
}
# one value of each JSON type, to feed a member a type it does not have
SAMPLES: dict[str, JSON] = {
    "string": "x",
    "integer": 3,
    "array": [],
    "object": {},
    "boolean": True,
    "null": None,
}


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").rstrip("\n").split("\n")


def _jsonschema() -> Any:
    return pytest.importorskip("jsonschema")


@pytest.mark.req("TX-HEADER-01")
def test_the_header_table_and_the_schema_name_the_same_members_with_the_same_types() -> None:
    assert set(HEADER) == set(HEADER_SCHEMA["properties"])
    table_types = {name: member.type for name, member in HEADER.items()}
    schema_types = {name: p.get("type") for name, p in HEADER_SCHEMA["properties"].items()}
    assert table_types == schema_types
    required = {name for name, member in HEADER.items() if member.required is not None}
    assert required == set(HEADER_SCHEMA["required"])
    assert HEADER_SCHEMA["patternProperties"] == {"^x-": {}}  # x- members are free
    assert HEADER_SCHEMA["additionalProperties"] is False


@pytest.mark.req("TX-HEADER-01", "TX-HEADER-09", "TX-FRAME-01")
def test_setup_channels_verbs_modifiers_and_enumerations_agree() -> None:
    props = HEADER_SCHEMA["properties"]
    assert set(props["setup"]["properties"]) == header_module.SETUP_MEMBERS
    channel_branches = props["channels"]["additionalProperties"]["oneOf"]
    options = {
        b["properties"]["transport"]["const"]: set(b["properties"]) - {"role", "transport"}
        for b in channel_branches
    }
    assert options == {t: set(o) for t, o in header_module.CHANNEL_OPTIONS.items()}
    assert tuple(options) == header_module.TRANSPORTS
    assert props["format"]["const"] == header_module.FORMAT_MAJOR
    assert tuple(props["level"]["enum"]) == header_module.LEVELS
    assert tuple(props["profile"]["enum"]) == profiles.PROFILES
    assert tuple(props["needs"]["items"]["enum"]) == profiles.NEEDS
    assert tuple(props["client_needs"]["items"]["enum"]) == profiles.CLIENT_CAPABILITIES
    assert tuple(FRAMES) == transcript.VERBS
    for verb, branch in FRAMES.items():
        assert branch["required"] == [verb]
        assert set(branch["properties"]) - {verb} == transcript.MODIFIERS[verb], verb
    assert tuple(FRAMES["do"]["properties"]["do"]["enum"]) == transcript.DO_ACTIONS


@pytest.mark.req("TX-HEADER-01")
@pytest.mark.parametrize("name", sorted(HEADER))
def test_each_member_type_in_the_table_is_the_type_the_check_accepts(
    tmp_path: Path, name: str
) -> None:
    """The type column is true of the code: any other JSON type is a transcript error."""
    folder = tmp_path / "fixtures" / "acp" / "schema"
    folder.mkdir(parents=True)
    path = folder / "case.jsonl"
    wanted = HEADER[name].type
    for kind, sample in SAMPLES.items():
        if kind == wanted:
            continue
        header = {**MINIMAL, name: sample}
        path.write_text(json.dumps(header) + '\n{"note": "n"}\n', encoding="utf-8")
        with pytest.raises(TranscriptError):
            load(path, tmp_path / "fixtures")
        assert errors(loads(json.dumps(header)), HEADER_DEF, SCHEMA) != [], (name, kind)


def test_the_minimal_header_is_valid_for_both() -> None:
    assert errors(MINIMAL, HEADER_DEF, SCHEMA) == []
    _jsonschema().Draft202012Validator(SCHEMA).validate(MINIMAL)


@pytest.mark.req("TX-LINT-01")
def test_every_corpus_file_validates_with_the_built_in_checker_and_with_jsonschema() -> None:
    js = _jsonschema()
    js.Draft202012Validator.check_schema(SCHEMA)
    header_v = js.Draft202012Validator({**SCHEMA, "$ref": HEADER_DEF})
    frame_v = js.Draft202012Validator({**SCHEMA, "$ref": FRAME_DEF})
    files = discover(FIXTURES, [])
    assert len(files) > 100
    problems: list[str] = []
    for path in files:
        for number, line in enumerate(_lines(path), 1):
            ref, check = (HEADER_DEF, header_v) if number == 1 else (FRAME_DEF, frame_v)
            problems += [f"{path.name}:{number}: {e}" for e in errors(loads(line), ref, SCHEMA)]
            problems += [
                f"{path.name}:{number}: {e.message}" for e in check.iter_errors(json.loads(line))
            ]
    assert problems == []


# invalid lines, each against the definition it would be checked by
BROKEN: list[tuple[str, str]] = [
    (HEADER_DEF, '{"format": 2, "scenario": "acp/a/b", "level": "required"}'),
    (HEADER_DEF, json.dumps({**MINIMAL, "bogus": 1})),
    (HEADER_DEF, json.dumps({**MINIMAL, "requirements": ["ACP-TR-01", "ACP-TR-01"]})),
    (HEADER_DEF, json.dumps({**MINIMAL, "description": "x" * 201})),
    (
        HEADER_DEF,
        json.dumps({**MINIMAL, "channels": {"acp": {"role": "mcp-server", "transport": "stdio"}}}),
    ),
    (
        HEADER_DEF,
        json.dumps(
            {**MINIMAL, "channels": {"fs": {"role": "mcp-server", "transport": "sse", "get": "x"}}}
        ),
    ),
    (HEADER_DEF, json.dumps({**MINIMAL, "timeouts": {"expect": 0}})),
    (HEADER_DEF, json.dumps({**MINIMAL, "needs": ["telepathy"]})),
    (HEADER_DEF, json.dumps({**MINIMAL, "setup": {"model": "/etc/passwd"}})),
    (FRAME_DEF, '{"send": {}, "expect": {}}'),
    (FRAME_DEF, '{"do": "sleep_ms", "ms": 0}'),
    (FRAME_DEF, '{"expect_exit": 256}'),
    (FRAME_DEF, '{"expect_unordered": [{}]}'),
    (FRAME_DEF, '{"note": "n", "ch": "fs"}'),
    (FRAME_DEF, '{"send_raw": "x", "stream": "stdin"}'),
]


@pytest.mark.parametrize(("ref", "line"), BROKEN, ids=range(len(BROKEN)))
def test_the_built_in_checker_rejects_what_jsonschema_rejects(ref: str, line: str) -> None:
    js = _jsonschema()
    assert not js.Draft202012Validator({**SCHEMA, "$ref": ref}).is_valid(json.loads(line))
    assert errors(loads(line), ref, SCHEMA) != []


def _corpus_copy(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    fixtures = tmp_path / "fixtures"
    (fixtures / "schema").mkdir(parents=True)
    (fixtures / "acp" / "schema").mkdir(parents=True)
    for name in ("VERSION", "spec-index.json", "requirements.json"):
        shutil.copy(FIXTURES / name, fixtures / name)
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    edit(schema)
    (fixtures / "schema" / "transcript.schema.json").write_text(json.dumps(schema))
    send = {"send": {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}}
    (fixtures / "acp" / "schema" / "case.jsonl").write_text(
        json.dumps(MINIMAL) + "\n" + json.dumps(send) + "\n", encoding="utf-8"
    )
    return fixtures


@pytest.mark.req("TX-LINT-01")
def test_lint_reports_what_the_schema_rejects(tmp_path: Path) -> None:
    def stricter(schema: dict[str, Any]) -> None:
        schema["$defs"]["header"]["properties"]["description"]["maxLength"] = 10

    fixtures = _corpus_copy(tmp_path, stricter)
    problems = [str(p) for p in lint_paths(fixtures, [fixtures / "acp"], None)]
    assert problems == [
        "fixtures/acp/schema/case.jsonl:1: TX-LINT-01: schema/transcript.schema.json: "
        "/description: allows at most 10 characters"
    ]
    assert lint_paths(_corpus_copy(tmp_path / "same", lambda s: None), [], None) == []


@pytest.mark.req("TX-LINT-01")
def test_a_schema_keyword_the_checker_lacks_is_refused_not_ignored(tmp_path: Path) -> None:
    def unknown(schema: dict[str, Any]) -> None:
        schema["$defs"]["header"]["properties"]["tags"]["contains"] = {"const": "x"}

    fixtures = _corpus_copy(tmp_path, unknown)
    with pytest.raises(SchemaError, match="contains"):
        read_schema(fixtures)
    problems = [str(p) for p in lint_paths(fixtures, [], None)]
    assert len(problems) == 1 and "keywords this checker lacks: contains" in problems[0]


def test_a_corpus_without_the_schema_is_linted_without_it(tmp_path: Path) -> None:
    assert transcript_schema.read_schema(tmp_path) is None
