"""JSON reading and writing that keeps what the matcher needs to stay strict.

Implements transcripts.md §1 (TX-FORMAT-03, TX-FORMAT-07) and the scalar rules
of §6 (TX-MATCH-04, TX-MATCH-08).

Design: the stdlib decoder does the lexing; hooks keep the number kind (an
integer-kind number stays an ``int``, a real-kind number becomes a ``Real`` that
remembers its text), reject the non-standard constants, and remember duplicate
member names instead of silently keeping the last one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TypeAlias


@dataclass(frozen=True, slots=True, eq=False)
class Real:
    """A real-kind number, compared as an exact decimal and written back verbatim."""

    text: str
    value: Decimal = field(init=False)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "value", Decimal(self.text))
        except InvalidOperation as exc:  # pragma: no cover - the decoder only hands us numbers
            raise ValueError(f"not a number: {self.text!r}") from exc

    def __eq__(self, other: object) -> bool:
        # [TX-MATCH-04] same kind, exact decimal value: 1.5 equals 1.50
        return isinstance(other, Real) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Real({self.text})"


JSON: TypeAlias = bool | int | Real | str | list["JSON"] | dict[str, "JSON"] | None


class JObject(dict[str, JSON]):
    """An object read from the IUT that had a member name more than once."""

    duplicates: tuple[str, ...] = ()


class JsonError(ValueError):
    """The text is not one strict JSON value."""


def _reject_constant(name: str) -> JSON:
    # [TX-FORMAT-03] NaN, Infinity and -Infinity are not JSON
    raise JsonError(f"non-standard literal {name}")


def _strict_pairs(pairs: list[tuple[str, JSON]]) -> JSON:
    out: dict[str, JSON] = {}
    for key, value in pairs:
        if key in out:
            raise JsonError(f"duplicate member name {key!r}")
        out[key] = value
    return out


def _tolerant_pairs(pairs: list[tuple[str, JSON]]) -> JSON:
    out: dict[str, JSON] = {}
    dups: list[str] = []
    for key, value in pairs:
        if key in out and key not in dups:
            dups.append(key)
        out[key] = value
    if not dups:
        return out
    # [TX-MATCH-08] keep the evidence so the matcher can report duplicate-key
    marked = JObject(out)
    marked.duplicates = tuple(sorted(dups))
    return marked


_STRICT = json.JSONDecoder(
    parse_float=Real, parse_constant=_reject_constant, object_pairs_hook=_strict_pairs
)
_TOLERANT = json.JSONDecoder(
    parse_float=Real, parse_constant=_reject_constant, object_pairs_hook=_tolerant_pairs
)


def loads(text: str, *, allow_duplicates: bool = False) -> JSON:
    """Parse exactly one JSON value.

    With ``allow_duplicates`` (IUT output), objects with repeated names come back
    as ``JObject``; otherwise (scenario files) a repeated name is an error.

    Raises:
        JsonError: the text is not a single strict JSON value.
    """
    decoder = _TOLERANT if allow_duplicates else _STRICT
    try:
        value: JSON = decoder.decode(text)
    except JsonError:
        raise
    except (ValueError, RecursionError) as exc:
        raise JsonError(str(exc)) from exc
    return value


def kind(value: JSON) -> str:
    """The JSON kind of a value, with numbers split by lexical kind ([TX-FORMAT-07])."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, Real):
        return "real"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def strict_equal(left: JSON, right: JSON) -> bool:
    """Equality by kind and value, never Python's ``True == 1`` or ``1 == 1.0``."""
    if kind(left) != kind(right):
        return False
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(
            strict_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, dict) and isinstance(right, dict):
        if isinstance(left, JObject) and left.duplicates:
            return False
        if isinstance(right, JObject) and right.duplicates:
            return False
        return left.keys() == right.keys() and all(
            strict_equal(v, right[k]) for k, v in left.items()
        )
    return left == right


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def dumps(value: JSON) -> str:
    """Compact JSON with non-ASCII kept and real numbers in their original text ([TX-FRAME-02])."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Real):
        return value.text
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ",".join(dumps(item) for item in value) + "]"
    return "{" + ",".join(f"{_string(k)}:{dumps(v)}" for k, v in value.items()) + "}"


def pretty(value: JSON, indent: int = 0) -> str:
    """Indented JSON for reports; scalars are written as ``dumps`` writes them."""
    pad = "  " * (indent + 1)
    if isinstance(value, list) and value:
        inner = ",\n".join(pad + pretty(item, indent + 1) for item in value)
        return "[\n" + inner + "\n" + "  " * indent + "]"
    if isinstance(value, dict) and value:
        inner = ",\n".join(f"{pad}{_string(k)}: {pretty(v, indent + 1)}" for k, v in value.items())
        return "{\n" + inner + "\n" + "  " * indent + "}"
    return dumps(value)


def escape_pointer_token(token: str) -> str:
    """RFC 6901 escaping of one reference token."""
    return token.replace("~", "~0").replace("/", "~1")


def string_values(value: JSON, at: str = "") -> Iterator[tuple[str, str]]:
    """(pointer, string) for every string value, in document order; member names are skipped."""
    if isinstance(value, str):
        yield at, value
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from string_values(item, f"{at}/{index}")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from string_values(item, f"{at}/{escape_pointer_token(key)}")
