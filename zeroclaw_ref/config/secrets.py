"""Secrets at rest: the key file, `enc2:` values and `op://` references (config.md §11).

The only module that imports `cryptography` (DESIGN §5.3), and only inside the functions that
need it, so that importing the configuration layer stays cheap. Messages name key paths and
never a value, ciphertext or key (CFG-SECRETS-16).

Design: resolving an `op://` reference runs the 1Password CLI (CFG-SECRETS-07), so this module
also imports `subprocess`; keeping the call here keeps every secret rule in one place.
"""

from __future__ import annotations

import os
import re
import secrets as _random
import shutil
import stat
import subprocess
from collections.abc import Mapping
from pathlib import Path

from zeroclaw_ref.core.affinity import unpinned

ENC2_PREFIX = "enc2:"
LEGACY_PREFIX = "enc:"
OP_PREFIX = "op://"
KEY_FILE_NAME = ".secret_key"
_NONCE_LEN = 12
_TAG_LEN = 16
_HEX_RE = re.compile(r"^(?:[0-9a-fA-F]{2})*$")
_KEY_LEN = 32
# [CFG-SECRETS-07] how long `op read` may take; a module constant so tests can shorten it.
OP_TIMEOUT_SECS = 10.0
_NOT_REGULAR = "refusing to use a symlinked or non-regular secret key file"


class SecretError(Exception):
    """A secret or the key file cannot be used; `str()` is the full error line."""


def key_file(config_dir: Path) -> Path:
    """[CFG-DIR-07] the key file's path."""
    return config_dir / KEY_FILE_NAME


def read_key(path: Path) -> bytes | None:
    """Read the 32-byte key, or None when the file does not exist.

    Raises:
        SecretError for a symlink, non-regular file or malformed contents; loading stops.
    """
    # [CFG-SECRETS-10] never follow a symlink planted in place of the key.
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    if not hasattr(os, "O_NOFOLLOW"):
        try:
            if not stat.S_ISREG(path.lstat().st_mode):
                raise SecretError(_NOT_REGULAR)
        except FileNotFoundError:
            return None
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if path.is_symlink():
            raise SecretError(_NOT_REGULAR) from exc
        raise SecretError(f"cannot read secret key file: {exc.strerror}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SecretError(_NOT_REGULAR)
        raw = b""
        while chunk := os.read(fd, 4096):
            raw += chunk
    finally:
        os.close(fd)
    # [CFG-SECRETS-09]
    text = raw.decode("ascii", errors="replace").strip()
    if not _HEX_RE.match(text):
        raise SecretError("Secret key file is corrupt")
    key = bytes.fromhex(text)
    if len(key) != _KEY_LEN:
        raise SecretError(f"Key file must contain exactly 32 bytes (got {len(key)})")
    return key


def decrypt(key_path: str, value: str, key: bytes | None) -> str:
    """[CFG-SECRETS-05] [CFG-SECRETS-06] decrypt one `enc2:` value found at `key_path`.

    Raises:
        SecretError with the CFG-SECRETS-06 text; the caller reports it as a load error.
    """
    if key is None:
        raise SecretError(f"{key_path}: encrypted secret found but the secret key file is missing")
    body = value[len(ENC2_PREFIX) :]
    if not _HEX_RE.match(body) or len(body) // 2 < _NONCE_LEN + _TAG_LEN:
        raise SecretError(f"{key_path}: encrypted secret is corrupt")
    blob = bytes.fromhex(body)
    # Lazy import: cryptography is heavy and only needed when a secret is encrypted.
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    try:
        plain = ChaCha20Poly1305(key).decrypt(blob[:_NONCE_LEN], blob[_NONCE_LEN:], None)
    except InvalidTag:
        raise SecretError(
            f"{key_path}: enc2: decryption failed (wrong key or tampered ciphertext)"
        ) from None
    try:
        return plain.decode("utf-8")
    except UnicodeDecodeError:
        raise SecretError(f"{key_path}: decrypted secret is not valid UTF-8") from None


def encrypt(value: str, key: bytes) -> str:
    """[CFG-SECRETS-03] encrypt `value` as `enc2:<hex nonce || ciphertext || tag>`."""
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    nonce = os.urandom(_NONCE_LEN)
    return ENC2_PREFIX + (nonce + ChaCha20Poly1305(key).encrypt(nonce, value.encode(), None)).hex()


def resolve(
    key_path: str, value: str, load_key: KeyLoader, environ: Mapping[str, str] | None = None
) -> str:
    """Turn one stored secret into its plain value (CFG-SECRETS-05, CFG-SECRETS-07).

    `environ` is the environment `op` runs with and whose `PATH` finds it (the process
    environment when None).

    Raises:
        SecretError with the line to report.
    """
    if value.startswith(ENC2_PREFIX):
        return decrypt(key_path, value, load_key())
    if value.startswith(LEGACY_PREFIX):
        raise SecretError(
            f"{key_path}: unsupported secret format 'enc:'; set the value again with "
            f"'zeroclaw_ref config set {key_path}'"
        )
    if value.startswith(OP_PREFIX):
        return resolve_op(key_path, value, os.environ if environ is None else environ)
    return value


def resolve_op(key_path: str, reference: str, environ: Mapping[str, str]) -> str:
    """[CFG-SECRETS-07] read `reference` with `op read`; the result is never stored.

    Raises:
        SecretError naming the key path and why; the value is never part of it.
    """
    prefix = f"{key_path}: could not resolve 1Password reference"
    executable = shutil.which("op", path=environ.get("PATH", os.defpath))
    if executable is None:
        raise SecretError(f"{prefix}: op executable not found")
    try:
        # No shell, and stdin closed: an ACP server's stdin carries the protocol.
        with unpinned():
            done = subprocess.run(
                [executable, "read", reference],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=dict(environ),
                timeout=OP_TIMEOUT_SECS,
                check=False,
            )
    except subprocess.TimeoutExpired:
        raise SecretError(f"{prefix}: op read timed out after {OP_TIMEOUT_SECS:g} s") from None
    except OSError as exc:
        raise SecretError(f"{prefix}: cannot run op: {exc.strerror}") from None
    if done.returncode != 0:
        raise SecretError(f"{prefix}: op read exited with status {done.returncode}")
    try:
        return done.stdout.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise SecretError(f"{prefix}: op read output is not valid UTF-8") from None


def load_or_create_key(config_dir: Path) -> bytes:
    """The key of `config_dir`, creating the key file when there is none (CFG-SECRETS-11..13).

    Only a write that has a secret to encrypt calls this. An existing file is never replaced.

    Raises:
        SecretError when the existing file is unusable or creation fails; the write that
        needed the key must be abandoned, leaving config.toml untouched (CFG-SECRETS-12).
    """
    path = key_file(config_dir)
    existing = read_key(path)
    if existing is not None:
        return existing
    key = _random.token_bytes(_KEY_LEN)
    temp = config_dir / f"{KEY_FILE_NAME}.{_random.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        # [CFG-SECRETS-11] O_EXCL: never write through a file someone else placed there.
        fd = os.open(temp, flags, 0o600)
        try:
            os.fchmod(fd, 0o600)  # the umask could only narrow it; make it exact
            os.write(fd, (key.hex() + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            # [CFG-SECRETS-11] link, unlike rename, fails when the final name exists.
            os.link(temp, path)
        except FileExistsError:
            # [CFG-SECRETS-12] another process won the race: its key is the key.
            winner = read_key(path)
            if winner is None:
                raise SecretError("cannot create secret key file: it vanished") from None
            return winner
    except OSError as exc:
        # [CFG-SECRETS-12] [CFG-SECRETS-16] the reason only, never key material.
        raise SecretError(f"cannot create secret key file: {exc.strerror or exc}") from None
    finally:
        temp.unlink(missing_ok=True)
    return key


class KeyLoader:
    """Reads the key file at most once, on first need."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._done = False
        self._key: bytes | None = None

    def __call__(self) -> bytes | None:
        """The key, or None when the file is missing.

        Raises:
            SecretError when the key file is unusable.
        """
        if not self._done:
            self._key = read_key(self._path)
            self._done = True
        return self._key
