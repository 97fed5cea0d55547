"""The `config.toml` schema as data, and the per-value checks every input path shares.

Implements config.md §3 to §9.1 (keys, types, defaults, enumerations, ranges, alias rules). The
loader walks a parsed file against `ROOT`; environment overrides and, later, `config set` look a
key path up with `lookup` and check one value with `check_value`.

Design: a schema node is one of four shapes: `Field` (a leaf, including secret string maps),
`Table` (fixed keys), `MapOf` (a map section keyed by alias) and `TableList` (a list of tables).
Defaults live in `Field.default` so that editing surfaces can show them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import PurePath
from typing import TypeAlias

from zeroclaw_ref.config.model import (
    DEFAULT_ALLOWED_COMMANDS,
    DEFAULT_FORBIDDEN_PATHS,
    DEFAULT_PERIPHERAL_PREFIXES,
    LEVELS,
    PROVIDER_KINDS,
    SANDBOX_BACKENDS,
)


class Kind(Enum):
    """The declared type of a leaf (CFG-SCHEMA-02)."""

    STR = "string"
    BOOL = "boolean"
    INT = "integer"
    FLOAT = "float"
    STR_LIST = "list of strings"
    STR_MAP = "table of strings"


# A per-value rule beyond type, enum and range; returns a message or None.
Check: TypeAlias = Callable[[object], "str | None"]


@dataclass(frozen=True, slots=True)
class Field:
    """A leaf key: its type, default (None = unset), and constraints."""

    kind: Kind
    default: object = None
    enum: tuple[str, ...] | None = None
    # Inclusive bounds; None on one side means unbounded there.
    low: int | float | None = None
    high: int | float | None = None
    secret: bool = False
    required: bool = False
    check: Check | None = None
    # Values accepted besides `enum` (normalised later), e.g. "readonly" (CFG-AUTO-04).
    also: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Table:
    """A table with a fixed set of keys."""

    fields: Mapping[str, Node]


@dataclass(frozen=True, slots=True)
class MapOf:
    """A map section (`agents`, `providers`, ...) whose keys are aliases (CFG-SCHEMA-03)."""

    entry: Table


@dataclass(frozen=True, slots=True)
class TableList:
    """A list of tables (`mcp.servers`, `peripherals.boards`, `tool_filter_groups`)."""

    entry: Table


Node: TypeAlias = "Field | Table | MapOf | TableList"

# [CFG-SCHEMA-03] map-section aliases.
_ALIAS_RE = re.compile(r"^[a-z0-9](?:[a-z0-9_-]{0,61}[a-z0-9])?$")
# [CFG-MCP-05] server names; [POL-SKILL-03] skill names share the shape.
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
_DIGEST_RE = re.compile(r"^[0-9a-f]{64}$")


def alias_problem(alias: str) -> str | None:
    """[CFG-SCHEMA-03] why `alias` is not a valid map-section key, or None when it is."""
    if not alias:
        return "must not be empty"
    if len(alias) > 63:
        return "must be at most 63 characters"
    if "__" in alias:
        return "must not contain '__'"
    if not re.fullmatch(r"[a-z0-9_-]+", alias):
        return "may contain only lower-case letters, digits, '_' and '-'"
    if not _ALIAS_RE.match(alias):
        return "must start and end with a lower-case letter or digit"
    return None


SERVER_NAME_RULE = (
    "must be 1-63 letters, digits, '_' or '-', start with a letter or digit, and not contain '__'"
)


def server_name_ok(name: str) -> bool:
    """[CFG-MCP-05] whether `name` is a valid MCP server name."""
    return bool(_NAME_RE.match(name)) and "__" not in name


def server_name_message(index: int, name: str) -> str:
    """[CFG-MCP-05] the validation text for a bad server name."""
    return f"mcp.servers[{index}].name '{name}' {SERVER_NAME_RULE}"


def _str_items(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list | tuple) else []


def _paths_check(value: object) -> str | None:
    # [CFG-AUTO-06] relative roots would depend on the process directory.
    for entry in _str_items(value):
        if not (entry.startswith("~") or PurePath(entry).is_absolute()):
            return f"path must be absolute or start with ~: {entry}"
    return None


def _entries_check(value: object) -> str | None:
    # [CFG-AUTO-07] a stray space would never match a tool or command name.
    for entry in _str_items(value):
        if not entry or entry != entry.strip():
            return f'invalid entry "{entry}"'
    return None


def _skills_check(value: object) -> str | None:
    # [CFG-AGENT-06] names that can never load are typos.
    for entry in _str_items(value):
        if not server_name_ok(entry):
            return f"invalid skill name '{entry}'"
    return None


def _digests_check(value: object) -> str | None:
    # [CFG-GW-01] only SHA-256 digests; the entry itself is not echoed (CFG-GW-02).
    for i, entry in enumerate(_str_items(value)):
        if not _DIGEST_RE.match(entry):
            return f"entry {i} is not a 64-character lower-case hexadecimal SHA-256 digest"
    return None


def _prefix_check(value: object) -> str | None:
    # [CFG-GW-01] Design: the spec gives no text; this one names the rule.
    if isinstance(value, str) and not (value.startswith("/") and not value.endswith("/")):
        return f'invalid value "{value}" (must start with "/" and must not end with "/")'
    return None


def _url_check(value: object) -> str | None:
    # [CFG-PROV-02] Design: the spec gives no text for a non-HTTP base_url.
    if isinstance(value, str) and not re.match(r"^https?://[^/\s]+", value):
        return f'invalid value "{value}" (expected an http or https URL)'
    return None


_STRS = Field(Kind.STR_LIST, ())
_NAMES = Field(Kind.STR_LIST, (), check=_entries_check)

# [CFG-AUTO-01] [autonomy] and every [risk_profiles.<name>].
AUTONOMY = Table(
    {
        "level": Field(Kind.STR, "supervised", enum=LEVELS, also=("readonly",)),
        "workspace_only": Field(Kind.BOOL, True),
        "allowed_commands": Field(Kind.STR_LIST, DEFAULT_ALLOWED_COMMANDS, check=_entries_check),
        "forbidden_paths": Field(Kind.STR_LIST, DEFAULT_FORBIDDEN_PATHS, check=_paths_check),
        "allowed_roots": Field(Kind.STR_LIST, (), check=_paths_check),
        "require_approval_for_medium_risk": Field(Kind.BOOL, True),
        "block_high_risk_commands": Field(Kind.BOOL, True),
        "shell_env_passthrough": _STRS,
        "auto_approve": _NAMES,
        "always_ask": _NAMES,
        "allowed_tools": _NAMES,
        "excluded_tools": _NAMES,
        "deny_all_tools": Field(Kind.BOOL, False),
    }
)

# [CFG-RUNTIME-02] one tool filter group.
FILTER_GROUP = Table(
    {
        "mode": Field(Kind.STR, "dynamic", enum=("always", "dynamic")),
        "tools": _STRS,
        "keywords": _STRS,
    }
)

# [CFG-RUNTIME-01]
RUNTIME = Table(
    {
        "max_tool_iterations": Field(Kind.INT, 10, low=0, high=1000),
        "max_history_messages": Field(Kind.INT, 50, low=1, high=10000),
        "max_tool_result_chars": Field(Kind.INT, 50000, low=100, high=10000000),
        "parallel_tools": Field(Kind.BOOL, False),
        "temperature": Field(Kind.FLOAT, None, low=0.0, high=2.0),
        "shell_timeout_secs": Field(Kind.INT, 60, low=1, high=3600),
        "max_delegation_depth": Field(Kind.INT, 1, low=0, high=8),
        "tool_filter_groups": TableList(FILTER_GROUP),
        "auto_memory": Field(Kind.BOOL, True),
    }
)

# [CFG-PROV-02] [CFG-PROV-03]
PROVIDER = Table(
    {
        "kind": Field(Kind.STR, None, enum=PROVIDER_KINDS, required=True),
        "model": Field(Kind.STR, ""),
        "base_url": Field(Kind.STR, None, check=_url_check),
        "api_key": Field(Kind.STR, None, secret=True),
        "extra_headers": Field(Kind.STR_MAP, {}, secret=True),
        "temperature": Field(Kind.FLOAT, 0.7, low=0.0, high=2.0),
        "script": Field(Kind.STR, None),
        "record": Field(Kind.STR, None),
        "timeout_secs": Field(Kind.INT, 120, low=1, high=600),
        "max_tokens": Field(Kind.INT, 4096, low=1, high=1000000),
    }
)

# [CFG-AGENT-01]
AGENT = Table(
    {
        "enabled": Field(Kind.BOOL, True),
        "model_provider": Field(Kind.STR, ""),
        "risk_profile": Field(Kind.STR, ""),
        "runtime_profile": Field(Kind.STR, ""),
        "system_prompt": Field(Kind.STR, ""),
        "workspace": Table({"path": Field(Kind.STR, None)}),
        "mcp_bundles": _STRS,
        "acp_enable_mcp": Field(Kind.BOOL, False),
        "skills": Field(Kind.STR_LIST, None, check=_skills_check),
        "delegates": _STRS,
    }
)

# [CFG-MCP-03] [CFG-MCP-04]; tool_timeout_secs bounds are semantic (CFG-VALID-07/08).
SERVER = Table(
    {
        "name": Field(Kind.STR, None, required=True),
        "transport": Field(Kind.STR, "stdio", enum=("stdio", "http", "sse")),
        "command": Field(Kind.STR, ""),
        "args": _STRS,
        "env": Field(Kind.STR_MAP, {}, secret=True),
        "url": Field(Kind.STR, None),
        "headers": Field(Kind.STR_MAP, {}, secret=True),
        "tool_timeout_secs": Field(Kind.INT, None),
        # Design (issue 16): the initialize/discover wait of this server; unset = init_timeout_s.
        "startup_timeout_secs": Field(Kind.INT, None),
        "pinned_resources": _STRS,
        "tls_ca_cert_path": Field(Kind.STR, None),
        "max_response_bytes": Field(Kind.INT, None, low=0),
        # [MCP-MOD-01] the protocol era: auto-detected (unset), or forced legacy/modern
        "era": Field(Kind.STR, None, enum=("auto", "legacy", "modern")),
    }
)

# [CFG-PERIPH-01]
BOARD = Table(
    {
        "board": Field(Kind.STR, None, required=True),
        "transport": Field(Kind.STR, "serial"),
        "path": Field(Kind.STR, None),
        "baud": Field(Kind.INT, 115200, low=1, high=4000000),
    }
)

ROOT = Table(
    {
        "schema_version": Field(Kind.INT, 1),
        "autonomy": AUTONOMY,
        "risk_profiles": MapOf(AUTONOMY),
        "runtime_profiles": MapOf(RUNTIME),
        "providers": MapOf(PROVIDER),
        "agents": MapOf(AGENT),
        # [CFG-MCP-01] `mcpServers` is folded into `servers` before the walk.
        "mcp": Table(
            {
                "enabled": Field(Kind.BOOL, True),
                "deferred_loading": Field(Kind.BOOL, False),
                "servers": TableList(SERVER),
            }
        ),
        "mcp_bundles": MapOf(Table({"servers": _STRS, "exclude": _STRS})),
        "acp": Table(
            {
                "default_agent": Field(Kind.STR, None),
                "max_sessions": Field(Kind.INT, 10, low=1, high=1000),
                "session_timeout_secs": Field(Kind.INT, 3600, low=1, high=86400),
            }
        ),
        "gateway": Table(
            {
                "host": Field(Kind.STR, "127.0.0.1"),
                "port": Field(Kind.INT, 42617, low=1, high=65535),
                "require_pairing": Field(Kind.BOOL, True),
                "path_prefix": Field(Kind.STR, None, check=_prefix_check),
                "paired_tokens": Field(Kind.STR_LIST, (), check=_digests_check),
            }
        ),
        "peripherals": Table(
            {
                "enabled": Field(Kind.BOOL, False),
                "boards": TableList(BOARD),
                "allowed_path_prefixes": Field(Kind.STR_LIST, DEFAULT_PERIPHERAL_PREFIXES),
            }
        ),
        "scheduler": Table(
            {
                "enabled": Field(Kind.BOOL, True),
                "tick_secs": Field(Kind.INT, 30, low=1, high=3600),
            }
        ),
        "secrets": Table({"encrypt": Field(Kind.BOOL, True)}),
        "security": Table(
            {
                "sandbox": Table(
                    {
                        "backend": Field(Kind.STR, "auto", enum=SANDBOX_BACKENDS),
                        "required": Field(Kind.BOOL, False),
                        "network": Field(Kind.BOOL, False),
                    }
                )
            }
        ),
    }
)


def type_name(value: object) -> str:
    """The TOML/JSON type name of a parsed value, for `found <type>` (CFG-SCHEMA-02)."""
    names: tuple[tuple[type, str], ...] = (
        (bool, "boolean"),
        (int, "integer"),
        (float, "float"),
        (str, "string"),
        (list, "list"),
        (tuple, "list"),
        (dict, "table"),
    )
    for cls, name in names:
        if isinstance(value, cls):
            return name
    return "null" if value is None else "datetime"


def _range_text(low: int | float | None, high: int | float | None) -> str:
    return f"{'' if low is None else low}..{'' if high is None else high}"


def check_value(spec: Field, value: object) -> tuple[str | None, object]:
    """Check one leaf value; return (message, normalised value).

    Integers are widened to floats for float keys. The message is None when the value is
    acceptable; list and map element problems name their element in the message.
    """
    kind = spec.kind
    found = type_name(value)
    if kind is Kind.FLOAT and found == "integer":
        value = float(value)  # type: ignore[arg-type]
        found = "float"
    expected = {
        Kind.STR: "string",
        Kind.BOOL: "boolean",
        Kind.INT: "integer",
        Kind.FLOAT: "float",
        Kind.STR_LIST: "list",
        Kind.STR_MAP: "table",
    }[kind]
    if found != expected:
        return f"expected {kind.value}, found {found}", value
    if kind is Kind.STR_LIST:
        assert isinstance(value, list | tuple)
        for i, item in enumerate(value):
            if not isinstance(item, str):
                return f"expected {kind.value}, found {type_name(item)} at index {i}", value
        value = tuple(value)
    if kind is Kind.STR_MAP:
        assert isinstance(value, dict)
        for key, item in value.items():
            if not isinstance(item, str):
                return f"expected {kind.value}, found {type_name(item)} for '{key}'", value
    message = _constraint(spec, value)
    return message, value


def _constraint(spec: Field, value: object) -> str | None:
    # [CFG-SCHEMA-05] exact, case-sensitive match.
    if spec.enum is not None and isinstance(value, str) and value not in (*spec.enum, *spec.also):
        return f'invalid value "{value}" (expected one of {", ".join(spec.enum)})'
    if isinstance(value, int | float) and not isinstance(value, bool):
        low_ok = spec.low is None or value >= spec.low
        high_ok = spec.high is None or value <= spec.high
        if not (low_ok and high_ok):
            # [CFG-SCHEMA-06]
            return f"{value} is out of range ({_range_text(spec.low, spec.high)})"
    return spec.check(value) if spec.check is not None else None


def lookup(node: Node, parts: list[str]) -> Node | None:
    """Follow `parts` (alias segments included for map sections) from `node`.

    A `STR_MAP` field followed by one more segment resolves to its entry (a string leaf with the
    map's secrecy); anything else that does not exist is None.
    """
    for i, part in enumerate(parts):
        if isinstance(node, Table):
            child = node.fields.get(part)
            if child is None:
                return None
            node = child
        elif isinstance(node, MapOf):
            node = node.entry
        elif isinstance(node, Field) and node.kind is Kind.STR_MAP and i == len(parts) - 1:
            return Field(Kind.STR, None, secret=node.secret)
        else:
            return None
    return node


# One schema problem: (key path, message).
Problem: TypeAlias = tuple[str, str]

# [CFG-MCP-01] keys accepted under another spelling, per table path.
_KEY_ALIASES: dict[str, dict[str, str]] = {"mcp": {"mcpServers": "servers"}}


def walk_table(
    node: Table, data: Mapping[str, object], path: str, problems: list[Problem]
) -> dict[str, object]:
    """Check `data` against `node`; return the accepted keys with normalised values.

    Every problem is appended to `problems` (CFG-LOAD-07 collects them all); offending keys are
    left out of the result.
    """
    out: dict[str, object] = {}
    aliases = _KEY_ALIASES.get(path, {})
    for raw_key, value in data.items():
        key = aliases.get(raw_key, raw_key)
        where = f"{path}.{raw_key}" if path else raw_key
        child = node.fields.get(key)
        if child is None:
            # [CFG-SCHEMA-01] a misspelt restriction must not pass silently.
            problems.append((where, "unknown key"))
            continue
        if key in out:
            # [CFG-MCP-02] the alias and the key name the same list.
            problems.append(
                (where, "mcp.servers and mcp.mcpServers are the same setting; keep one")
            )
            continue
        accepted = walk_node(child, value, where, problems)
        if accepted is not _REJECTED:
            out[key] = accepted
    for key, child in node.fields.items():
        missing = isinstance(child, Field) and child.required and key not in out
        if missing and not any(p[0].startswith(f"{path}.{key}") for p in problems):
            # [CFG-PROV-01] e.g. `kind is required`, reported on the table.
            problems.append((path, f"{key} is required"))
    return out


_REJECTED = object()


def walk_node(node: Node, value: object, where: str, problems: list[Problem]) -> object:
    """Check one value against its schema node; return it normalised, or `_REJECTED`."""
    if isinstance(node, Field):
        message, accepted = check_value(node, value)
        if message is None and where == "schema_version" and accepted != 1:
            # [CFG-SCHEMA-04]
            message = f"unsupported schema_version {accepted} (expected 1)"
        if message is not None:
            problems.append((where, message))
            return _REJECTED
        return accepted
    if isinstance(node, TableList):
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            problems.append((where, f"expected list of tables, found {type_name(value)}"))
            return _REJECTED
        return [walk_table(node.entry, v, f"{where}[{i}]", problems) for i, v in enumerate(value)]
    if not isinstance(value, dict):
        problems.append((where, f"expected table, found {type_name(value)}"))
        return _REJECTED
    if isinstance(node, Table):
        return walk_table(node, value, where, problems)
    entries: dict[str, object] = {}
    for alias, entry in value.items():
        entry_path = f"{where}.{alias}"
        reason = alias_problem(alias)
        if reason is not None:
            # [CFG-SCHEMA-03]
            problems.append((entry_path, f"invalid alias '{alias}': {reason}"))
        elif not isinstance(entry, dict):
            problems.append((entry_path, f"expected table, found {type_name(entry)}"))
        else:
            entries[alias] = walk_table(node.entry, entry, entry_path, problems)
    return entries
