"""Line framing fed whole, byte by byte and with trailing data (ACP-TR-06..08)."""

from __future__ import annotations

import json

import pytest

from zeroclaw_ref.core.jsontypes import dumps, loads
from zeroclaw_ref.wire.errors import RpcError
from zeroclaw_ref.wire.framing import LineDecoder, Oversized, encode_line
from zeroclaw_ref.wire.jsonrpc import error_line, response_line

STREAM = b'{"a":1}\n\n{"b":"\xc3\xa9"}\r\n{"c":3}'
LINES = [b'{"a":1}', b"", b'{"b":"\xc3\xa9"}\r']


def _feed_in(chunks: list[bytes]) -> list[bytes | Oversized]:
    decoder = LineDecoder(1024)
    out: list[bytes | Oversized] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    return out + decoder.finish()


@pytest.mark.req("ACP-TR-07")
def test_whole_and_byte_by_byte_feeds_give_the_same_lines() -> None:
    whole = _feed_in([STREAM])
    byte_wise = _feed_in([STREAM[i : i + 1] for i in range(len(STREAM))])
    assert whole == byte_wise == [*LINES, b'{"c":3}']


@pytest.mark.req("ACP-TR-08")
def test_an_oversized_line_is_dropped_and_reported_without_being_kept() -> None:
    decoder = LineDecoder(8)
    out = decoder.feed(b"0123456789abc\nok\n")
    assert isinstance(out[0], Oversized) and out[0].size >= 13
    assert out[1] == b"ok"
    assert decoder.feed(b"x" * 5 + b"y" * 5) == []  # over the limit mid-chunk
    assert decoder.feed(b"\n") == [Oversized(10)]


def test_the_limit_itself_is_accepted() -> None:
    assert LineDecoder(4).feed(b"abcd\n") == [b"abcd"]


@pytest.mark.req("ACP-TR-06")
def test_encoded_lines_end_with_one_newline_and_refuse_raw_line_feeds() -> None:
    assert encode_line('{"t":"é"}') == '{"t":"é"}\n'.encode()
    with pytest.raises(ValueError):
        encode_line('{"a":\n1}')


# Strings a client can make the server echo: `"\\udfff"` decodes to a lone surrogate, which
# has no UTF-8 form.
SURROGATES = ["\udfff", "\ud800x", "a\udc80\\\udfffé", "\ud83d", "\ude00\ud83d"]


@pytest.mark.req("ACP-TR-06", "ACP-TR-15")
@pytest.mark.parametrize("value", SURROGATES)
def test_any_python_str_is_encoded_as_utf8_with_lone_surrogates_escaped(value: str) -> None:
    """ACP-TR-06: every outbound line is UTF-8 (a raw surrogate used to raise in the writer);
    ACP-TR-15: the escape decodes to the very string that came in."""
    for text in (dumps({"id": value}), json.dumps({"id": value}, ensure_ascii=False)):
        line = encode_line(text)
        decoded = line.decode("utf-8")  # strict: valid UTF-8
        assert decoded.endswith("\n") and decoded.count("\n") == 1
        assert json.loads(decoded) == {"id": value}
        assert loads(line[:-1]) == {"id": value}


@pytest.mark.req("ACP-TR-06", "ACP-TR-10", "ACP-TR-15", "ACP-TR-18")
def test_replies_echoing_a_surrogate_are_encodable_and_other_text_stays_unescaped() -> None:
    """ACP-TR-10: non-ASCII text stays raw; only the surrogate is escaped."""
    reply = error_line("\udfff", RpcError.method_not_found("é\ud800"))
    assert reply == (
        '{"jsonrpc":"2.0","id":"\\udfff","error":'
        '{"code":-32601,"message":"Method not found: é\\ud800"}}'
    )
    reply.encode("utf-8")
    plain = response_line(1, {"text": "\u00e9\u4e2d"})
    assert plain == '{"jsonrpc":"2.0","id":1,"result":{"text":"é中"}}'
