"""The MCP client against the real npm servers (mcp.md §15.2, MCP-PEER-01..04).

Skipped (or failed with ZEROCLAW_REF_REQUIRE_PEERS=1) when node or the peers are missing.
server-everything's HTTP modes bind all interfaces, so each run gets a free port in `PORT` and
the client connects to 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_peer, wait_for
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.mcp import (
    McpError,
    McpOptions,
    McpOutcomeUnknownError,
    McpRegistry,
    McpToolError,
    format_result_for_model,
)
from zeroclaw_ref.mcp import sse as sse_module
from zeroclaw_ref.mcp.lifecycle import State

OPTS = McpOptions(init_timeout_s=20, list_timeout_s=20, default_tool_timeout_s=20)


def _entry(name: str) -> str:
    entry = require_peer(name)
    assert isinstance(entry, str)
    return entry


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def everything_http() -> Iterator[tuple[str, str]]:
    """server-everything in a network mode; yields (mode, base URL)."""
    entry = _entry("server-everything")
    procs: list[subprocess.Popen[bytes]] = []

    def start(mode: str) -> str:
        port = _free_port()
        env = {**os.environ, "PORT": str(port)}
        proc = subprocess.Popen(
            ["node", entry, mode], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        procs.append(proc)
        wait_for(lambda: _listening(port) or proc.poll() is not None, "server-everything port")
        return f"http://127.0.0.1:{port}"

    yield start  # type: ignore[misc]
    for proc in procs:
        proc.terminate()
        proc.wait(10)


def _text(result: object) -> str:
    assert isinstance(result, dict)
    return str(result["content"][0]["text"])


@pytest.mark.req("MCP-PEER-01")
def test_server_everything_over_stdio(tmp_path: Path) -> None:
    entry = _entry("server-everything")
    config = McpServerConfig(name="everything", command="node", args=(entry, "stdio"))
    with McpRegistry.connect_all([config], options=OPTS, workspace=tmp_path) as reg:
        conn = reg.connection("everything")
        assert conn.protocol_version == "2025-11-25"
        assert len(reg.tools()) == 13
        reg.refresh_if_stale()
        assert reg.refresh_if_stale() is False  # coalesced into at most one refresh
        assert _text(reg.call_tool("everything__echo", {"message": "hi"})) == "Echo: hi"
        assert "3" in _text(reg.call_tool("everything__get-sum", {"a": 1, "b": 2}))
        _, images = format_result_for_model(
            reg.call_tool("everything__get-tiny-image", {}), tmp_path
        )
        assert images and images[0]["mime_type"] == "image/png" and Path(images[0]["path"]).exists()
        blob = reg.call_tool(
            "everything__get-resource-reference", {"resourceType": "Blob", "resourceId": 2}
        )
        assert "[Document: 2]" in format_result_for_model(blob, tmp_path)[0]
        links = reg.call_tool("everything__get-resource-links", {})
        assert any(i.get("type") == "resource_link" for i in links["content"])  # type: ignore[union-attr]
        structured = reg.call_tool("everything__get-structured-content", {"location": "New York"})
        assert "structuredContent" in json.loads(format_result_for_model(structured, tmp_path)[0])
        listing = reg.list_resources("everything")
        assert isinstance(listing, dict)
        static = [r["uri"] for r in listing["resources"] if "static/document" in r["uri"]]  # type: ignore[index, union-attr]
        assert len(static) == 7
        for uri in static:
            read = reg.read_resource(f"everything__{uri}")
            assert isinstance(read, dict) and read["contents"]
        simple = reg.get_prompt("everything__simple-prompt")
        assert isinstance(simple, dict) and simple["messages"]
        args = reg.get_prompt("everything__args-prompt", {"city": "Paris"})
        assert "Paris" in json.dumps(args)
        pid = conn._transport.pid  # type: ignore[attr-defined]
    assert pid is not None and conn.state is State.CLOSED


@pytest.mark.req("MCP-PEER-02", "MCP-HTTP-38")
def test_server_everything_over_streamable_http(everything_http) -> None:  # type: ignore[no-untyped-def]
    import requests

    base = everything_http("streamableHttp")
    config = McpServerConfig(name="ev", transport="http", url=f"{base}/mcp")
    with McpRegistry.connect_all([config], options=OPTS) as reg:
        assert reg.servers() == ("ev",)
        transport = reg.connection("ev")._transport  # type: ignore[attr-defined]
        sid = transport.session_id
        assert sid and transport.version == "2025-11-25"
        assert _text(reg.call_tool("ev__echo", {"message": "h"})) == "Echo: h"
        # end the session behind the client's back: the server then answers 400
        requests.delete(f"{base}/mcp", headers={"Mcp-Session-Id": sid}, timeout=5)
        with pytest.raises(McpOutcomeUnknownError, match=r"session expired \(HTTP (400|404)\)"):
            reg.call_tool("ev__echo", {"message": "lost"})
        assert _text(reg.call_tool("ev__echo", {"message": "again"})) == "Echo: again"
        assert transport.session_id != sid


@pytest.mark.req("MCP-PEER-03", "MCP-SSE-11")
def test_server_everything_over_legacy_sse(
    everything_http,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    base = everything_http("sse")
    config = McpServerConfig(name="ev", transport="sse", url=f"{base}/sse")
    with McpRegistry.connect_all([config], options=OPTS) as reg:
        assert reg.servers() == ("ev",)
        assert _text(reg.call_tool("ev__echo", {"message": "s"})) == "Echo: s"
        transport = reg.connection("ev")._transport  # type: ignore[attr-defined]
        assert transport._endpoint.startswith(f"{base}/message?sessionId=")
        monkeypatch.setattr(sse_module, "POST_ACK_S", 1.0)
        transport._endpoint = f"{base}/message?sessionId=unknown"
        with pytest.raises(
            McpError, match="did not acknowledge the POST to its SSE message endpoint within 1s"
        ):
            reg.call_tool("ev__echo", {"message": "lost"})


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0\0"))
        + chunk(b"IEND", b"")
    )


@pytest.mark.req("MCP-PEER-04")
def test_server_filesystem_over_stdio(tmp_path: Path) -> None:
    entry = _entry("server-filesystem")
    root = (tmp_path / "allowed").resolve()
    root.mkdir()
    (root / "pic.png").write_bytes(_png())
    (root / "sound.wav").write_bytes(b"RIFF\x24\0\0\0WAVEfmt " + b"\0" * 28)
    (root / "a.txt").write_text("hello")
    config = McpServerConfig(name="fs", command="node", args=(entry, str(root)))
    ws = tmp_path / "ws"
    ws.mkdir()
    with McpRegistry.connect_all([config], options=OPTS, workspace=ws) as reg:
        assert len(reg.tools()) == 14
        for call in (lambda: reg.list_resources("fs"), lambda: reg.list_prompts("fs")):
            with pytest.raises(
                McpError, match=r"^MCP server `fs` does not support (resources|prompts)$"
            ):
                call()
        image = reg.call_tool("fs__read_media_file", {"path": str(root / "pic.png")})
        _, attachments = format_result_for_model(image, ws)
        assert attachments and attachments[0]["mime_type"] == "image/png"
        audio = reg.call_tool("fs__read_media_file", {"path": str(root / "sound.wav")})
        assert "[audio attachment: audio/wav]" in format_result_for_model(audio, ws)[0]
        text = reg.call_tool("fs__read_text_file", {"path": str(root / "a.txt")})
        assert "structuredContent" in text
        with pytest.raises(
            McpToolError, match=r"^MCP `read_text_file` \(server `fs`\) returned isError: "
        ):
            reg.call_tool("fs__read_text_file", {"path": "/etc/hostname"})
