"""The oracle's JSON layer keeps number kinds and refuses what JSON forbids."""

from __future__ import annotations

import pytest

from zeroclaw_ref.conformance.core.jsonlex import (
    JObject,
    JsonError,
    Real,
    dumps,
    kind,
    loads,
    strict_equal,
)


@pytest.mark.req("TX-FORMAT-07")
@pytest.mark.parametrize(
    ("text", "expected_kind"),
    [
        ("1", "integer"),
        ("-0", "integer"),
        ("1.0", "real"),
        ("1e3", "real"),
        ("1E-2", "real"),
        ("123456789012345678901234567890", "integer"),
        ("true", "boolean"),
        ("null", "null"),
        ('"1"', "string"),
        ("[]", "array"),
        ("{}", "object"),
    ],
)
def test_numbers_are_classified_by_lexical_form(text: str, expected_kind: str) -> None:
    assert kind(loads(text)) == expected_kind


@pytest.mark.req("TX-FORMAT-03")
@pytest.mark.parametrize(
    "text", ["NaN", "Infinity", "-Infinity", "[1, NaN]", '{"a":1,"a":2}', "{} {}", "", "'a'"]
)
def test_strict_reading_rejects_non_json(text: str) -> None:
    with pytest.raises(JsonError):
        loads(text)


@pytest.mark.req("TX-MATCH-08")
def test_tolerant_reading_marks_duplicate_members() -> None:
    value = loads('{"a":1,"b":{"c":1,"c":2}}', allow_duplicates=True)
    assert isinstance(value, dict)
    inner = value["b"]
    assert isinstance(inner, JObject) and inner.duplicates == ("c",)
    assert not isinstance(value, JObject)


@pytest.mark.req("TX-MATCH-04")
@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        ("1", "1", True),
        ("1", "1.0", False),
        ("1.5", "1.50", True),
        ("1e2", "100.0", True),
        ("true", "1", False),
        ("null", "0", False),
        ("null", '""', False),
        ('"\u00e9"', '"e\u0301"', False),
        ('"A"', '"a"', False),
        ('{"a":[1,2]}', '{"a":[1,2]}', True),
        ('{"a":1}', '{"a":1,"b":2}', False),
    ],
)
def test_strict_equality_never_mixes_kinds(left: str, right: str, equal: bool) -> None:
    assert strict_equal(loads(left), loads(right)) is equal


@pytest.mark.req("TX-FRAME-02")
@pytest.mark.parametrize(
    "text",
    [
        '{"a":1.0,"b":[1e5,-0.50],"c":"h\u00e9"}',
        '["\\n\\"",null,true,false]',
        "12345678901234567890",
    ],
)
def test_dumps_is_compact_and_keeps_number_text(text: str) -> None:
    assert dumps(loads(text)) == text


def test_real_keeps_its_text_and_compares_exactly() -> None:
    assert Real("0.10") == Real("0.1")
    assert Real("0.10").text == "0.10"
    assert Real("1") != 1
