"""Matching an expected value against an actual message (transcripts.md §6).

Design: ``match`` walks the expected value depth first, in the expected
object's member order, and stops at the first difference ([TX-MATCH-10]). It
binds lower-case names in the caller's dictionary as it goes; callers that may
need to undo (``expect_unordered``) pass a copy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .jsonlex import JSON, JObject, dumps, escape_pointer_token, kind, strict_equal
from .placeholders import (
    EMBEDDED_PATTERNS,
    EMBEDDED_TYPES,
    Placeholder,
    PlaceholderError,
    embedded_value,
    parse,
    type_matches,
)

ABSENT = "(absent)"


@dataclass(frozen=True, slots=True)
class Mismatch:
    """The first difference: where (in the actual message), why, and both sides there."""

    pointer: str
    reason: str
    expected: str
    actual: str


@dataclass(slots=True)
class MatchContext:
    """What matching needs besides the two values.

    ``lenient_host`` lets any string stand for a runner-provided name; lint uses
    it to check ``example`` members without a live run.
    """

    host: Mapping[str, str]
    bindings: dict[str, JSON]
    ignore: Sequence[tuple[str, ...]] = ()
    lenient_host: bool = False
    types: dict[str, str] = field(default_factory=dict)


def split_pointer(pointer: str) -> tuple[str, ...]:
    """RFC 6901 pointer to unescaped tokens."""
    if pointer == "":
        return ()
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:])


def is_ignored(tokens: tuple[str, ...], patterns: Sequence[tuple[str, ...]]) -> bool:
    """[TX-MATCH-07] a `*` token stands for any one member name or index."""
    for pattern in patterns:
        if len(pattern) == len(tokens) and all(
            p in ("*", t) for p, t in zip(pattern, tokens, strict=True)
        ):
            return True
    return False


def _show(value: JSON) -> str:
    return dumps(value)


def match(expected: JSON, actual: JSON, ctx: MatchContext) -> Mismatch | None:
    """Match one message; bindings made on success stay in ``ctx.bindings``.

    Raises:
        PlaceholderError: the expected value misuses a placeholder at run time
            (a transcript error, not a mismatch).
    """
    return _walk(expected, actual, ctx, ())


def _pointer(tokens: tuple[str, ...]) -> str:
    return "".join("/" + escape_pointer_token(t) for t in tokens)


def _walk(expected: JSON, actual: JSON, ctx: MatchContext, at: tuple[str, ...]) -> Mismatch | None:
    if isinstance(expected, str):
        template = parse(expected)
        whole = template.whole
        if whole is not None:
            return _match_whole(whole, actual, ctx, at)
        if template.literal is None:
            return _match_embedded(expected, actual, ctx, at)
        expected = template.literal
    if isinstance(expected, dict):
        return _match_object(expected, actual, ctx, at)
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return Mismatch(_pointer(at), "type", _show(expected), _show(actual))
        if len(expected) != len(actual):
            return Mismatch(
                _pointer(at), "length", f"{len(expected)} elements", f"{len(actual)} elements"
            )
        for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
            found = _walk(e, a, ctx, (*at, str(index)))
            if found is not None:
                return found
        return None
    # [TX-MATCH-04] scalars: same kind, then same value
    if kind(expected) != kind(actual):
        return Mismatch(_pointer(at), "type", _show(expected), _show(actual))
    if not strict_equal(expected, actual):
        return Mismatch(_pointer(at), "value", _show(expected), _show(actual))
    return None


def _match_object(
    expected: dict[str, JSON], actual: JSON, ctx: MatchContext, at: tuple[str, ...]
) -> Mismatch | None:
    if not isinstance(actual, dict):
        return Mismatch(_pointer(at), "type", _show(expected), _show(actual))
    if isinstance(actual, JObject) and actual.duplicates:
        # [TX-MATCH-08] a repeated name in the actual object
        name = actual.duplicates[0]
        return Mismatch(_pointer((*at, name)), "duplicate-key", ABSENT, f"{name!r} appears twice")
    compared = [
        k
        for k in actual
        # [TX-MATCH-06] an unpinned _meta is ignored
        if not (k == "_meta" and "_meta" not in expected) and not is_ignored((*at, k), ctx.ignore)
    ]
    missing = set(expected) - set(compared)
    extra = set(compared) - set(expected)
    # [TX-MATCH-10] key differences first, sorted by name
    for name in sorted(missing | extra):
        if name in missing:
            return Mismatch(_pointer((*at, name)), "missing-key", _show(expected[name]), ABSENT)
        return Mismatch(_pointer((*at, name)), "extra-key", ABSENT, _show(actual[name]))
    for name, value in expected.items():
        found = _walk(value, actual[name], ctx, (*at, name))
        if found is not None:
            return found
    return None


def _match_whole(
    ph: Placeholder, actual: JSON, ctx: MatchContext, at: tuple[str, ...]
) -> Mismatch | None:
    where = _pointer(at)
    if ph.is_host:
        if ctx.lenient_host:
            return (
                None
                if isinstance(actual, str)
                else Mismatch(where, "type", ph.text(), _show(actual))
            )
        if ph.name not in ctx.host:
            raise PlaceholderError(f"unknown runner-provided name {ph.text()}")
        value = ctx.host[ph.name]
        if kind(actual) != "string":
            return Mismatch(where, "type", f"{ph.text()}", _show(actual))
        return None if actual == value else Mismatch(where, "value", ph.text(), _show(actual))
    if ph.is_binding and ph.name in ctx.bindings:
        bound = ctx.bindings[ph.name]
        if strict_equal(bound, actual):
            return None
        return Mismatch(where, "binding-conflict", f"${{{ph.name}={dumps(bound)}}}", _show(actual))
    # [TX-PH-06] [TX-MATCH-01] wildcard or first occurrence: check the type, then bind
    if not type_matches(ph.type, actual):
        return Mismatch(where, "placeholder-type", ph.text(), _show(actual))
    if ph.is_binding:
        ctx.bindings[ph.name] = actual
        if ph.type:
            ctx.types.setdefault(ph.name, ph.type)
    return None


def _match_embedded(
    expected: str, actual: JSON, ctx: MatchContext, at: tuple[str, ...]
) -> Mismatch | None:
    """[TX-PH-07] anchored regex: literals escaped, bound names inlined, lazy groups."""
    where = _pointer(at)
    if not isinstance(actual, str):
        return Mismatch(where, "type", _show(expected), _show(actual))
    regex, groups = _embedded_regex(expected, ctx)
    m = regex.fullmatch(actual)
    if m is None:
        return Mismatch(where, "value", _show(expected), _show(actual))
    new: dict[str, JSON] = {}
    for group, ph in groups.items():
        value = embedded_value(ph.type, m.group(group))
        if value is None:
            return Mismatch(where, "placeholder-type", _show(expected), _show(actual))
        if ph.is_binding:
            new[ph.name] = value
    ctx.bindings.update(new)
    return None


def _embedded_regex(
    expected: str, ctx: MatchContext
) -> tuple[re.Pattern[str], dict[str, Placeholder]]:
    pieces: list[str] = []
    groups: dict[str, Placeholder] = {}
    first_group: dict[str, str] = {}
    previous_unbound = False
    for part in parse(expected).parts:
        if isinstance(part, str):
            pieces.append(re.escape(part))
            previous_unbound = False
            continue
        if part.is_host and not ctx.lenient_host:
            if part.name not in ctx.host:
                raise PlaceholderError(f"unknown runner-provided name {part.text()}")
            pieces.append(re.escape(ctx.host[part.name]))
            previous_unbound = False
            continue
        if part.is_binding and part.name in ctx.bindings:
            bound = ctx.bindings[part.name]
            if isinstance(bound, bool) or not isinstance(bound, str | int):
                raise PlaceholderError(f"{part.text()} is bound to a value that cannot be embedded")
            pieces.append(re.escape(str(bound)))
            previous_unbound = False
            continue
        if part.name in first_group:
            pieces.append(f"(?P={first_group[part.name]})")
            previous_unbound = False
            continue
        ptype = part.type or "string"
        if ptype not in EMBEDDED_TYPES and not part.is_host:
            raise PlaceholderError(f"{part.text()}: type {ptype} cannot be embedded")
        if previous_unbound:
            raise PlaceholderError(f"two unbound placeholders touch in {expected!r}")
        group = f"g{len(groups)}"
        pattern = EMBEDDED_PATTERNS.get(ptype, ".*?")
        pieces.append(f"(?P<{group}>{pattern})")
        if not part.is_host:
            groups[group] = part
        if part.is_binding:
            first_group[part.name] = group
        previous_unbound = True
    return re.compile("".join(pieces), re.DOTALL), groups


@dataclass(frozen=True, slots=True)
class UnorderedResult:
    """Outcome of ``expect_unordered``: the assignment (value index → message index)."""

    assignment: tuple[int, ...]
    complete: bool
    mismatch: Mismatch | None


def match_unordered(
    expected: Sequence[JSON], actual: Sequence[JSON], ctx: MatchContext
) -> UnorderedResult:
    """[TX-MATCH-09] values in file order against messages in arrival order, backtracking.

    On success ``ctx.bindings`` holds the bindings of the first complete assignment;
    on failure it is unchanged and the result carries the longest partial assignment.
    """
    best: list[tuple[tuple[int, ...], Mismatch | None]] = [((), None)]
    Found = tuple[dict[str, JSON], tuple[int, ...]]

    def search(i: int, used: tuple[int, ...], bindings: dict[str, JSON]) -> Found | None:
        if i == len(expected):
            return bindings, used
        first_miss: Mismatch | None = None
        for j in range(len(actual)):
            if j in used:
                continue
            trial = MatchContext(ctx.host, dict(bindings), ctx.ignore, ctx.lenient_host)
            miss = _walk(expected[i], actual[j], trial, ())
            if miss is not None:
                first_miss = first_miss or miss
                continue
            done = search(i + 1, (*used, j), trial.bindings)
            if done is not None:
                return done
        # remember the partial assignment that matched the most values
        if len(used) > len(best[0][0]) or best[0][1] is None:
            best[0] = (used, first_miss)
        return None

    found = search(0, (), dict(ctx.bindings))
    if found is not None:
        ctx.bindings.clear()
        ctx.bindings.update(found[0])
        return UnorderedResult(found[1], True, None)
    return UnorderedResult(best[0][0], False, best[0][1])
