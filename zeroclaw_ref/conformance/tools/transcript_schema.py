"""The transcript format's own JSON Schema, as ``lint`` applies it (issue 17 item 2).

``fixtures/schema/transcript.schema.json`` states a scenario's lines for tools that are not
this oracle: ``#/$defs/header`` is line 1, ``#/$defs/frame`` every later line. ``lint``
checks every scenario that loads against it, so the schema cannot drift from the files; the
table of header members (core/header.py) is held to it by a test.

Design: the oracle is stdlib-only ([TX-RUN-10]), so this module checks the subset of JSON
Schema 2020-12 that the file uses, and refuses a schema that uses any other keyword rather
than ignoring it. Two readings are this format's and stricter than the standard: an
``integer`` is an integer-kind number as jsonlex reads it (``2.0`` is not one, as the
runner has it), and equality (``const``, ``enum``, ``uniqueItems``) never equates a boolean
with a number. The test suite validates the corpus with the ``jsonschema`` package too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from decimal import Decimal
from pathlib import Path

from ..core.jsonlex import JSON, JsonError, Real, dumps, escape_pointer_token, kind, loads
from ..core.transcript import Problem, Scenario

SCHEMA_FILE = Path("schema") / "transcript.schema.json"
HEADER_DEF = "#/$defs/header"
FRAME_DEF = "#/$defs/frame"
# keywords that only describe; every other keyword must be one _check knows
ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "$comment", "title", "description"})
KEYWORDS = frozenset(
    {"type", "enum", "const", "properties", "required", "additionalProperties"}
    | {"patternProperties", "propertyNames", "items", "minItems", "maxItems", "uniqueItems"}
    | {"minimum", "maximum", "exclusiveMinimum", "minLength", "maxLength", "pattern"}
    | {"anyOf", "oneOf", "not", "$ref"}
)


class SchemaError(Exception):
    """The schema file is unreadable or uses a keyword this checker does not implement."""


def read_schema(fixtures: Path) -> dict[str, JSON] | None:
    """The corpus's transcript schema; None when the corpus has none (a copied-out runner)."""
    path = fixtures / SCHEMA_FILE
    if not path.is_file():
        return None
    try:
        schema = loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, JsonError) as exc:
        raise SchemaError(f"{SCHEMA_FILE}: {exc}") from None
    if not isinstance(schema, dict):
        raise SchemaError(f"{SCHEMA_FILE}: not a JSON object")
    unknown = sorted(set(_keywords(schema)) - KEYWORDS - ANNOTATIONS)
    if unknown:
        raise SchemaError(f"{SCHEMA_FILE}: keywords this checker lacks: {', '.join(unknown)}")
    return schema


def _keywords(schema: JSON) -> Iterator[str]:
    """Every keyword of every subschema (the members of properties-like maps are names)."""
    if isinstance(schema, list):
        for item in schema:
            yield from _keywords(item)
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        yield key
        if key in ("properties", "patternProperties", "$defs") and isinstance(value, dict):
            for sub in value.values():
                yield from _keywords(sub)
        elif key not in ("enum", "const", "required"):
            yield from _keywords(value)


def errors(value: JSON, ref: str, root: Mapping[str, JSON]) -> list[str]:
    """Why ``value`` fails the subschema at ``ref`` (``#/...``): ``<pointer>: <reason>``."""
    return list(_check(value, _resolve(ref, root), root, ""))


def scenario_problems(sc: Scenario, root: Mapping[str, JSON]) -> list[Problem]:
    """Line 1 against the header definition, every frame against the frame definition."""
    lines: list[tuple[int, JSON, str]] = [(1, dict(sc.header), HEADER_DEF)]
    lines += [(f.line, {f.verb: f.value, **f.mods}, FRAME_DEF) for f in sc.frames]
    found: list[Problem] = []
    for line, value, ref in lines:
        for reason in errors(value, ref, root):
            found.append(Problem(sc.display, line, "TX-LINT-01", f"{SCHEMA_FILE}: {reason}"))
    return found


def _resolve(ref: str, root: Mapping[str, JSON]) -> JSON:
    if not ref.startswith("#"):
        raise SchemaError(f"only local references are supported, not {ref!r}")
    node: JSON = dict(root)
    for token in [t for t in ref[1:].split("/") if t]:
        token = token.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or token not in node:
            raise SchemaError(f"{ref!r} names nothing in the schema")
        node = node[token]
    return node


def _type_of(value: JSON) -> str:
    """The JSON Schema type name: jsonlex's kind, whose lexical "real" Schema calls "number"."""
    found = kind(value)
    return "number" if found == "real" else found


def _key(value: JSON) -> str:
    """A text equal for equal JSON values (numbers by value; booleans never numbers)."""
    if isinstance(value, Real) or (isinstance(value, int) and not isinstance(value, bool)):
        return f"n:{Decimal(value.text if isinstance(value, Real) else value).normalize()}"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k!r}:{_key(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_key(v) for v in value) + "]"
    return dumps(value)


def _number(value: JSON) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | Real):
        return None
    return float(value.value) if isinstance(value, Real) else float(value)


def _check(value: JSON, schema: JSON, root: Mapping[str, JSON], at: str) -> Iterator[str]:
    """The reasons ``value`` fails ``schema``; nothing when it holds."""
    if schema is True or schema == {}:
        return
    if schema is False:
        yield f"{at or '/'}: nothing is allowed here"
        return
    if not isinstance(schema, dict):
        raise SchemaError(f"a subschema must be an object or a boolean, not {dumps(schema)}")
    where = at or "/"
    if "$ref" in schema and isinstance(schema["$ref"], str):
        yield from _check(value, _resolve(schema["$ref"], root), root, at)
    yield from _check_kind(value, schema, where)
    yield from _check_choices(value, schema, root, at)
    if isinstance(value, dict):
        yield from _check_object(value, schema, root, at)
    elif isinstance(value, list):
        yield from _check_array(value, schema, root, at)
    elif isinstance(value, str):
        yield from _check_string(value, schema, where)
    elif (number := _number(value)) is not None:
        yield from _check_number(number, schema, where)


def _check_kind(value: JSON, schema: Mapping[str, JSON], where: str) -> Iterator[str]:
    wanted = schema.get("type")
    if wanted is not None:
        names = wanted if isinstance(wanted, list) else [wanted]
        actual = _type_of(value)
        if actual not in names and not (actual == "integer" and "number" in names):
            yield f"{where}: must be {' or '.join(map(str, names))}, not {actual}"
    if "const" in schema and _key(value) != _key(schema["const"]):
        yield f"{where}: must be {dumps(schema['const'])}"
    choices = schema.get("enum")
    if isinstance(choices, list) and _key(value) not in {_key(c) for c in choices}:
        yield f"{where}: must be one of {', '.join(dumps(c) for c in choices)}"


def _check_choices(
    value: JSON, schema: Mapping[str, JSON], root: Mapping[str, JSON], at: str
) -> Iterator[str]:
    where = at or "/"
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if not isinstance(branches, list):
            continue
        failures = [list(_check(value, b, root, at)) for b in branches]
        holding = sum(1 for f in failures if not f)
        if holding == 0:
            # the branch that came closest says the most useful thing
            yield from min(failures, key=len)
        elif keyword == "oneOf" and holding > 1:
            yield f"{where}: matches {holding} of the oneOf branches, not exactly one"
    if "not" in schema and not list(_check(value, schema["not"], root, at)):
        yield f"{where}: must not be {dumps(value)}"


def _check_object(
    value: dict[str, JSON], schema: Mapping[str, JSON], root: Mapping[str, JSON], at: str
) -> Iterator[str]:
    where = at or "/"
    required = schema.get("required", [])
    for name in required if isinstance(required, list) else []:
        if isinstance(name, str) and name not in value:
            yield f"{where}: lacks {name!r}"
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extra = schema.get("additionalProperties", True)
    names = schema.get("propertyNames")
    for name, member in value.items():
        here = f"{at}/{escape_pointer_token(name)}"
        if names is not None:
            for reason in _check(name, names, root, here):
                yield f"{here}: the name {name!r} " + reason.split(": ", 1)[1]
        matched = False
        if isinstance(properties, dict) and name in properties:
            matched = True
            yield from _check(member, properties[name], root, here)
        for pattern, sub in patterns.items() if isinstance(patterns, dict) else []:
            if re.search(pattern, name):
                matched = True
                yield from _check(member, sub, root, here)
        if not matched:
            if extra is False:
                yield f"{where}: member {name!r} is not allowed"
            else:
                yield from _check(member, extra, root, here)


def _check_array(
    value: list[JSON], schema: Mapping[str, JSON], root: Mapping[str, JSON], at: str
) -> Iterator[str]:
    where = at or "/"
    low, high = schema.get("minItems"), schema.get("maxItems")
    if isinstance(low, int) and len(value) < low:
        yield f"{where}: needs at least {low} item(s)"
    if isinstance(high, int) and len(value) > high:
        yield f"{where}: allows at most {high} item(s)"
    if schema.get("uniqueItems") is True and len({_key(v) for v in value}) != len(value):
        yield f"{where}: items must be distinct"
    if "items" in schema:
        for index, item in enumerate(value):
            yield from _check(item, schema["items"], root, f"{at}/{index}")


def _check_string(value: str, schema: Mapping[str, JSON], where: str) -> Iterator[str]:
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(low, int) and len(value) < low:
        yield f"{where}: needs at least {low} character(s)"
    if isinstance(high, int) and len(value) > high:
        yield f"{where}: allows at most {high} characters"
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and not re.search(pattern, value):
        yield f"{where}: {dumps(value)} does not match {pattern}"


def _check_number(value: float, schema: Mapping[str, JSON], where: str) -> Iterator[str]:
    low, high = _number(schema.get("minimum")), _number(schema.get("maximum"))
    above = _number(schema.get("exclusiveMinimum"))
    if low is not None and value < low:
        yield f"{where}: must be at least {low:g}"
    if high is not None and value > high:
        yield f"{where}: must be at most {high:g}"
    if above is not None and value <= above:
        yield f"{where}: must be greater than {above:g}"
