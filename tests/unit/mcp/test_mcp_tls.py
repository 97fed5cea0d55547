"""Custom CA trust for HTTP servers (mcp.md §6.1), against a loopback HTTPS fake server whose
certificate is issued by a private CA generated here with `cryptography`."""

from __future__ import annotations

import logging
import os
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.fake_mcp_http import FakeMcpHttp, https_fake
from tests.helpers.mcp_calls import text_of
from tests.helpers.pki import make_pki
from tests.unit.mcp.conftest import Connect
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.mcp import McpConnectError, McpOptions
from zeroclaw_ref.mcp.tls import read_ca_pem

OPTS = McpOptions(init_timeout_s=5, list_timeout_s=5, default_tool_timeout_s=5)


@pytest.fixture
def https(tmp_path: Path) -> Iterator[tuple[FakeMcpHttp, Path]]:
    ca, cert, key = make_pki(tmp_path)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server = FakeMcpHttp(tls=ctx)
    yield server, ca
    server.close()


@pytest.mark.req("MCP-TLS-01", "MCP-TLS-08", "MCP-TLS-09", "MCP-TLS-10")
def test_a_private_ca_is_added_to_the_default_trust(
    connect: Connect, https: tuple[FakeMcpHttp, Path]
) -> None:
    server, ca = https
    config = McpServerConfig(name="t", transport="http", url=server.url, tls_ca_cert_path=str(ca))
    reg = connect(config, options=OPTS)
    result = reg.call_tool("t__echo", {"message": "secure"})
    assert result["content"] == [{"type": "text", "text": "Echo: secure"}]


@pytest.mark.req("MCP-TLS-14", "MCP-TLS-15")
def test_without_the_ca_the_handshake_fails_and_is_not_retried(
    connect: Connect, https: tuple[FakeMcpHttp, Path], caplog: pytest.LogCaptureFixture
) -> None:
    server, _ = https
    with caplog.at_level(logging.WARNING):
        reg = connect(McpServerConfig(name="t", transport="http", url=server.url), options=OPTS)
    assert reg.servers() == ()
    assert "Failed to connect to MCP server `t`: connection error: SSLError" in caplog.text
    assert not server.seen()


@pytest.mark.req("MCP-TLS-11", "MCP-ERR-43")
def test_a_plaintext_url_with_a_ca_is_refused(
    connect: Connect, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ca, _, _ = make_pki(tmp_path)
    config = McpServerConfig(
        name="t", transport="http", url="http://127.0.0.1:9/mcp", tls_ca_cert_path=str(ca)
    )
    with caplog.at_level(logging.WARNING):
        connect(config, options=OPTS)
    assert (
        "tls_ca_cert_path requires an HTTPS configured remote URL; refusing plaintext transport"
        in caplog.text
    )


@pytest.mark.req(
    "MCP-TLS-03", "MCP-TLS-04", "MCP-TLS-05", "MCP-TLS-06", "MCP-TLS-07", "MCP-ERR-37",
    "MCP-ERR-38", "MCP-ERR-39", "MCP-ERR-40", "MCP-ERR-41", "MCP-ERR-42",
)  # fmt: skip
def test_ca_file_checks(tmp_path: Path) -> None:
    def fails(path: str) -> str:
        with pytest.raises(McpConnectError) as err:
            read_ca_pem("s", path)
        return str(err.value)

    assert (
        fails("rel/ca.pem") == "MCP server `s` TLS CA certificate path must be absolute: rel/ca.pem"
    )
    missing = str(tmp_path / "missing.pem")
    assert fails(missing).startswith(
        f"MCP server `s` could not open TLS CA certificate file {missing}: "
    )
    assert fails(str(tmp_path)) == (
        f"MCP server `s` TLS CA certificate path {tmp_path} must name a regular file"
    )
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert fails(str(fifo)).endswith("must name a regular file")
    big = tmp_path / "big.pem"
    big.write_bytes(b"x" * 1_048_577)
    assert fails(str(big)) == (
        f"MCP server `s` TLS CA certificate file {big} exceeds the 1048576-byte limit"
    )
    empty = tmp_path / "empty.pem"
    empty.write_text("")
    assert fails(str(empty)) == (
        f"MCP server `s` TLS CA certificate file {empty} contained no certificates"
    )
    bad = tmp_path / "bad.pem"
    bad.write_text("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
    assert fails(str(bad)).startswith(f"MCP server `s` invalid PEM CA certificate in {bad}: ")
    ca, _, _ = make_pki(tmp_path)
    assert "BEGIN CERTIFICATE" in read_ca_pem("s", str(ca))


@pytest.mark.req("MCP-TLS-12", "MCP-TLS-13", "MCP-ERR-44", "MCP-ERR-45")
def test_redirects_are_checked_and_bounded(
    connect: Connect, https: tuple[FakeMcpHttp, Path], caplog: pytest.LogCaptureFixture
) -> None:
    server, ca = https
    plain = FakeMcpHttp()
    try:
        server.state.redirect_to = plain.url
        config = McpServerConfig(
            name="t", transport="http", url=f"{server.base}/redir", tls_ca_cert_path=str(ca)
        )
        with caplog.at_level(logging.WARNING):
            assert connect(config, options=OPTS).servers() == ()
        assert (
            "Failed to connect to MCP server `t`: tls_ca_cert_path forbids redirecting to plaintext"
            in caplog.text
        )
        assert not plain.seen()  # not one byte reached the plaintext target
        caplog.clear()
        looping = McpServerConfig(name="u", transport="http", url=f"{plain.base}/redir")
        with caplog.at_level(logging.WARNING):
            assert connect(looping, options=OPTS).servers() == ()
        assert "Failed to connect to MCP server `u`: too many redirects" in caplog.text
        # the first request (the era probe, whose connect failure ends the connect) and ten
        # redirects
        assert len(plain.seen("POST")) == 11
    finally:
        plain.close()


BUNDLE = "[mcp_bundles.b]\nservers = []\n"


# --- §6.1 the CA file is read per connection ---------------------------------------------


@pytest.mark.req("MCP-TLS-02")
def test_the_ca_file_is_read_when_a_connection_is_set_up(
    connect: Connect, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server, ca = https_fake(tmp_path / "pki")
    try:
        missing = tmp_path / "later" / "ca.pem"
        cfg = tmp_path / "cfg"
        cfg.mkdir()
        (cfg / "config.toml").write_text(
            f"[[mcp.servers]]\nname = 't'\ntransport = 'http'\nurl = '{server.url}'\n"
            f"tls_ca_cert_path = '{missing}'\n{BUNDLE}"
        )
        snapshot = load_config(cfg, tmp_path / "data", {})  # loading never opens the file
        config = snapshot.mcp.servers[0]
        with caplog.at_level(logging.WARNING):
            assert connect(config, options=OPTS).servers() == ()
        assert f"could not open TLS CA certificate file {missing}" in caplog.text
        missing.parent.mkdir()
        missing.write_bytes(ca.read_bytes())  # the same configuration, a new session
        session = connect(config, options=OPTS)
        assert session.servers() == ("t",)
        missing.unlink()  # the running session keeps the trust it was set up with
        assert text_of(session.call_tool("t__echo", {"message": "still"})) == "Echo: still"
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert connect(config, options=OPTS).servers() == ()  # restarted: read again
        assert f"could not open TLS CA certificate file {missing}" in caplog.text
        caplog.clear()
        plain = McpServerConfig(name="t", transport="http", url=server.url)  # removed
        with caplog.at_level(logging.WARNING):
            assert connect(plain, options=OPTS).servers() == ()
        assert "connection error: SSLError" in caplog.text  # back to the default trust
    finally:
        server.close()
