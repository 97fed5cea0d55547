"""Inbound classification, acp.md §1.3, as one table fed whole."""

from __future__ import annotations

import pytest

from zeroclaw_ref.wire.errors import ErrorCode
from zeroclaw_ref.wire.jsonrpc import Invalid, Notification, Request, Response, classify

CASES = [
    # (line, expected class, id, error code or None)
    (b'{"jsonrpc":"2.0","id":1,"method":"initialize"}', Request, 1, None),
    (b'{"jsonrpc":"2.0","method":"session/cancel","params":{}}', Notification, None, None),
    (b'{"jsonrpc":"2.0","id":null,"method":"x"}', Notification, None, None),
    (b'{"jsonrpc":"2.0","id":"zc-out-0","result":{}}', Response, "zc-out-0", None),
    (b'{"id":3,"error":{"code":1,"message":"m"},"method":"x"}', Response, 3, None),
    (b'{"jsonrpc":"2.0","id":7,"method":', Invalid, None, ErrorCode.PARSE_ERROR),
    (b"[1,2]", Invalid, None, ErrorCode.PARSE_ERROR),
    (b"42", Invalid, None, ErrorCode.PARSE_ERROR),
    (b'{"id":1,"method":"x"}', Invalid, None, ErrorCode.PARSE_ERROR),
    (b'{"jsonrpc":2,"id":1,"method":"x"}', Invalid, None, ErrorCode.PARSE_ERROR),
    (b'{"jsonrpc":"2.0","id":1}', Invalid, None, ErrorCode.PARSE_ERROR),
    (b'{"jsonrpc":"2.0","id":1,"method":5}', Invalid, None, ErrorCode.PARSE_ERROR),
    (b'{"jsonrpc":"1.0","id":9,"method":"x"}', Invalid, 9, ErrorCode.INVALID_REQUEST),
    (b'{"jsonrpc":"1.0","method":"x"}', Invalid, None, None),
    (b"\xff\xfe", Invalid, None, ErrorCode.PARSE_ERROR),
    (b'{"jsonrpc":"2.0","id":1,"method":"x","p":NaN}', Invalid, None, ErrorCode.PARSE_ERROR),
    # a number no float can hold (Python would read an infinity no reply can carry)
    (b'{"jsonrpc":"2.0","id":1e400,"method":"initialize"}', Invalid, None, ErrorCode.PARSE_ERROR),
    (b'{"jsonrpc":"2.0","id":-1e400,"method":"x"}', Invalid, None, ErrorCode.PARSE_ERROR),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":[1e999]}}',
        Invalid,
        None,
        ErrorCode.PARSE_ERROR,
    ),
    (b'{"jsonrpc":"1.0","id":1e999,"method":"x"}', Invalid, None, ErrorCode.PARSE_ERROR),
]


@pytest.mark.req("ACP-TR-11", "ACP-TR-12", "ACP-TR-13", "ACP-TR-14", "ACP-TR-09")
@pytest.mark.parametrize(("line", "kind", "msg_id", "code"), CASES)
def test_each_line_is_classified_by_the_first_matching_rule(
    line: bytes, kind: type, msg_id: object, code: ErrorCode | None
) -> None:
    result = classify(line)
    assert isinstance(result, kind)
    if isinstance(result, Invalid):
        assert result.id == msg_id
        assert (result.reply.code if result.reply else None) == code
        if code is ErrorCode.PARSE_ERROR:
            assert result.reply is not None and result.reply.message.startswith("Parse error: ")
    elif isinstance(result, Request | Response):
        assert result.id == msg_id


@pytest.mark.req("ACP-TR-16")
@pytest.mark.parametrize("params", ["", ',"params":null', ',"params":[1]', ',"params":"x"'])
def test_absent_null_or_non_object_params_become_an_empty_object(params: str) -> None:
    result = classify(f'{{"jsonrpc":"2.0","id":1,"method":"m"{params}}}'.encode())
    assert isinstance(result, Request) and result.params == {}


@pytest.mark.req("ACP-TR-15")
@pytest.mark.parametrize("raw", ['"a"', "0", "1.5", "true", "[1]", '{"k":1}', "-7"])
def test_any_non_null_id_is_kept_unchanged(raw: str) -> None:
    result = classify(f'{{"jsonrpc":"2.0","id":{raw},"method":"m"}}'.encode())
    assert isinstance(result, Request)
    import json

    assert result.id == json.loads(raw)


@pytest.mark.req("ACP-TR-25")
@pytest.mark.parametrize(
    "error",
    ['"oops"', '{"code":"1","message":"m"}', '{"code":1}', '{"code":true,"message":"m"}'],
)
def test_a_malformed_error_member_makes_the_response_a_success(error: str) -> None:
    result = classify(f'{{"id":"zc-out-1","error":{error},"result":{{"a":1}}}}'.encode())
    assert isinstance(result, Response) and result.error is None and result.result == {"a": 1}


def test_a_well_formed_error_reply_keeps_code_and_message() -> None:
    result = classify(b'{"id":"zc-out-1","error":{"code":-32000,"message":"no"}}')
    assert isinstance(result, Response) and result.error is not None
    assert (result.error.code, result.error.message) == (-32000, "no")


@pytest.mark.req("ACP-TR-12", "ACP-ERR-01")
@pytest.mark.parametrize(
    "literal",
    ["1e400", "-1e400", "1e999", "1" + "0" * 400 + ".5e100"],
    ids=["1e400", "-1e400", "1e999", "long-mantissa"],
)
def test_a_number_that_overflows_a_float_is_a_parse_error_with_a_null_id(literal: str) -> None:
    """ACP-TR-12 / ACP-ERR-01: an id that cannot be represented leaves no id to echo: the
    −32700 row of Table 14-1, `id` null, and a bounded description of the literal."""
    result = classify(f'{{"jsonrpc":"2.0","id":{literal},"method":"initialize"}}'.encode())
    assert isinstance(result, Invalid) and result.id is None and result.reply is not None
    assert result.reply.code is ErrorCode.PARSE_ERROR
    assert result.reply.message.startswith("Parse error: number out of range: ")
    assert len(result.reply.message) < 80


@pytest.mark.req("ACP-TR-15")
@pytest.mark.parametrize("raw", ['"\\udfff"', '"\\ud800x"', '"a\\u0000b"', "1e308", "1e-400"])
def test_ids_that_python_can_hold_are_kept(raw: str) -> None:
    """ACP-TR-15: a lone surrogate, a NUL, a large finite float and one that underflows to 0
    are ids like any other."""
    import json

    result = classify(f'{{"jsonrpc":"2.0","id":{raw},"method":"m"}}'.encode())
    assert isinstance(result, Request) and result.id == json.loads(raw)
