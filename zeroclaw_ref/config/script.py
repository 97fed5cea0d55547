"""Parse the script of a `scripted` provider (config.md CFG-PROV-10, CFG-VALID-03).

A script is a JSON or TOML document holding `turns`; each turn may carry `thoughts`,
`chunks`, `tool_calls` and `error`. Problems are reported as one reason string, which the
validator prefixes with `providers.<name>.script: `.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from zeroclaw_ref.config.model import ScriptToolCall, ScriptTurn
from zeroclaw_ref.core import jsontypes

_TURN_KEYS = frozenset({"thoughts", "chunks", "tool_calls", "error"})
_CALL_KEYS = frozenset({"id", "name", "arguments"})


class ScriptError(Exception):
    """The script cannot be used; `str()` is the reason."""


def script_path(config_dir: Path, raw: str) -> Path:
    """[CFG-PROV-02] the script path, relative to the configuration directory."""
    path = Path(raw).expanduser()
    return path if path.is_absolute() else config_dir / path


def load_script(path: Path) -> tuple[ScriptTurn, ...]:
    """Read and parse a script file.

    Raises:
        ScriptError with the reason; the configuration does not load.
    """
    suffix = path.suffix.lower()
    if suffix not in (".json", ".toml"):
        raise ScriptError(f"unsupported script extension '{suffix}' (expected .json or .toml)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ScriptError(f"cannot read {path}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
        document: object = jsontypes.loads(text) if suffix == ".json" else tomllib.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        # json.JSONDecodeError and tomllib.TOMLDecodeError are both ValueErrors.
        raise ScriptError(f"cannot parse {path.name}: {exc}") from None
    return parse_script(document)


def parse_script(document: object) -> tuple[ScriptTurn, ...]:
    """Check the shape of a parsed script and build its turns.

    Raises:
        ScriptError naming the first offending element.
    """
    if not isinstance(document, dict) or not isinstance(document.get("turns"), list):
        raise ScriptError("expected an object with a list 'turns'")
    turns = document["turns"]
    assert isinstance(turns, list)
    return tuple(_turn(i, turn) for i, turn in enumerate(turns))


def _strings(where: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ScriptError(f"{where} must be a list of strings")
    return tuple(str(v) for v in value)


def _turn(index: int, turn: object) -> ScriptTurn:
    where = f"turns[{index}]"
    if not isinstance(turn, dict):
        raise ScriptError(f"{where} must be an object")
    unknown = sorted(set(turn) - _TURN_KEYS)
    if unknown:
        raise ScriptError(f"{where} has unknown key '{unknown[0]}'")
    error = turn.get("error")
    if error is not None and not isinstance(error, str):
        raise ScriptError(f"{where}.error must be a string")
    calls = turn.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ScriptError(f"{where}.tool_calls must be a list")
    return ScriptTurn(
        thoughts=_strings(f"{where}.thoughts", turn.get("thoughts", [])),
        chunks=_strings(f"{where}.chunks", turn.get("chunks", [])),
        tool_calls=tuple(_call(f"{where}.tool_calls[{i}]", c) for i, c in enumerate(calls)),
        error=error,
    )


def _call(where: str, call: object) -> ScriptToolCall:
    if not isinstance(call, dict):
        raise ScriptError(f"{where} must be an object")
    unknown = sorted(set(call) - _CALL_KEYS)
    if unknown:
        raise ScriptError(f"{where} has unknown key '{unknown[0]}'")
    name, call_id, arguments = call.get("name"), call.get("id"), call.get("arguments")
    if not isinstance(name, str) or not name:
        raise ScriptError(f"{where}.name must be a non-empty string")
    if call_id is not None and not isinstance(call_id, str):
        raise ScriptError(f"{where}.id must be a string")
    if not isinstance(arguments, dict):
        raise ScriptError(f"{where}.arguments must be an object")
    try:
        encoded = jsontypes.dumps(arguments)
    except (TypeError, ValueError):
        # TOML dates and times, or non-finite floats, have no JSON form.
        raise ScriptError(f"{where}.arguments must hold JSON values only") from None
    return ScriptToolCall(name=name, arguments_json=encoded, id=call_id)
