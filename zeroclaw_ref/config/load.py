"""Load `config.toml` into a frozen `ConfigSnapshot` (config.md §2, §14).

The stages of CFG-LOAD-01 run in order and loading stops after the first stage that reports an
error: read, strip BOM, decode, parse, schema check, (defaults and normalisation,) secrets,
environment overrides, build, semantic validation, freeze. The file is never written.

Design: defaults and normalisation are applied when the tree is built into dataclasses, which
happens after the overrides; both are pure value mappings, so the observable result is the
order CFG-LOAD-01 gives, and normalisation also covers values set from the environment.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from zeroclaw_ref.config.build import build_snapshot, sub, table_list
from zeroclaw_ref.config.dirs import config_file
from zeroclaw_ref.config.env import apply_overrides
from zeroclaw_ref.config.locate import line_of, locate_lines
from zeroclaw_ref.config.model import ConfigError, ConfigSnapshot
from zeroclaw_ref.config.schema import ROOT, Problem, walk_table
from zeroclaw_ref.config.secrets import KeyLoader, SecretError, key_file, resolve
from zeroclaw_ref.config.validate import validate

_BOM = b"\xef\xbb\xbf"

# [CFG-DEFAULT-01] loaded when config.toml does not exist; never written by the loader.
EMBEDDED_DEFAULT = """\
schema_version = 1

[providers.demo]
kind = "demo"
model = "demo"

[risk_profiles.default]
level = "supervised"

[runtime_profiles.default]

[agents.default]
model_provider = "demo"
risk_profile = "default"
runtime_profile = "default"
"""


def load_config(config_dir: Path, data_dir: Path, environ: Mapping[str, str]) -> ConfigSnapshot:
    """Load and validate the configuration of `config_dir`.

    `environ` supplies the `ZEROCLAW_<path>` overrides. Warnings are in `snapshot.warnings`, for
    the caller to print as `warning: <text>` (CFG-LOAD-08).

    Raises:
        ConfigError whose lines follow `ERROR: `; the caller must not start (CFG-LOAD-09).
    """
    # [CFG-LOAD-02] no file: the embedded default, environment overrides still apply.
    source = read_config_file(config_dir)
    _, tree = check_document(source.path, source.text)
    # [CFG-LOAD-03] an empty file parses to {} and so yields every default and no agents.
    _decrypt_secrets(tree, config_dir, environ)
    env = apply_overrides(tree, environ)
    snapshot, build_errors, warnings = build_snapshot(
        tree, (config_dir, data_dir, source.path, source.exists), env.overrides
    )
    checked = validate(snapshot)
    errors = sorted(build_errors + checked.errors)
    if errors:
        raise ConfigError(errors)
    providers = {
        name: dataclasses.replace(p, script_turns=checked.scripts[name])
        if name in checked.scripts
        else p
        for name, p in snapshot.providers.items()
    }
    return dataclasses.replace(
        snapshot,
        providers=MappingProxyType(providers),
        warnings=tuple(env.warnings + warnings + checked.warnings),
    )


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """`config.toml` as read: where it is, its text, and whether it exists."""

    path: Path
    text: str  # the embedded default when the file does not exist (CFG-LOAD-02)
    exists: bool


def read_config_file(config_dir: Path) -> ConfigFile:
    """The one reader of `<config dir>/config.toml`, for the loader, `config get | list`, the
    write path, the editor and the gateway alike (CFG-LOAD-01, CFG-LOAD-02, CFG-LOAD-04).

    Raises:
        ConfigError: the file exists but cannot be read, or is not UTF-8.
    """
    path = config_file(config_dir)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return ConfigFile(path, EMBEDDED_DEFAULT, False)
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror}"]) from None
    return ConfigFile(path, decode_file(path, raw), True)


def decode_file(path: Path, raw: bytes) -> str:
    """Decode the file's bytes (CFG-LOAD-04), for the loader and the write path alike.

    Raises:
        ConfigError with the CFG-LOAD-04 line.
    """
    # A leading byte-order mark is tolerated (CFG-LOAD-01) but counts in byte offsets.
    skipped = len(_BOM) if raw.startswith(_BOM) else 0
    try:
        return raw[skipped:].decode("utf-8")
    except UnicodeDecodeError as exc:
        # [CFG-LOAD-04]
        raise ConfigError(
            [f"{path}: not valid UTF-8 (byte offset {exc.start + skipped})"]
        ) from None


def parse_toml(path: Path, text: str) -> dict[str, object]:
    """Parse the text of `path` as TOML, without the schema check.

    Raises:
        ConfigError with the CFG-LOAD-05 line; tomllib's message carries the line and column.
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{path}: invalid TOML: {exc}"]) from None


def check_document(path: Path, text: str) -> tuple[dict[str, object], dict[str, object]]:
    """Parse `text` and check it against the schema (CFG-LOAD-05, CFG-LOAD-06).

    Returns the document as parsed (what the write path edits) and the checked tree (what the
    loader builds from).

    Raises:
        ConfigError with the syntax error or every schema error.
    """
    document = parse_toml(path, text)  # [CFG-LOAD-05]
    problems: list[Problem] = []
    tree = walk_table(ROOT, document, "", problems)
    if problems:
        raise ConfigError(_schema_lines(path, text, problems))
    return document, tree


def _schema_lines(path: Path, text: str, problems: list[Problem]) -> list[str]:
    """[CFG-LOAD-06] [CFG-LOAD-07] `<file>:<line>: <key path>: <message>`, sorted."""
    lines = locate_lines(text)
    located: list[tuple[int, str, str]] = []
    for key_path, message in problems:
        line = line_of(lines, key_path)
        if line is None and key_path.startswith("mcp.servers"):
            # [CFG-MCP-01] the entries may be written under the `mcpServers` alias.
            line = line_of(lines, "mcp.mcpServers" + key_path[len("mcp.servers") :])
        located.append((line or 0, key_path, message))
    located.sort()
    return [
        f"{path}:{line}: {key}: {message}" if line else f"{path}: {key}: {message}"
        for line, key, message in located
    ]


def _decrypt_secrets(tree: dict[str, object], config_dir: Path, environ: Mapping[str, str]) -> None:
    """[CFG-SECRETS-05] resolve every secret of the file in place.

    Raises:
        ConfigError with one line per unusable secret (CFG-SECRETS-06, CFG-SECRETS-07).
    """
    loader = KeyLoader(key_file(config_dir))
    errors: list[str] = []

    def fix(holder: dict[str, object], key: str, key_path: str) -> None:
        value = holder.get(key)
        if isinstance(value, str):
            try:
                holder[key] = resolve(key_path, value, loader, environ)
            except SecretError as exc:
                if str(exc) not in errors:
                    errors.append(str(exc))

    # [CFG-SECRETS-02] exactly these values are secrets.
    for name, provider in sub(tree, "providers").items():
        if isinstance(provider, dict):
            fix(provider, "api_key", f"providers.{name}.api_key")
            headers = sub(provider, "extra_headers")
            for header in headers:
                fix(headers, header, f"providers.{name}.extra_headers.{header}")
    for index, server in enumerate(table_list(sub(tree, "mcp"), "servers")):
        label = server.get("name")
        prefix = (
            f"mcp.servers.{label}" if isinstance(label, str) and label else f"mcp.servers[{index}]"
        )
        for map_key in ("env", "headers"):
            entries = sub(server, map_key)
            for key in entries:
                fix(entries, key, f"{prefix}.{map_key}.{key}")
    if errors:
        raise ConfigError(sorted(errors))
