"""Scripts of the `scripted` provider (config.md CFG-PROV-10, CFG-VALID-03)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from zeroclaw_ref.config.model import ConfigSnapshot, ScriptToolCall, ScriptTurn
from zeroclaw_ref.config.script import ScriptError, parse_script

Loader = Callable[..., ConfigSnapshot]
Failer = Callable[..., list[str]]
PROVIDER = "[providers.s]\nkind = 'scripted'\nscript = '{}'\n"

JSON_SCRIPT = """{"turns": [
  {"thoughts": ["Need the README."], "chunks": ["Reading ", "it now."],
   "tool_calls": [{"id": "call_a", "name": "file_read", "arguments": {"path": "README.md"}}]},
  {"chunks": ["Done."]}, {"error": "boom"}]}"""

TOML_SCRIPT = """[[turns]]
chunks = ["Running the tests."]
[[turns.tool_calls]]
name = "shell"
arguments = { command = "cargo test" }

[[turns]]
chunks = ["All green."]
"""


@pytest.mark.req("CFG-PROV-10")
def test_json_script_is_parsed_into_turns(load: Loader, tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "s.json").write_text(JSON_SCRIPT)
    turns = load(PROVIDER.format("scripts/s.json")).providers["s"].script_turns
    assert turns == (
        ScriptTurn(
            thoughts=("Need the README.",),
            chunks=("Reading ", "it now."),
            tool_calls=(ScriptToolCall("file_read", '{"path":"README.md"}', "call_a"),),
        ),
        ScriptTurn(chunks=("Done.",)),
        ScriptTurn(error="boom"),
    )


@pytest.mark.req("CFG-PROV-10")
def test_toml_script_is_parsed_into_turns(load: Loader, tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(TOML_SCRIPT)
    turns = load(PROVIDER.format("s.toml")).providers["s"].script_turns
    assert turns is not None and len(turns) == 2
    assert turns[0].tool_calls == (ScriptToolCall("shell", '{"command":"cargo test"}', None),)


@pytest.mark.req("CFG-VALID-03")
@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("s.yaml", "turns: []", "unsupported script extension '.yaml' (expected .json or .toml)"),
        ("s.json", "[]", "expected an object with a list 'turns'"),
        ("s.json", '{"turns": [{"chunk": []}]}', "turns[0] has unknown key 'chunk'"),
        ("s.json", '{"turns": [{"chunks": [1]}]}', "turns[0].chunks must be a list of strings"),
        (
            "s.json",
            '{"turns": [{"tool_calls": [{"name": "x", "arguments": []}]}]}',
            "turns[0].tool_calls[0].arguments must be an object",
        ),
        ("s.json", '{"turns": [{"error": 3}]}', "turns[0].error must be a string"),
    ],
)
def test_bad_scripts_are_load_errors(
    fail: Failer, tmp_path: Path, name: str, content: str, reason: str
) -> None:
    (tmp_path / name).write_text(content)
    assert fail(PROVIDER.format(name)) == [f"providers.s.script: {reason}"]


@pytest.mark.req("CFG-VALID-03")
def test_unparseable_script_is_a_load_error(fail: Failer, tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text("{")
    (line,) = fail(PROVIDER.format("s.json"))
    assert line.startswith("providers.s.script: cannot parse s.json: ")


@pytest.mark.req("CFG-PROV-10")
def test_parse_script_rejects_a_call_without_name() -> None:
    with pytest.raises(ScriptError, match=r"name must be a non-empty string"):
        parse_script({"turns": [{"tool_calls": [{"arguments": {}}]}]})
