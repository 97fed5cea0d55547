"""Per-test scripting on top of `FakeMcpHttp`, and a throw-away private PKI.

`install_scripts(monkeypatch)` wraps the fake's request handler so that a test can replace
the answer to one JSON-RPC method (or one tool of `tools/call`) and the standalone/resumption
GET of one particular `FakeMcpHttp`, leaving every other request to the stock fake. A fake
without a `Script` attached behaves exactly as before. `make_pki` writes a CA and a server
certificate for 127.0.0.1 so HTTPS variants of the fake can be trusted through
`tls_ca_cert_path`.
"""

from __future__ import annotations

import datetime
import io
import ipaddress
import json
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fake_mcp_http import FakeMcpHttp, Handler

PostHook = Callable[[Handler, dict[str, Any]], None]
GetHook = Callable[[Handler], None]


@dataclass
class Script:
    """What one fake answers differently. Keys of `posts` are a method name, or
    `tools/call:<tool>` for a single tool; `get` replaces every GET on `/mcp`."""

    posts: dict[str, PostHook] = field(default_factory=dict)
    get: GetHook | None = None
    release: threading.Event = field(default_factory=threading.Event)  # frees parked handlers


def script_for(fake: FakeMcpHttp) -> Script:
    """Attach (or return) the script of `fake`; requires `install_scripts` in the test."""
    existing = getattr(fake.httpd, "script", None)
    if isinstance(existing, Script):
        return existing
    script = Script()
    fake.httpd.script = script  # type: ignore[attr-defined]
    return script


def _key(message: dict[str, Any]) -> str:
    method = str(message.get("method", ""))
    if method == "tools/call":
        return f"tools/call:{message.get('params', {}).get('name')}"
    return method


def install_scripts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Route the handler through per-fake scripts for the duration of one test."""
    original_post = Handler.do_POST
    original_get = Handler.do_GET

    def do_post(self: Handler) -> None:
        script = getattr(self.server, "script", None)
        if not isinstance(script, Script) or not self.path.startswith("/mcp"):
            original_post(self)
            return
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        message = json.loads(raw)
        hook = script.posts.get(_key(message)) if isinstance(message, dict) else None
        if hook is None:
            real = self.rfile
            self.rfile = io.BytesIO(raw)  # type: ignore[assignment]
            try:
                original_post(self)
            finally:
                self.rfile = real  # keep-alive: later requests come from the socket again
            return
        self._record(message)
        hook(self, message)

    def do_get(self: Handler) -> None:
        script = getattr(self.server, "script", None)
        if not isinstance(script, Script) or script.get is None or self.path.startswith("/sse"):
            original_get(self)
            return
        self._record(None)
        script.get(self)

    monkeypatch.setattr(Handler, "do_POST", do_post)
    monkeypatch.setattr(Handler, "do_GET", do_get)


def sse_bytes(*events: str) -> bytes:
    """Event-stream text made of the given raw event blocks."""
    return "".join(events).encode()


def message_event(value: Any, event_id: str | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: message\ndata: {json.dumps(value)}\n\n"


def text_result(rid: Any, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}


# --- a private PKI ------------------------------------------------------------------------


def make_pki(tmp: Path) -> tuple[Path, Path, Path]:
    """A private CA and a server certificate for 127.0.0.1; returns (ca, cert, key) paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("zeroclaw extra test CA"))
        .issuer_name(name("zeroclaw extra test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    tmp.mkdir(parents=True, exist_ok=True)
    paths = (tmp / "ca.pem", tmp / "server.pem", tmp / "server.key")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


def https_fake(tmp: Path) -> tuple[FakeMcpHttp, Path]:
    """An HTTPS fake whose certificate chains to a fresh private CA; returns (fake, ca path)."""
    ca, cert, key = make_pki(tmp)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return FakeMcpHttp(tls=ctx), ca
