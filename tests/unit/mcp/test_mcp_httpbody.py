"""Response sizes (`mcp/httpbody.py`, mcp.md §6.2): the limit counts raw body bytes, admits a
full 10 MiB blob, returns an SSE reply before its stream ends, and reads a diagnostic body only
up to 4096 bytes."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.helpers.fake_mcp_http import FakeMcpHttp
from tests.unit.mcp.conftest import Connect
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.mcp import McpOptions, McpSizeLimitError, format_result_for_model, httpbody
from zeroclaw_ref.mcp.lifecycle import State

HTTP_OPTS = McpOptions(init_timeout_s=5, list_timeout_s=5, default_tool_timeout_s=5)


def _text(result: object) -> str:
    assert isinstance(result, dict)
    return str(result["content"][0]["text"])


@pytest.fixture
def http_fake() -> Iterator[FakeMcpHttp]:
    server = FakeMcpHttp(more_tools=True)
    yield server
    server.close()


def _http(fake: FakeMcpHttp, **fields: object) -> McpServerConfig:
    return McpServerConfig(name="h", transport="http", url=fake.url, **fields)  # type: ignore[arg-type]


# --- response sizes ----------------------------------------------------------------------


@pytest.mark.req("MCP-SIZE-02")
def test_the_limit_counts_raw_body_bytes_not_decoded_text(
    connect: Connect, http_fake: FakeMcpHttp
) -> None:
    reg = connect(_http(http_fake, max_response_bytes=5000), options=HTTP_OPTS)
    # 1000 characters (2000 bytes as UTF-8) sent as \u00e9 escapes: about 6000 raw bytes
    with pytest.raises(McpSizeLimitError, match="exceeds the 5000-byte limit"):
        reg.call_tool("h__escaped", {"chars": 1000})
    with pytest.raises(McpSizeLimitError, match="SSE response body exceeds the 5000-byte"):
        reg.call_tool("h__escaped", {"chars": 1000, "sse": True})
    assert _text(reg.call_tool("h__escaped", {"chars": 500})) == "é" * 500  # about 3000 raw


@pytest.mark.req("MCP-SIZE-02", "MCP-SIZE-01")
def test_the_default_limit_admits_a_full_ten_mib_blob(
    connect: Connect, http_fake: FakeMcpHttp, tmp_path: Path
) -> None:
    reg = connect(_http(http_fake), options=HTTP_OPTS)
    result = reg.call_tool("h__blob", {"bytes": 10 * 1024 * 1024})  # 13.98 MB of base64
    text, _ = format_result_for_model(result, tmp_path)
    marker = json.loads(text)["content"][0]["resource"]["materialized"]
    assert marker.startswith("[Document: big.bin] ")
    assert Path(marker.split("] ", 1)[1]).stat().st_size == 10 * 1024 * 1024


@pytest.mark.req("MCP-SIZE-07")
def test_an_sse_reply_is_returned_before_the_stream_ends(
    connect: Connect, http_fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture
) -> None:
    reg = connect(_http(http_fake, max_response_bytes=5000), options=HTTP_OPTS)
    with caplog.at_level(logging.WARNING):
        result = reg.call_tool("h__sse_hold", {"flood": 20_000})
        assert _text(result) == "early"
        assert not http_fake.state.hold_finished.is_set()  # the server still holds the stream
        http_fake.state.hold_release.set()
        wait_for(http_fake.state.hold_finished.is_set, "stream end")
        assert _text(reg.call_tool("h__echo", {"message": "next"})) == "Echo: next"
    assert http_fake.state.hold_released_in_time
    assert reg.connection("h").state is State.READY
    assert "limit" not in caplog.text


class _Body(httpbody.Body):
    status, content_type, content_length = 400, "text/plain", None

    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts
        self.read = 0

    def chunks(self) -> Iterator[bytes]:
        for part in self.parts:
            self.read += 1
            yield part

    def header(self, name: str) -> str | None:
        return None

    def shutdown(self) -> None: ...

    def close(self) -> None: ...


@pytest.mark.req("MCP-SIZE-10", "MCP-HTTP-38")
def test_a_diagnostic_body_is_read_only_up_to_4096_bytes() -> None:
    words = b" session not found"
    assert httpbody.stale_400(_Body([b"Bad Request:" + words]))
    late = _Body([b"x" * 4096, words])
    assert not httpbody.stale_400(late) and late.read == 1  # the second chunk is never pulled
    assert not httpbody.stale_400(_Body([b"y" * 5000 + words]))  # beyond 4096 in one chunk
    assert httpbody.stale_400(_Body([b"z" * (4096 - len(words)) + words]))  # ends at exactly 4096
