"""Secrets at rest: reading the key file and decrypting `enc2:` values (config.md §11).

The only module that imports `cryptography` (DESIGN §5.3), and only inside the functions that
need it, so that importing the configuration layer stays cheap. Messages name key paths and
never a value, ciphertext or key (CFG-SECRETS-16).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

ENC2_PREFIX = "enc2:"
LEGACY_PREFIX = "enc:"
OP_PREFIX = "op://"
KEY_FILE_NAME = ".secret_key"
_NONCE_LEN = 12
_TAG_LEN = 16
_HEX_RE = re.compile(r"^(?:[0-9a-fA-F]{2})*$")


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
                raise SecretError("refusing to use a symlinked or non-regular secret key file")
        except FileNotFoundError:
            return None
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if path.is_symlink():
            raise SecretError("refusing to use a symlinked or non-regular secret key file") from exc
        raise SecretError(f"cannot read secret key file: {exc.strerror}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SecretError("refusing to use a symlinked or non-regular secret key file")
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
    if len(key) != 32:
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


def resolve(key_path: str, value: str, load_key: KeyLoader) -> str:
    """Turn one stored secret into its plain value (CFG-SECRETS-05, CFG-SECRETS-07).

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
        # Design: `op read` is not wired up yet; the reference is never resolved silently.
        raise SecretError(
            f"{key_path}: could not resolve 1Password reference: not supported in this build"
        )
    return value


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
