"""Placeholder grammar, types and substitution of the oracle (transcripts.md §5)."""

from __future__ import annotations

import pytest

from zeroclaw_ref.conformance.core.jsonlex import JSON, Real, loads
from zeroclaw_ref.conformance.core.placeholders import (
    Placeholder,
    PlaceholderError,
    parse,
    substitute,
    substitute_host_text,
    toml_escape,
    type_matches,
)


@pytest.mark.req("TX-PH-01", "TX-PH-02")
@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("plain", ("plain",)),
        ("${sid}", (Placeholder("sid", None),)),
        ("${sid:uuid}", (Placeholder("sid", "uuid"),)),
        ("${_}", (Placeholder("_", None),)),
        ("${WORKSPACE}/a", (Placeholder("WORKSPACE", None), "/a")),
        ("approval-${_:uuid}", ("approval-", Placeholder("_", "uuid"))),
        ("$${literal}", ("${literal}",)),
        ("cost $5", ("cost $5",)),
        ("", ("",)),
    ],
)
def test_strings_split_into_literals_and_placeholders(
    text: str, parts: tuple[str | Placeholder, ...]
) -> None:
    assert parse(text).parts == parts


@pytest.mark.req("TX-PH-01")
@pytest.mark.parametrize("text", ["${}", "${Sid}", "${sid:nope}", "${sid", "${a-b}", "${9x}"])
def test_malformed_placeholders_are_errors(text: str) -> None:
    with pytest.raises(PlaceholderError):
        parse(text)


@pytest.mark.req("TX-PH-09")
@pytest.mark.parametrize(
    ("ptype", "value", "ok"),
    [
        ("any", None, True),
        ("string", "", True),
        ("string", 1, False),
        ("nonempty", "", False),
        ("nonempty", "x", True),
        ("int", 5, True),
        ("int", "5", False),
        ("int", Real("5.0"), False),
        ("int", True, False),
        ("number", Real("5.5"), True),
        ("number", 5, True),
        ("number", False, False),
        ("bool", False, True),
        ("bool", 0, False),
        ("id", "abc", True),
        ("id", 3, True),
        ("id", None, False),
        ("id", Real("1.0"), False),
        ("id", True, False),
        ("uuid", "00000000-0000-4000-8000-000000000001", True),
        ("uuid", "00000000-0000-4000-8000-00000000000A", False),
        ("rfc3339", "2026-01-01T00:00:00Z", True),
        ("rfc3339", "2026-01-01T00:00:00.5+05:30", True),
        ("rfc3339", "2026-02-30T00:00:00Z", False),
        ("rfc3339", "2026-01-01t00:00:00z", False),
        ("sha256", "a" * 64, True),
        ("sha256", "A" * 64, False),
        ("path", "/tmp/x", True),
        ("path", "tmp/x", False),
        ("path", "/a\x00b", False),
        ("base64", "", True),
        ("base64", "aGk=", True),
        ("base64", "aGl=", False),
        ("base64", "aGk", False),
    ],
)
def test_types_check_kind_then_form(ptype: str, value: JSON, ok: bool) -> None:
    assert type_matches(ptype, value) is ok


HOST = {"WORKSPACE": "/w", "PYTHON": "/usr/bin/python3"}


@pytest.mark.req("TX-PH-05")
@pytest.mark.parametrize(
    ("template", "bindings", "sent"),
    [
        ('{"id":"${rid}"}', {"rid": 0}, '{"id":0}'),
        ('{"id":"${rid}"}', {"rid": "x"}, '{"id":"x"}'),
        ('{"t":"n-${n}"}', {"n": 7}, '{"t":"n-7"}'),
        ('{"cwd":"${WORKSPACE}/sub"}', {}, '{"cwd":"/w/sub"}'),
        ('{"v":"${v}"}', {"v": {"a": [Real("1.0")]}}, '{"v":{"a":[1.0]}}'),
        ('{"lit":"$${x}"}', {}, '{"lit":"${x}"}'),
    ],
)
def test_send_substitution_keeps_types(template: str, bindings: dict[str, JSON], sent: str) -> None:
    from zeroclaw_ref.conformance.core.jsonlex import dumps

    assert dumps(substitute(loads(template), HOST, bindings)) == sent


@pytest.mark.req("TX-PH-05", "TX-PH-06")
@pytest.mark.parametrize(
    ("template", "bindings"),
    [
        ('"${_}"', {}),
        ('"${unbound}"', {}),
        ('"x-${obj}"', {"obj": {"a": 1}}),
        ('"x-${b}"', {"b": True}),
        ('"${NOPE}"', {}),
    ],
)
def test_send_substitution_refuses_unusable_names(template: str, bindings: dict[str, JSON]) -> None:
    with pytest.raises(PlaceholderError):
        substitute(loads(template), HOST, bindings)


@pytest.mark.req("TX-HEADER-07")
def test_setup_text_gets_toml_escaped_host_values() -> None:
    host = {"WORKSPACE": 'C:\\odd "dir"'}
    text = substitute_host_text('root = "${WORKSPACE}"', host, escape=True)
    assert text == 'root = "C:\\\\odd \\"dir\\""'
    assert toml_escape("a\nb") == "a\\u000Ab"
    with pytest.raises(PlaceholderError):
        substitute_host_text("x = '${sid}'", host)
