"""The one write path of `config.toml` for every editing surface (config.md §12.5, §13).

`config set` / `unset` / `rename`, the gateway's pairing flow and configuration API, and the
editors all change the file through `edit_document`, which: takes the configuration lock,
re-reads the file (or starts from the embedded default, CFG-CLI-21), refuses a file that does
not load (CFG-CLI-20), applies the edit to the parsed document, re-checks the schema, encrypts
secrets (CFG-SECRETS-04, CFG-SECRETS-08), serialises with `tomli-w`, checks the round trip, and
replaces the file atomically (CFG-CLI-22, CFG-CLI-23). Only the file document is ever written,
never defaults, overrides or decrypted values (CFG-CLI-24); comments are lost (CFG-CLI-26).

Design: concurrent writers (two commands, or gateway threads) are serialised by an exclusive
`flock` on `<config dir>/.config.toml.lock`, and each re-reads the file under the lock, so no
update is lost. Platforms without `fcntl` write without the lock.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import tomli_w

from zeroclaw_ref.config.dirs import ensure_private_dir
from zeroclaw_ref.config.edit import (
    Doc,
    EditError,
    Outcome,
    check_settable,
    convert_text,
    create_server_in,
    parse_path,
    rename_server_in,
    set_in,
    unset_in,
)
from zeroclaw_ref.config.env import apply_overrides
from zeroclaw_ref.config.load import (
    check_document,
    decode_file,
    load_config,
    parse_toml,
    read_config_file,
)
from zeroclaw_ref.config.model import ConfigError
from zeroclaw_ref.config.schema import ROOT, Problem, walk_table
from zeroclaw_ref.config.secrets import (
    ENC2_PREFIX,
    LEGACY_PREFIX,
    OP_PREFIX,
    SecretError,
    encrypt,
    load_or_create_key,
)

if sys.platform != "win32":
    import fcntl

__all__ = [
    "EditError",
    "Outcome",
    "append_paired_token",
    "check_settable",
    "create_server",
    "edit_document",
    "follow_up_warnings",
    "read_document",
    "rename_server",
    "replace_document",
    "set_text",
    "set_value",
    "unset",
]

_DIGEST = re.compile(r"[0-9a-f]{64}")
LOCK_NAME = ".config.toml.lock"

Document = Doc


def read_document(path: Path) -> Document:
    """Parse one TOML file as it is on disk, a leading byte-order mark ignored (CFG-LOAD-01).

    Raises:
        FileNotFoundError: the file does not exist.
        ConfigError: with the line of CFG-LOAD-04 or CFG-LOAD-05; the caller reports it.
    """
    return parse_toml(path, decode_file(path, path.read_bytes()))


def replace_document(path: Path, document: Document) -> None:
    """[CFG-CLI-22] [CFG-CLI-23] serialise, verify the round trip, then replace atomically.

    The new file keeps the old one's mode, or gets 0600 when there was none.

    Raises:
        ConfigError: the document does not survive serialisation; nothing was written.
        OSError: the file could not be replaced; the old file is intact.
    """
    text = tomli_w.dumps(document)
    if tomllib.loads(text) != document:
        raise ConfigError([f"{path}: refusing to write a document that does not round-trip"])
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600
    fd, temp = tempfile.mkstemp(prefix=".config.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        Path(temp).chmod(mode)
        Path(temp).replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(temp).unlink()
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable where the platform supports syncing a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def _locked(config_dir: Path) -> Iterator[None]:
    """Hold the configuration lock; every read-modify-write happens inside it."""
    fd = os.open(config_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if sys.platform != "win32":
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def edit_document(
    config_dir: Path, edit: Callable[[Document], Outcome], focus: str | None = None
) -> Outcome:
    """Apply `edit` to the current document and write the result (config.md §12.5).

    `edit` changes the document in place and says whether it changed; an unchanged document
    is not written (so a no-op never creates the file). `focus` is the key path being set, so
    that a schema problem at exactly that path reads `invalid value for <key path>: …`.

    Raises:
        ConfigError (EditError for refusals) with the lines to print; the file is unchanged.
    """
    ensure_private_dir(config_dir)
    with _locked(config_dir):
        # [CFG-CLI-21] the first edit starts from the working default, not from nothing.
        # [CFG-CLI-20] a file that does not load is refused before anything is changed.
        source = read_config_file(config_dir)
        path = source.path
        document, _ = check_document(path, source.text)
        outcome = edit(document)
        if not outcome.changed:
            return outcome
        problems: list[Problem] = []
        walk_table(ROOT, document, "", problems)
        if problems:
            raise EditError(_problem_lines(problems, focus))
        _encrypt_secrets(document, config_dir)
        try:
            replace_document(path, document)
        except OSError as exc:
            raise ConfigError([f"{path}: cannot write: {exc.strerror or exc}"]) from None
    return outcome


def _problem_lines(problems: list[Problem], focus: str | None) -> list[str]:
    return sorted(
        f"invalid value for {where}: {message}" if where == focus else f"{where}: {message}"
        for where, message in problems
    )


def _secret_maps(document: Document) -> Iterator[tuple[dict[str, object], str]]:
    """[CFG-SECRETS-02] every (holder, key) of a secret in the document as written."""
    providers = document.get("providers")
    for provider in providers.values() if isinstance(providers, dict) else ():
        if isinstance(provider, dict):
            yield provider, "api_key"
            yield from _entries(provider.get("extra_headers"))
    mcp = document.get("mcp")
    for key in ("servers", "mcpServers"):
        servers = mcp.get(key) if isinstance(mcp, dict) else None
        for server in servers if isinstance(servers, list) else ():
            if isinstance(server, dict):
                yield from _entries(server.get("env"))
                yield from _entries(server.get("headers"))


def _entries(table: object) -> Iterator[tuple[dict[str, object], str]]:
    if isinstance(table, dict):
        for key in table:
            yield table, key


def _encrypt_secrets(document: Document, config_dir: Path) -> None:
    """[CFG-SECRETS-04] [CFG-SECRETS-08] encrypt every plain secret when encryption is on.

    Raises:
        EditError when the key cannot be read or created (CFG-SECRETS-12); nothing is written.
    """
    settings = document.get("secrets")
    enabled = settings.get("encrypt", True) if isinstance(settings, dict) else True
    if enabled is not True:
        return
    key: bytes | None = None
    # Design: a legacy `enc:` value is kept as written too, so that loading keeps reporting it
    # (CFG-SECRETS-07) instead of wrapping the old ciphertext as if it were the secret.
    kept = (ENC2_PREFIX, OP_PREFIX, LEGACY_PREFIX)
    for holder, name in _secret_maps(document):
        value = holder.get(name)
        if not isinstance(value, str) or not value or value.startswith(kept):
            continue
        if key is None:
            try:
                # [CFG-SECRETS-11] the key file is created only when something needs it.
                key = load_or_create_key(config_dir)
            except SecretError as exc:
                raise EditError([str(exc)]) from None
        holder[name] = encrypt(value, key)


def set_value(config_dir: Path, key_path: str, value: object) -> Outcome:
    """Set `key_path` to an already typed `value` (lists as lists) through the write path.

    Raises:
        ConfigError / EditError with the lines to print; the file is unchanged.
    """
    target = check_settable(key_path)
    return edit_document(config_dir, lambda doc: set_in(doc, target, value), key_path)


def set_text(config_dir: Path, key_path: str, text: str) -> Outcome:
    """`config set --no-interactive <key path> <text>` and the gateway's `PUT` (CFG-UI-04).

    Raises:
        ConfigError / EditError with the lines to print; the file is unchanged.
    """
    target = check_settable(key_path)
    value = convert_text(target, text)
    return edit_document(config_dir, lambda doc: set_in(doc, target, value), key_path)


def unset(config_dir: Path, key_path: str) -> Outcome:
    """[CFG-CLI-19] remove a key, map entry, server or table; absent is not an error.

    Raises:
        ConfigError / EditError with the lines to print; the file is unchanged.
    """
    target = parse_path(key_path)
    return edit_document(config_dir, lambda doc: unset_in(doc, target))


def create_server(config_dir: Path, name: str) -> Outcome:
    """[CFG-UI-05] append a server named `name` with every other key at its default.

    Raises:
        ConfigError / EditError with the lines to print; the file is unchanged.
    """
    return edit_document(config_dir, lambda doc: create_server_in(doc, name))


def rename_server(config_dir: Path, old: str, new: str) -> Outcome:
    """[CFG-UI-07] rename a server in place; its secrets keep their ciphertexts.

    Raises:
        ConfigError / EditError with the lines to print; the file is unchanged.
    """
    return edit_document(config_dir, lambda doc: rename_server_in(doc, old, new))


def append_paired_token(config_dir: Path, digest: str) -> None:
    """[ACP-GW-11] [CFG-GW-02] append one SHA-256 digest to `gateway.paired_tokens`.

    Every other setting, comments excepted, is kept; a missing file starts from the embedded
    default (CFG-CLI-21). The plaintext token never reaches this function.

    Raises:
        ValueError: `digest` is not 64 lower-case hexadecimal characters.
        ConfigError, OSError: the file could not be read or written; it is unchanged.
    """
    if not _DIGEST.fullmatch(digest):
        raise ValueError("a paired token must be stored as its SHA-256 hex digest")

    def add(document: Document) -> Outcome:
        gateway = document.setdefault("gateway", {})
        assert isinstance(gateway, dict)  # the schema check of the read document holds
        tokens = gateway.get("paired_tokens", [])
        assert isinstance(tokens, list)
        if digest in tokens:
            return Outcome("Updated gateway.paired_tokens", changed=False)
        gateway["paired_tokens"] = [*tokens, digest]
        return Outcome("Updated gateway.paired_tokens", changed=True)

    edit_document(config_dir, add)


def follow_up_warnings(
    config_dir: Path, data_dir: Path, key_path: str | None, environ: Mapping[str, str]
) -> list[str]:
    """The warnings a surface shows after a successful write (without `warning: `).

    [CFG-CLI-17] an environment variable still overriding `key_path`; [CFG-CLI-25] every
    semantic error of the new file, then the summary line.
    """
    warnings: list[str] = []
    variable = _overriding_variable(config_dir, key_path, environ)
    if key_path is not None and variable is not None:
        warnings.append(
            f"{key_path} is overridden by {variable}; the file value applies only without "
            "that variable"
        )
    try:
        load_config(config_dir, data_dir, environ)
    except ConfigError as exc:
        warnings += list(exc.lines)
        warnings.append("the configuration now has errors; run 'zeroclaw_ref config validate'")
    return warnings


def _overriding_variable(
    config_dir: Path, key_path: str | None, environ: Mapping[str, str]
) -> str | None:
    if key_path is None:
        return None
    try:
        source = read_config_file(config_dir)
        if not source.exists:
            return None
        _, tree = check_document(source.path, source.text)
        overrides = apply_overrides(tree, environ).overrides
    except ConfigError:
        return None  # the load that follows reports the problem
    for overridden, variable in overrides.items():
        if key_path == overridden or key_path.startswith(overridden + "."):
            return variable
    return None
