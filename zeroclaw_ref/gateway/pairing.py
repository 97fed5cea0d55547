"""Pairing: a one-time code exchanged for a bearer token (acp.md ACP-GW-11, config.md CFG-GW-02).

The gateway mints a code at start-up when pairing is required and no token is configured, and
announces it on standard error. `GET /pair/code` shows it to loopback clients only; `POST /pair`
with the right `X-Pairing-Code` consumes it, mints a fresh token, stores only the token's SHA-256
digest in `config.toml` and answers the token once. The ConfigStore then reloads the file, so
the next request authenticates with the new token (ACP-GW-03).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import secrets
import threading

from zeroclaw_ref.config.model import ConfigError, ConfigSnapshot
from zeroclaw_ref.config.write import append_paired_token

from .request import HttpRequest, Reply

log = logging.getLogger(__name__)

CODE_HEADER = "X-Pairing-Code"
TOKEN_PREFIX = "zc_"
BAD_CODE = "Invalid or expired pairing code"
LOOPBACK_ONLY = "The pairing code is only shown to loopback clients"
WRITE_FAILED = "Failed to store the paired token"


def token_digest(token: str) -> str:
    """[ACP-GW-03] the lower-case hex SHA-256 digest stored for a token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Pairing:
    """The current one-time code, if any; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._code: str | None = None

    def start(self, config: ConfigSnapshot) -> str | None:
        """Mint a code when pairing is required and no token is configured; returns it."""
        gateway = config.gateway
        if not gateway.require_pairing or gateway.paired_tokens:
            return None
        code = f"{secrets.randbelow(1_000_000):06d}"  # Design: six digits, easy to type
        with self._lock:
            self._code = code
        return code

    def current(self) -> str | None:
        with self._lock:
            return self._code

    def consume(self, offered: str) -> bool:
        """Take the code when `offered` matches it (constant time); a code works once."""
        with self._lock:
            code = self._code
            if code is None or not hmac.compare_digest(code.encode(), offered.encode()):
                return False
            self._code = None
            return True


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def get_code(request: HttpRequest) -> Reply:
    """[ACP-GW-11] `GET /pair/code`: the code, or null, for loopback clients only."""
    if not is_loopback(request.client_host):
        return Reply.error(403, LOOPBACK_ONLY)
    return Reply.json(200, {"pairing_code": request.state.pairing.current()})


def post_pair(request: HttpRequest) -> Reply:
    """[ACP-GW-11] `POST /pair`: exchange the code for a token whose digest is stored."""
    offered = (request.headers.get(CODE_HEADER) or "").strip()
    if not offered or not request.state.pairing.consume(offered):
        return Reply.error(403, BAD_CODE)
    token = TOKEN_PREFIX + secrets.token_hex(32)
    try:
        # [CFG-GW-02] the plaintext token is answered once and never written anywhere.
        append_paired_token(request.config.config_dir, token_digest(token))
    except (ConfigError, OSError) as exc:
        log.error("pairing: could not update config.toml: %s", exc)
        return Reply.error(500, WRITE_FAILED)
    return Reply.json(200, {"token": token})
