"""Reading and checking `tls_ca_cert_path` (mcp.md §6.1, MCP-TLS-02..07).

The file is read when a connection is set up, never at configuration load (MCP-TLS-02). It is
opened without blocking on a FIFO and checked to be a regular file before a bounded read.
Design: certificate blocks are validated with `ssl` (loading them into a context), because
DESIGN §5.3 keeps `cryptography` out of the MCP package; the texts are those of §16.
"""

from __future__ import annotations

import os
import ssl
import stat
from pathlib import Path
from typing import Final

from zeroclaw_ref.mcp.errors import McpConnectError

MAX_CA_BYTES: Final = 1_048_576  # [MCP-TLS-06]
_BEGIN: Final = "-----BEGIN CERTIFICATE-----"
PLAINTEXT_URL: Final = (
    "tls_ca_cert_path requires an HTTPS configured remote URL; refusing plaintext transport"
)
PLAINTEXT_REDIRECT: Final = "tls_ca_cert_path forbids redirecting to plaintext"


def read_ca_pem(server: str, path: str) -> str:
    """Return the PEM text of `path` after every check of MCP-TLS-03..07.

    Raises:
        McpConnectError: with the exact §16 text; the connection fails (MCP-TLS-14).
    """
    if not Path(path).is_absolute():
        raise McpConnectError(
            server, f"MCP server `{server}` TLS CA certificate path must be absolute: {path}"
        )
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise McpConnectError(
            server,
            f"MCP server `{server}` could not open TLS CA certificate file {path}: "
            f"{exc.strerror or exc}",
        ) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise McpConnectError(
                server,
                f"MCP server `{server}` TLS CA certificate path {path} must name a regular file",
            )
        data = _read_bounded(fd, MAX_CA_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_CA_BYTES:
        raise McpConnectError(
            server,
            f"MCP server `{server}` TLS CA certificate file {path} exceeds the 1048576-byte limit",
        )
    text = data.decode("utf-8", errors="replace")
    if _BEGIN not in text:
        raise McpConnectError(
            server,
            f"MCP server `{server}` TLS CA certificate file {path} contained no certificates",
        )
    try:
        ssl.create_default_context(cadata=text)
    except (ssl.SSLError, ValueError) as exc:
        raise McpConnectError(
            server, f"MCP server `{server}` invalid PEM CA certificate in {path}: {exc}"
        ) from exc
    return text


def _read_bounded(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total < limit:
        chunk = os.read(fd, limit - total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def context_with(pem: str, default_bundle: str | None) -> ssl.SSLContext:
    """[MCP-TLS-08] [MCP-TLS-09] default anchors plus `pem`; verification stays on."""
    ctx = ssl.create_default_context(cafile=default_bundle)
    ctx.load_verify_locations(cadata=pem)
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx
