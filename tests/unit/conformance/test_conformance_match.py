"""The oracle's matcher: strictness, placeholders, ignore rules and unordered frames."""

from __future__ import annotations

import pytest

from zeroclaw_ref.conformance.core.jsonlex import JSON, loads
from zeroclaw_ref.conformance.core.match import MatchContext, match, match_unordered, split_pointer
from zeroclaw_ref.conformance.core.placeholders import PlaceholderError

HOST = {"WORKSPACE": "/ws", "CONFIG_DIR": "/cfg"}


def ctx(bindings: dict[str, JSON] | None = None, ignore: tuple[str, ...] = ()) -> MatchContext:
    return MatchContext(HOST, dict(bindings or {}), [split_pointer(p) for p in ignore])


def run(expected: str, actual: str, **kw: object) -> tuple[str | None, str | None]:
    c = ctx(**kw)  # type: ignore[arg-type]
    miss = match(loads(expected), loads(actual, allow_duplicates=True), c)
    return (miss.reason, miss.pointer) if miss else (None, None)


@pytest.mark.req("TX-MATCH-02", "TX-MATCH-03", "TX-MATCH-04", "TX-MATCH-05", "TX-MATCH-10")
@pytest.mark.parametrize(
    ("expected", "actual", "reason", "pointer"),
    [
        ('{"a":1}', '{"a":1}', None, None),
        ('{"a":1}', '{"a":1.0}', "type", "/a"),
        ('{"a":1.5}', '{"a":1.50}', None, None),
        ('{"a":true}', '{"a":1}', "type", "/a"),
        ('{"a":null}', '{"a":0}', "type", "/a"),
        ('{"a":null}', "{}", "missing-key", "/a"),
        ("{}", '{"data":null}', "extra-key", "/data"),
        ('{"b":1,"a":2}', '{"c":1,"d":2}', "missing-key", "/a"),
        ('{"a":[1,2]}', '{"a":[1]}', "length", "/a"),
        ('{"a":[1,2]}', '{"a":[1,3]}', "value", "/a/1"),
        ('{"a":"x"}', '{"a":"X"}', "value", "/a"),
        ('{"a":{"b/c":1}}', '{"a":{"b/c":2}}', "value", "/a/b~1c"),
        ('{"a":1}', '{"a":1,"a":1}', "duplicate-key", "/a"),
        ("[1]", '{"a":1}', "type", ""),
    ],
)
def test_structural_matching_is_strict(
    expected: str, actual: str, reason: str | None, pointer: str | None
) -> None:
    assert run(expected, actual) == (reason, pointer)


@pytest.mark.req("TX-MATCH-06")
@pytest.mark.parametrize(
    ("expected", "actual", "reason"),
    [
        ('{"r":{"x":1}}', '{"r":{"x":1,"_meta":{"k":2}}}', None),
        ('{"r":{"x":1,"_meta":{"k":2}}}', '{"r":{"x":1,"_meta":{"k":3}}}', "value"),
        ('{"r":{"x":1,"_meta":{}}}', '{"r":{"x":1}}', "missing-key"),
    ],
)
def test_meta_is_ignored_unless_pinned(expected: str, actual: str, reason: str | None) -> None:
    assert run(expected, actual)[0] == reason


@pytest.mark.req("TX-MATCH-07")
def test_ignore_patterns_drop_actual_members() -> None:
    expected = '{"result":{"items":[{"a":1},{"a":2}]}}'
    actual = '{"result":{"items":[{"a":1,"t":5},{"a":2,"t":6}]}}'
    assert run(expected, actual, ignore=("/result/items/*/t",)) == (None, None)
    assert run(expected, actual)[0] == "extra-key"


@pytest.mark.req("TX-PH-03", "TX-PH-06", "TX-MATCH-01")
@pytest.mark.parametrize(
    ("expected", "actual", "bindings", "reason", "bound"),
    [
        ('{"s":"${sid:uuid}"}', '{"s":"00000000-0000-4000-8000-000000000001"}', {}, None, True),
        ('{"s":"${sid:uuid}"}', '{"s":"nope"}', {}, "placeholder-type", False),
        ('{"s":"${sid}"}', '{"s":"b"}', {"sid": "a"}, "binding-conflict", False),
        ('{"s":"${sid}"}', '{"s":"a"}', {"sid": "a"}, None, False),
        ('{"n":"${n}"}', '{"n":1.0}', {"n": 1}, "binding-conflict", False),
        ('{"n":"${_:int}"}', '{"n":"5"}', {}, "placeholder-type", False),
        ('{"n":"${_}"}', '{"n":null}', {}, None, False),
        ('{"c":"${WORKSPACE}"}', '{"c":"/ws"}', {}, None, False),
        ('{"c":"${WORKSPACE}"}', '{"c":"/other"}', {}, "value", False),
    ],
)
def test_whole_value_placeholders_check_type_and_bind(
    expected: str, actual: str, bindings: dict[str, JSON], reason: str | None, bound: bool
) -> None:
    c = ctx(bindings)
    miss = match(loads(expected), loads(actual), c)
    assert (miss.reason if miss else None) == reason
    assert ("sid" in c.bindings and not bindings) is bound


@pytest.mark.req("TX-PH-07")
@pytest.mark.parametrize(
    ("expected", "actual", "bindings", "reason", "new"),
    [
        ('"approval-${_:uuid}"', '"approval-00000000-0000-4000-8000-000000000001"', {}, None, {}),
        ('"approval-${_:uuid}"', '"approval-xyz"', {}, "value", {}),
        ('"turn-cancelled-${sid}"', '"turn-cancelled-abc"', {"sid": "abc"}, None, {}),
        ('"turn-cancelled-${sid}"', '"turn-cancelled-abd"', {"sid": "abc"}, "value", {}),
        ('"zc-out-${n:int}"', '"zc-out-12"', {}, None, {"n": 12}),
        ('"${WORKSPACE}/${f}"', '"/ws/a/b.txt"', {}, None, {"f": "a/b.txt"}),
        ('"${a}-${a}"', '"x-x"', {}, None, {"a": "x"}),
        ('"${a}-${a}"', '"x-y"', {}, "value", {}),
        ('"${a}-${b}"', '"x-y-z"', {}, None, {"a": "x", "b": "y-z"}),
        ('"at ${t:rfc3339}"', '"at 2026-02-30T00:00:00Z"', {}, "placeholder-type", {}),
        ('"n${x}"', "5", {}, "type", {}),
    ],
)
def test_embedded_placeholders_match_by_anchored_regex(
    expected: str, actual: str, bindings: dict[str, JSON], reason: str | None, new: dict[str, JSON]
) -> None:
    c = ctx(bindings)
    miss = match(loads(expected), loads(actual), c)
    assert (miss.reason if miss else None) == reason
    assert {k: v for k, v in c.bindings.items() if k not in bindings} == new


@pytest.mark.req("TX-PH-07")
@pytest.mark.parametrize(
    ("expected", "bindings"),
    [('"${a}${b}"', {}), ('"x-${o}"', {"o": [1]}), ('"x-${v:bool}"', {})],
)
def test_unusable_embedded_placeholders_are_transcript_errors(
    expected: str, bindings: dict[str, JSON]
) -> None:
    with pytest.raises(PlaceholderError):
        match(loads(expected), "x-y", ctx(bindings))


@pytest.mark.req("TX-MATCH-09", "TX-FRAME-05")
def test_unordered_backtracks_and_undoes_failed_bindings() -> None:
    expected = loads('[{"k":"${x}","v":1},{"k":"a","v":"${y}"}]')
    assert isinstance(expected, list)
    actual = [loads('{"k":"a","v":2}'), loads('{"k":"b","v":1}')]
    c = ctx()
    result = match_unordered(expected, actual, c)
    assert result.complete and result.assignment == (1, 0)
    assert c.bindings == {"x": "b", "y": 2}


@pytest.mark.req("TX-MATCH-09")
def test_unordered_failure_reports_the_longest_partial_assignment() -> None:
    expected = loads('[{"a":1},{"a":2},{"a":3}]')
    assert isinstance(expected, list)
    actual = [loads('{"a":2}'), loads('{"a":1}'), loads('{"a":4}')]
    c = ctx({"keep": 1})
    result = match_unordered(expected, actual, c)
    assert not result.complete
    assert result.assignment == (1, 0)
    assert result.mismatch is not None and result.mismatch.reason == "value"
    assert c.bindings == {"keep": 1}


def test_first_complete_assignment_in_file_order_wins() -> None:
    expected = loads('["${p}","${q}"]')
    assert isinstance(expected, list)
    c = ctx()
    result = match_unordered(expected, ["one", "two"], c)
    assert result.assignment == (0, 1) and c.bindings == {"p": "one", "q": "two"}
