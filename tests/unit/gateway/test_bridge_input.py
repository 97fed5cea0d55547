"""What the bridge does with a stdin line that cannot become a WebSocket text frame.

A text frame carries UTF-8 only (RFC 6455 §5.6), so a line that is not UTF-8 is answered by
the bridge itself, with exactly the parse error `acp` over stdio gives (ACP-TR-09, ACP-TR-12),
rather than forwarded as a repaired copy the server would act on.
"""

from __future__ import annotations

import json

import pytest

from zeroclaw_ref.gateway.bridge import _answer_locally
from zeroclaw_ref.wire.jsonrpc import Invalid, classify, error_line

LATIN1_LINE = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"name":"caf\xe9"}}'


@pytest.mark.req("ACP-TR-09", "ACP-TR-12", "ACP-BR-09")
def test_a_non_utf8_line_gets_the_stdio_servers_parse_error() -> None:
    written: list[bytes] = []
    _answer_locally(LATIN1_LINE, written.append)
    [line] = written
    answer = json.loads(line)
    assert answer["id"] is None and answer["error"]["code"] == -32700
    # Byte for byte what the stdio server sends for the same line.
    verdict = classify(LATIN1_LINE)
    assert isinstance(verdict, Invalid) and verdict.reply is not None
    assert line == error_line(verdict.id, verdict.reply).encode("utf-8")
    assert "invalid UTF-8 at byte offset" in answer["error"]["message"]
