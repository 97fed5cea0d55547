"""Environment overrides `ZEROCLAW_<lower-case path>` and the textual value syntax.

Implements config.md §10: CFG-VALUE-01 to CFG-VALUE-04 (shared with `config set`) and
CFG-ENV-01 to CFG-ENV-13. Overrides are applied to the schema-checked tree in memory only; the
caller records which variable set which key path and reports the secret warnings.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field

from zeroclaw_ref.config.model import ConfigError
from zeroclaw_ref.config.schema import (
    ROOT,
    SERVER,
    SERVER_NAME_RULE,
    Field,
    Kind,
    MapOf,
    Node,
    Problem,
    TableList,
    alias_problem,
    check_value,
    lookup,
    server_name_message,
    server_name_ok,
    walk_table,
)
from zeroclaw_ref.core import jsontypes

# [CFG-ENV-01] only a lower-case tail makes a variable an override; upper-case bootstrap
# variables such as ZEROCLAW_CONFIG_DIR never match (CFG-DIR-08).
_OVERRIDE_RE = re.compile(r"^ZEROCLAW_([a-z0-9_]+)$")
_INT_RE = re.compile(r"^[+-]?[0-9]+$")

# [CFG-ENV-03] map sections as (tail prefix, key path), longest prefix first.
_MAP_SECTIONS: tuple[tuple[str, str], ...] = tuple(
    sorted(
        (
            ("agents", "agents"),
            ("risk_profiles", "risk_profiles"),
            ("runtime_profiles", "runtime_profiles"),
            ("providers", "providers"),
            ("mcp_bundles", "mcp_bundles"),
            ("mcp__servers", "mcp.servers"),
        ),
        key=lambda item: -len(item[0]),
    )
)


class ValueSyntaxError(ValueError):
    """A textual value does not convert; `str()` is the CFG-VALUE-03 reason."""


def parse_text_value(spec: Field, text: str) -> object:
    """[CFG-VALUE-01] [CFG-VALUE-02] convert `text` to the type of `spec`, then check it.

    Raises:
        ValueSyntaxError with the reason (CFG-VALUE-03, or the schema's enum/range message).
    """
    value: object
    if spec.kind is Kind.BOOL:
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise ValueSyntaxError("expected true or false")
        value = lowered == "true"
    elif spec.kind is Kind.INT:
        if not _INT_RE.match(text):
            raise ValueSyntaxError("expected an integer")
        value = int(text)
    elif spec.kind is Kind.FLOAT:
        try:
            value = float(text)
        except ValueError:
            raise ValueSyntaxError("expected a number") from None
        if not math.isfinite(value):
            raise ValueSyntaxError("expected a number")
    elif spec.kind is Kind.STR_LIST:
        value = _parse_list(text)
    elif spec.kind is Kind.STR_MAP:
        raise ValueSyntaxError("expected a table")
    else:
        value = text
    message, accepted = check_value(spec, value)
    if message is not None:
        raise ValueSyntaxError(message)
    return accepted


def _parse_list(text: str) -> tuple[str, ...]:
    # [CFG-VALUE-02] a TOML array when it looks like one, else comma-separated items.
    if text.lstrip().startswith("["):
        try:
            parsed = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            raise ValueSyntaxError("expected a list of strings") from None
        if not isinstance(parsed, list) or not all(isinstance(v, str) for v in parsed):
            raise ValueSyntaxError("expected a list of strings")
        return tuple(parsed)
    return tuple(item.strip() for item in text.split(",") if item.strip())


@dataclass(slots=True)
class EnvResult:
    """What the overrides did: key path -> variable, and the secret warnings (CFG-ENV-12)."""

    overrides: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


class _EnvError(Exception):
    pass


def override_variables(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """[CFG-ENV-01] [CFG-ENV-02] the override variables, in ascending name order."""
    return sorted((k, v) for k, v in environ.items() if _OVERRIDE_RE.match(k))


def apply_overrides(tree: dict[str, object], environ: Mapping[str, str]) -> EnvResult:
    """Apply every override variable to `tree` in place.

    Raises:
        ConfigError with every failing variable's line; startup must stop (CFG-ENV-07..09, 13).
    """
    result = EnvResult()
    errors: list[str] = []
    for var, text in override_variables(environ):
        try:
            for key_path, secret in _apply_one(tree, var, text):
                result.overrides[key_path] = var
                if secret:
                    # [CFG-ENV-12] name the key and the variable, never the value.
                    result.warnings.append(f"Secret applied from env override: {key_path} ({var})")
        except _EnvError as exc:
            errors.extend(str(exc).split("\n"))
    if errors:
        raise ConfigError(errors)
    return result


def _unresolved(var: str) -> _EnvError:
    # [CFG-ENV-07]
    return _EnvError(f"{var} did not resolve to a schema path")


def _apply_one(tree: dict[str, object], var: str, text: str) -> list[tuple[str, bool]]:
    tail = var[len("ZEROCLAW_") :]
    for prefix, section in _MAP_SECTIONS:
        if tail.startswith(prefix + "__"):
            return _apply_entry(tree, var, text, section, tail[len(prefix) + 2 :])
    parts = tail.split("__")
    key_path = ".".join(parts)
    if key_path == "schema_version":
        # [CFG-ENV-08]
        raise _EnvError(f"{var} -> schema_version: this field is not overridable via env vars")
    if key_path == "mcp.servers":
        return _apply_server_list(tree, var, text)
    leaf = _leaf(lookup(ROOT, parts), var, key_path)
    _set(tree, parts, _convert(leaf, var, key_path, text))
    return [(key_path, leaf.secret)]


def _leaf(node: Node | None, var: str, key_path: str) -> Field:
    if isinstance(node, TableList):
        # [CFG-ENV-13] no unambiguous textual form.
        raise _EnvError(f"{var} -> {key_path}: lists of tables cannot be set from the environment")
    if not isinstance(node, Field) or node.kind is Kind.STR_MAP:
        raise _unresolved(var)
    return node


def _convert(leaf: Field, var: str, key_path: str, text: str) -> object:
    try:
        return parse_text_value(leaf, text)
    except ValueSyntaxError as exc:
        # [CFG-ENV-09]
        raise _EnvError(f"{var} -> {key_path}: {exc}") from None


def _apply_entry(
    tree: dict[str, object], var: str, text: str, section: str, rest: str
) -> list[tuple[str, bool]]:
    # [CFG-ENV-03] the next segment is the alias; the remaining ones the key inside the entry.
    alias, _, inner = rest.partition("__")
    if not alias or not inner:
        raise _unresolved(var)
    if section == "mcp.servers":
        reason = None if server_name_ok(alias) else SERVER_NAME_RULE
        entry_schema: Node = SERVER
    else:
        reason = alias_problem(alias)
        section_node = ROOT.fields[section]
        assert isinstance(section_node, MapOf)
        entry_schema = section_node.entry
    if reason is not None:
        # [CFG-ENV-05]
        raise _EnvError(f"{var}: invalid alias '{alias}' for '{section}': {reason}")
    parts = inner.split("__")
    key_path = f"{section}.{alias}.{'.'.join(parts)}"
    leaf = _leaf(lookup(entry_schema, parts), var, key_path)
    value = _convert(leaf, var, key_path, text)
    _set(_entry(tree, section, alias), parts, value)
    return [(key_path, leaf.secret)]


def _table_at(tree: dict[str, object], key: str) -> dict[str, object]:
    child = tree.get(key)
    if not isinstance(child, dict):
        child = {}
        tree[key] = child
    return child


def _entry(tree: dict[str, object], section: str, alias: str) -> dict[str, object]:
    # [CFG-ENV-06] an entry absent from the file is created with defaults.
    if section == "mcp.servers":
        mcp = _table_at(tree, "mcp")
        servers = mcp.get("servers")
        if not isinstance(servers, list):
            servers = []
            mcp["servers"] = servers
        for server in servers:
            if isinstance(server, dict) and server.get("name") == alias:
                return server
        created: dict[str, object] = {"name": alias}
        servers.append(created)
        return created
    return _table_at(_table_at(tree, section), alias)


def _set(table: dict[str, object], parts: list[str], value: object) -> None:
    for part in parts[:-1]:
        table = _table_at(table, part)
    table[parts[-1]] = value


def _apply_server_list(tree: dict[str, object], var: str, text: str) -> list[tuple[str, bool]]:
    # [CFG-VALUE-04] the whole server list as a JSON array of server tables.
    try:
        parsed = jsontypes.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, list) or not all(isinstance(s, dict) for s in parsed):
        raise _EnvError(f"{var} -> mcp.servers: expected a JSON array of server tables")
    problems: list[Problem] = []
    servers: list[object] = []
    for i, raw in enumerate(parsed):
        assert isinstance(raw, dict)
        servers.append(walk_table(SERVER, raw, f"mcp.servers[{i}]", problems))
    lines = [f"{var} -> {path}: {message}" for path, message in problems]
    applied: list[tuple[str, bool]] = [("mcp.servers", False)]
    for i, server in enumerate(servers):
        assert isinstance(server, dict)
        name = server.get("name")
        if isinstance(name, str) and name.strip() and not server_name_ok(name):
            lines.append(f"{var} -> {server_name_message(i, name)}")
        for secret_map in ("env", "headers"):
            entries = server.get(secret_map)
            if isinstance(entries, dict):
                applied += [(f"mcp.servers.{name}.{secret_map}.{k}", True) for k in entries]
    if lines:
        raise _EnvError("\n".join(lines))
    _table_at(tree, "mcp")["servers"] = servers
    # Only the secrets warn; the list itself is recorded under `mcp.servers`.
    return applied
