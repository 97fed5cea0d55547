"""Pairing: a one-time code exchanged for a bearer token (acp.md ACP-GW-11, config.md CFG-GW-02).

The gateway mints a code at start-up when pairing is required and no token is configured, and
announces it on standard error. `GET /pair/code` shows it to loopback clients only; `POST /pair`
with the right `X-Pairing-Code` consumes it, mints a fresh token, stores only the token's SHA-256
digest in `config.toml` and answers the token once. The ConfigStore then reloads the file, so
the next request authenticates with the new token (ACP-GW-03).

Guessing: a six-digit code has only 10**6 values, so what keeps it secret is how many guesses an
attacker gets, not how the comparison is made. `Pairing` therefore counts wrong codes and locks
`POST /pair` out after `MAX_FAILURES` of them (see `Pairing.consume`).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import math
import secrets
import threading
import time
from collections.abc import Callable

from zeroclaw_ref.config.model import ConfigError, ConfigSnapshot
from zeroclaw_ref.config.write import append_paired_token

from .request import HttpRequest, Reply

log = logging.getLogger(__name__)

CODE_HEADER = "X-Pairing-Code"
TOKEN_PREFIX = "zc_"
BAD_CODE = "Invalid or expired pairing code"
LOOPBACK_ONLY = "The pairing code is only shown to loopback clients"
WRITE_FAILED = "Failed to store the paired token"
LOCKED_OUT = "Too many wrong pairing codes; try again in {secs} s"

# Design: the lock-out budget. Wrong codes are counted for the whole gateway, not per client
# address: an attacker can spread guesses over many source addresses, and a real pairing client
# is local anyway. After MAX_FAILURES wrong codes every attempt, right or wrong, is refused with
# 429 for LOCKOUT_SECS; each further lock-out doubles that, up to LOCKOUT_CAP_SECS; a successful
# pairing clears the record. Worst case for an attacker: 5 guesses, then 5 min, 10 min, 20 min
# ... pauses, i.e. about 45 guesses in the first day and 5 per day after that, under 2,000 a year
# against 10**6 codes (below 0.2 %), where the unlimited route allowed all 10**6 in minutes.
# A lock-out caused by an attacker also delays the owner, who can restart the gateway: that
# mints a fresh code with a clean record, something a remote attacker cannot do.
MAX_FAILURES = 5
LOCKOUT_SECS = 300.0
LOCKOUT_CAP_SECS = 86_400.0


class PairingLocked(Exception):
    """`POST /pair` is locked out; `retry_after` is the whole seconds left."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(LOCKED_OUT.format(secs=retry_after))
        self.retry_after = retry_after


def token_digest(token: str) -> str:
    """[ACP-GW-03] the lower-case hex SHA-256 digest stored for a token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Pairing:
    """The current one-time code, if any, and the wrong-code record; thread-safe.

    `now` is a monotonic clock in seconds (tests replace it to pass a lock-out without waiting).
    """

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._code: str | None = None
        self.now = now
        self._failures = 0  # wrong codes since the last lock-out or success
        self._lockouts = 0  # lock-outs since the last success: each one doubles the next
        self._locked_until = 0.0

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
        """Take the code when `offered` matches it (constant time); a code works once.

        The check, the comparison and the bookkeeping happen under one lock, so concurrent
        guesses cannot slip past the budget.

        Raises:
            PairingLocked: too many wrong codes; `offered` was not even compared.
        """
        with self._lock:
            left = self._locked_until - self.now()
            if left > 0:
                raise PairingLocked(math.ceil(left))
            code = self._code
            # [ACP-GW-11] compare_digest takes the same time wherever the first difference is.
            if code is not None and hmac.compare_digest(code.encode(), offered.encode()):
                self._code = None
                self._failures = self._lockouts = 0
                return True
            self._failures += 1
            if self._failures >= MAX_FAILURES:
                pause = min(LOCKOUT_SECS * 2**self._lockouts, LOCKOUT_CAP_SECS)
                self._locked_until = self.now() + pause
                self._lockouts += 1
                self._failures = 0
                log.warning("pairing: %d wrong codes, locked for %d s", MAX_FAILURES, pause)
            return False


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
    if not offered:
        return Reply.error(403, BAD_CODE)  # no guess made, so none counted
    try:
        paired = request.state.pairing.consume(offered)
    except PairingLocked as locked:
        # Design: 429 with Retry-After tells an honest client when to come back.
        body = Reply.error(429, str(locked)).body
        return Reply(429, body, headers=(("Retry-After", str(locked.retry_after)),))
    if not paired:
        return Reply.error(403, BAD_CODE)
    token = TOKEN_PREFIX + secrets.token_hex(32)
    try:
        # [CFG-GW-02] the plaintext token is answered once and never written anywhere.
        append_paired_token(request.config.config_dir, token_digest(token))
    except (ConfigError, OSError) as exc:
        log.error("pairing: could not update config.toml: %s", exc)
        return Reply.error(500, WRITE_FAILED)
    return Reply.json(200, {"token": token})
