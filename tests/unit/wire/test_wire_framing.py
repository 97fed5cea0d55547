"""Line framing fed whole, byte by byte and with trailing data (ACP-TR-06..08)."""

from __future__ import annotations

import pytest

from zeroclaw_ref.wire.framing import LineDecoder, Oversized, encode_line

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
