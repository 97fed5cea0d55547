"""What `config get` / `config list` (and later the gateway's `GET`) show (config.md §12.2).

Implements CFG-CLI-03 to CFG-CLI-07 and the masking of CFG-SECRETS-14 and CFG-GW-02: the file
(or the embedded default) after the schema check, defaults, normalisation and environment
overrides, without the risk-profile overlay or the `auto_approve` merge. Secrets are never
decrypted here: whether one is set is all that is ever shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from zeroclaw_ref.config.build import build_snapshot, sub, table_list
from zeroclaw_ref.config.edit import SERVERS_PATH, EditError, parse_path
from zeroclaw_ref.config.env import apply_overrides
from zeroclaw_ref.config.load import check_document, read_config_file
from zeroclaw_ref.config.model import MASK, ConfigSnapshot
from zeroclaw_ref.config.schema import ROOT, Field, Kind, MapOf, Table, TableList
from zeroclaw_ref.core import jsontypes
from zeroclaw_ref.core.jsontypes import JSON, JSONObject

MASKED_JSON = "***MASKED***"
UNSET = "<unset>"
INHERIT = "<inherit>"
_INHERIT = object()  # a risk-profile key left to [autonomy] (CFG-CLI-03)
_TOKENS = "gateway.paired_tokens"


@dataclass(frozen=True, slots=True)
class Leaf:
    """One shown value: its key path, raw value, secrecy and where it came from."""

    path: str
    value: object
    secret: bool
    source: str  # "file", "default" or "env" (CFG-CLI-06)


def read_view(config_dir: Path, environ: Mapping[str, str]) -> list[Leaf]:
    """Every leaf of the configuration, sorted by key path (CFG-CLI-07).

    Raises:
        ConfigError when the file does not load up to the environment overrides.
    """
    config = read_config_file(config_dir)
    _, tree = check_document(config.path, config.text)
    in_file = {leaf.path for leaf in _walk(ROOT, tree, "", False) if leaf.source == "file"}
    overrides = apply_overrides(tree, environ).overrides
    _normalise(tree)
    dirs = (config_dir, config_dir, config.path, config.exists)
    snapshot, _, _ = build_snapshot(tree, dirs, {})
    leaves: list[Leaf] = []
    for leaf in _walk(ROOT, tree, "", False):
        value = _provider_default(snapshot, leaf) if leaf.source == "default" else leaf.value
        overridden = any(leaf.path == o or leaf.path.startswith(o + ".") for o in overrides)
        source = "env" if overridden else "file" if leaf.path in in_file else "default"
        leaves.append(Leaf(leaf.path, value, leaf.secret, source))
    return sorted(leaves, key=lambda leaf: leaf.path)


def _normalise(tree: dict[str, object]) -> None:
    """[CFG-AUTO-04] [CFG-AUTO-05] the spellings the runtime uses, in [autonomy] and profiles."""
    tables = [sub(tree, "autonomy"), *sub(tree, "risk_profiles").values()]
    for table in tables:
        if not isinstance(table, dict):
            continue
        if table.get("level") == "readonly":
            table["level"] = "read_only"
        if list(table.get("allowed_tools", ()) or ()) == ["__none__"]:
            table["allowed_tools"] = []
            table["deny_all_tools"] = True


def _provider_default(snapshot: ConfigSnapshot, leaf: Leaf) -> object:
    # [CFG-PROV-02] `model` and `base_url` default per kind; the build knows those defaults.
    parts = leaf.path.split(".")
    if len(parts) == 3 and parts[0] == "providers" and parts[2] in ("model", "base_url"):
        provider = snapshot.providers.get(parts[1])
        if provider is not None:
            return provider.model if parts[2] == "model" else provider.base_url
    return leaf.value


def _walk(node: Table, table: dict[str, object], prefix: str, inherit: bool) -> list[Leaf]:
    """The leaves under `table`; `source` is "file" for present keys, else "default"."""
    out: list[Leaf] = []
    for key, child in node.fields.items():
        path = f"{prefix}.{key}" if prefix else key
        present = key in table
        if isinstance(child, Field) and child.kind is Kind.STR_MAP:
            # [CFG-CLI-07] each secret-map entry on its own line.
            out += [
                Leaf(f"{path}.{k}", v, child.secret, "file") for k, v in sub(table, key).items()
            ]
        elif isinstance(child, Field):
            value = table[key] if present else _INHERIT if inherit else child.default
            out.append(Leaf(path, value, child.secret, "file" if present else "default"))
        elif isinstance(child, Table):
            out += _walk(child, sub(table, key), path, inherit)
        elif isinstance(child, MapOf):
            for alias, entry in sub(table, key).items():
                if isinstance(entry, dict):
                    out += _walk(child.entry, entry, f"{path}.{alias}", key == "risk_profiles")
        elif path == SERVERS_PATH:
            # [CFG-CLI-07] servers expanded by name.
            for server in table_list(table, key):
                out += _walk(child.entry, server, f"{path}.{server.get('name')}", False)
        else:
            out.append(Leaf(path, table.get(key, []), False, "file" if present else "default"))
    return out


def get_leaf(leaves: list[Leaf], key_path: str) -> Leaf:
    """[CFG-CLI-05] the one value `key_path` names, defaults included for absent entries.

    Raises:
        EditError for an unknown path, or a table or map (CFG-CLI-02, CFG-CLI-05).
    """
    target = parse_path(key_path)
    node = target.node
    is_map = isinstance(node, Field) and node.kind is Kind.STR_MAP
    if is_map or isinstance(node, Table | MapOf) or key_path == SERVERS_PATH:
        raise EditError(
            [f"{key_path} is a table; use 'zeroclaw_ref config list --filter {key_path}'"]
        )
    for leaf in leaves:
        if leaf.path == key_path:
            return leaf
    # An entry the file does not have: what it would be by default.
    inherit = key_path.startswith("risk_profiles.")
    assert isinstance(node, Field | TableList)
    default = [] if isinstance(node, TableList) else _INHERIT if inherit else node.default
    secret = isinstance(node, Field) and node.secret
    return Leaf(key_path, default, secret, "default")


def _is_set(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def render_text(leaf: Leaf) -> str:
    """[CFG-CLI-04] one copy-pasteable line; secrets masked (CFG-SECRETS-14, CFG-GW-02)."""
    value = leaf.value
    if leaf.secret:
        return MASK if _is_set(value) else UNSET
    if leaf.path == _TOKENS and isinstance(value, list | tuple):
        return jsontypes.dumps([MASK for _ in value])
    if value is _INHERIT:
        return INHERIT
    if value is None:
        return UNSET
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return jsontypes.dumps(list(value))
    return str(value)


def _json_value(leaf: Leaf) -> JSON:
    value = leaf.value
    if leaf.secret:
        return MASKED_JSON if _is_set(value) else None
    if leaf.path == _TOKENS and isinstance(value, list | tuple):
        return [MASK for _ in value]
    if value is _INHERIT or value is None:
        return None
    if isinstance(value, tuple):
        value = list(value)
    return jsontypes.loads(jsontypes.dumps(value))


def render_json(leaf: Leaf) -> JSONObject:
    """[CFG-CLI-06] `{"path", "value", "secret", "source"}` with secrets masked."""
    return {
        "path": leaf.path,
        "value": _json_value(leaf),
        "secret": leaf.secret,
        "source": leaf.source,
    }


def select(leaves: list[Leaf], prefix: str | None, secrets_only: bool) -> list[Leaf]:
    """[CFG-CLI-07] the leaves `--filter` and `--secrets` keep."""
    return [
        leaf
        for leaf in leaves
        if (prefix is None or leaf.path == prefix or leaf.path.startswith(prefix + "."))
        and (leaf.secret or not secrets_only)
    ]
