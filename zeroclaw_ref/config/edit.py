"""Key paths, and what set, unset, create and rename do to the parsed `config.toml` document.

Implements the addressing and edit rules of config.md §12 (CFG-CLI-02, CFG-CLI-12 to 16,
CFG-CLI-19), the server list of CFG-VALUE-04, and CFG-UI-05 / CFG-UI-07, on plain data only.
`config/write.py` runs each edit inside the one write transaction (§12.5); nothing here touches
the disk.

Design: a key path is parsed once into steps (`KEY` into a table, `ALIAS` into a map section,
`SERVER` into `mcp.servers` by name, `ENTRY` into a secret map) so that every surface refuses
the same paths with the same texts. An edit returns an `Outcome` whose `changed` flag tells the
transaction whether there is anything to write.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from zeroclaw_ref.config.env import ValueSyntaxError, parse_text_value
from zeroclaw_ref.config.model import ConfigError
from zeroclaw_ref.config.schema import (
    ROOT,
    SERVER,
    Field,
    Kind,
    MapOf,
    Node,
    Problem,
    Table,
    TableList,
    server_name_message,
    server_name_ok,
    walk_table,
)
from zeroclaw_ref.core import jsontypes

Doc = dict[str, object]

# [CFG-SECRETS-14] [CFG-SECRETS-15] what masked JSON shows, and what a surface may send back.
MASKED = "***MASKED***"
SERVERS_PATH = "mcp.servers"


class EditError(ConfigError):
    """A refused edit; `lines` are the messages to print after `ERROR: `."""


class StepKind(Enum):
    """How one key-path segment is looked up in the document."""

    KEY = "key"
    ALIAS = "alias"
    SERVER = "server"
    ENTRY = "entry"


@dataclass(frozen=True, slots=True)
class Step:
    """One segment of a key path and how to follow it."""

    kind: StepKind
    name: str


@dataclass(frozen=True, slots=True)
class KeyPath:
    """A parsed key path: its text, the schema node it names, and the steps to reach it."""

    path: str
    node: Node
    steps: tuple[Step, ...]

    @property
    def secret(self) -> bool:
        """Whether the path names one secret value (CFG-SECRETS-02)."""
        return isinstance(self.node, Field) and self.node.secret and self.node.kind is Kind.STR


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an edit did: the confirmation line and whether the document changed."""

    message: str
    changed: bool


def parse_path(key_path: str) -> KeyPath:
    """[CFG-CLI-02] parse `key_path`; map sections take an alias, servers their name.

    Raises:
        EditError `unknown config path: <key path>` when the path names no setting.
    """
    unknown = EditError([f"unknown config path: {key_path}"])
    parts = key_path.split(".")
    if not key_path or any(not part for part in parts):
        raise unknown
    node: Node = ROOT
    steps: list[Step] = []
    for index, part in enumerate(parts):
        if isinstance(node, Table):
            child = node.fields.get(part)
            if child is None:
                raise unknown
            steps.append(Step(StepKind.KEY, part))
            node = child
        elif isinstance(node, MapOf):
            steps.append(Step(StepKind.ALIAS, part))
            node = node.entry
        elif isinstance(node, TableList) and ".".join(parts[:index]) == SERVERS_PATH:
            steps.append(Step(StepKind.SERVER, part))
            node = SERVER
        elif isinstance(node, Field) and node.kind is Kind.STR_MAP:
            # [CFG-CLI-02] the entry key is the rest of the path (header names may hold dots).
            steps.append(Step(StepKind.ENTRY, ".".join(parts[index:])))
            return KeyPath(key_path, Field(Kind.STR, None, secret=node.secret), tuple(steps))
        else:
            raise unknown
    return KeyPath(key_path, node, tuple(steps))


def check_settable(key_path: str) -> KeyPath:
    """Parse `key_path` and refuse paths that `config set` cannot take a value for.

    Raises:
        EditError with the CFG-CLI-02, CFG-CLI-13, CFG-CLI-15, CFG-GW-02 or CFG-VALUE-03 text.
    """
    target = parse_path(key_path)
    node = target.node
    if key_path == "gateway.paired_tokens":
        raise EditError(["gateway.paired_tokens is managed by the gateway"])  # [CFG-GW-02]
    _refuse_name(target)
    if isinstance(node, Field) and node.kind is Kind.STR_MAP:
        # [CFG-CLI-13]
        raise EditError([f"{key_path} is a map; set one entry with {key_path}.<KEY>"])
    if isinstance(node, TableList) and key_path != SERVERS_PATH:
        # [CFG-VALUE-03] [CFG-CLI-16]
        raise EditError([f"{key_path} is a list of tables; edit config.toml directly"])
    if isinstance(node, Table | MapOf):
        raise EditError([f"{key_path} is a table; set one of its keys"])  # [CFG-VALUE-03]
    return target


def _refuse_name(target: KeyPath) -> None:
    steps = target.steps
    if len(steps) == 4 and steps[2].kind is StepKind.SERVER and steps[3].name == "name":
        # [CFG-CLI-15] the name is the server's key; renaming is CFG-UI-07.
        name = steps[2].name
        raise EditError(
            [
                f"mcp.servers.{name}.name is the server's key and cannot be set; rename the "
                f"server with 'zeroclaw_ref config rename mcp.servers.{name} <new name>'"
            ]
        )


def convert_text(target: KeyPath, text: str) -> object:
    """[CFG-VALUE-01] to [CFG-VALUE-04] the value `text` stands for at `target`.

    Secrets are taken verbatim; lists come back as lists, ready for the document.

    Raises:
        EditError `invalid value for <key path>: <reason>` (CFG-CLI-08).
    """
    if target.path == SERVERS_PATH:
        return _parse_servers(text)
    assert isinstance(target.node, Field)
    if target.secret:
        return text
    try:
        value = parse_text_value(target.node, text)
    except ValueSyntaxError as exc:
        raise EditError([f"invalid value for {target.path}: {exc}"]) from None
    return list(value) if isinstance(value, tuple) else value


def _parse_servers(text: str) -> list[object]:
    # [CFG-VALUE-04] a JSON array of server tables, each checked like a [[mcp.servers]] entry.
    try:
        parsed = jsontypes.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, list) or not all(isinstance(s, dict) for s in parsed):
        raise EditError(["invalid value for mcp.servers: expected a JSON array of server tables"])
    problems: list[Problem] = []
    lines: list[str] = []
    for index, server in enumerate(parsed):
        assert isinstance(server, dict)
        walk_table(SERVER, server, f"mcp.servers[{index}]", problems)
        name = server.get("name")
        if isinstance(name, str) and not server_name_ok(name):
            lines.append(server_name_message(index, name))  # [CFG-MCP-05]
    lines = [f"invalid value for {path}: {message}" for path, message in problems] + lines
    if lines:
        raise EditError(lines)
    return list(parsed)


def _table(holder: Doc, key: str, create: bool) -> Doc | None:
    child = holder.get(key)
    if isinstance(child, dict):
        return child
    if not create:
        return None
    fresh: Doc = {}
    holder[key] = fresh
    return fresh


def servers_key(mcp: Doc) -> str:
    """[CFG-MCP-01] the key the document keeps its server list under."""
    return "mcpServers" if "mcpServers" in mcp and "servers" not in mcp else "servers"


def server_list(doc: Doc, create: bool) -> list[object] | None:
    """The document's `[[mcp.servers]]` list (under either spelling), or None."""
    mcp = _table(doc, "mcp", create)
    if mcp is None:
        return None
    key = servers_key(mcp)
    servers = mcp.get(key)
    if isinstance(servers, list):
        return servers
    if not create:
        return None
    fresh: list[object] = []
    mcp[key] = fresh
    return fresh


def find_server(servers: list[object], name: str) -> Doc | None:
    """[CFG-CLI-14] the server whose `name` equals `name` exactly."""
    for server in servers:
        if isinstance(server, dict) and server.get("name") == name:
            return server
    return None


def _container(doc: Doc, steps: tuple[Step, ...], create: bool) -> Doc | None:
    """Follow every step but the last; create missing tables and servers when asked."""
    holder: Doc = doc
    for index, step in enumerate(steps[:-1]):
        if step.kind is StepKind.SERVER:
            servers = server_list(doc, create)
            if servers is None:
                return None
            server = find_server(servers, step.name)
            if server is None and create:
                if not server_name_ok(step.name):
                    # [CFG-CLI-14] a new server's name is checked before it exists.
                    raise EditError([server_name_message(len(servers), step.name)])
                server = {"name": step.name}
                servers.append(server)
            if server is None:
                return None
            holder = server
        elif step.kind is StepKind.KEY and steps[index + 1].kind is StepKind.SERVER:
            continue  # the server list is found from the root by `server_list`
        else:
            # [CFG-CLI-16] a missing map entry is created; its alias is checked by the schema.
            child = _table(holder, step.name, create)
            if child is None:
                return None
            holder = child
    return holder


def set_in(doc: Doc, target: KeyPath, value: object) -> Outcome:
    """Store `value` (already converted) at `target` in `doc`.

    Raises:
        EditError when a server to be created has an invalid name (CFG-CLI-14).
    """
    path = target.path
    if target.secret and value == MASKED:
        # [CFG-SECRETS-15] a masked value coming back from a surface keeps the stored one.
        return Outcome(f"Updated {path}", changed=False)
    if target.secret and value == "":
        # [CFG-CLI-12] an empty secret removes the map entry or the api_key.
        removed = unset_in(doc, target)
        return Outcome(f"Removed {path}", removed.changed)
    if path == SERVERS_PATH:
        assert isinstance(value, list)
        return _replace_servers(doc, value)
    holder = _container(doc, target.steps, create=True)
    assert holder is not None
    holder[target.steps[-1].name] = value
    return Outcome(f"Updated {path}", changed=True)


def _replace_servers(doc: Doc, servers: list[object]) -> Outcome:
    # [CFG-VALUE-04] the whole list is replaced; a masked secret keeps the stored value of the
    # server of the same name (CFG-SECRETS-15) and is dropped when there is none.
    old = server_list(doc, create=False) or []
    for server in servers:
        assert isinstance(server, dict)
        stored = find_server(old, str(server.get("name")))
        for map_key in ("env", "headers"):
            entries = server.get(map_key)
            if not isinstance(entries, dict):
                continue
            previous = stored.get(map_key) if stored is not None else None
            for key in [k for k, v in entries.items() if v == MASKED]:
                if isinstance(previous, dict) and key in previous:
                    entries[key] = previous[key]
                else:
                    del entries[key]
    mcp = _table(doc, "mcp", create=True)
    assert mcp is not None
    mcp[servers_key(mcp)] = servers
    return Outcome(f"Updated {SERVERS_PATH}", changed=True)


def unset_in(doc: Doc, target: KeyPath) -> Outcome:
    """[CFG-CLI-19] remove what `target` names from `doc`, if it is there."""
    _refuse_name(target)
    last = target.steps[-1]
    nothing = Outcome(f"Nothing to unset at {target.path}", changed=False)
    if target.path == SERVERS_PATH:
        mcp = _table(doc, "mcp", create=False)
        if mcp is None or servers_key(mcp) not in mcp:
            return nothing
        del mcp[servers_key(mcp)]
        return Outcome(f"Removed {target.path}", changed=True)
    if last.kind is StepKind.SERVER:
        servers = server_list(doc, create=False) or []
        server = find_server(servers, last.name)
        if server is None:
            return nothing
        servers.remove(server)
        return Outcome(f"Removed {target.path}", changed=True)
    holder = _container(doc, target.steps, create=False)
    if holder is None or last.name not in holder:
        return nothing
    del holder[last.name]
    return Outcome(f"Removed {target.path}", changed=True)


def _name_problem(servers: list[object], index: int | None, name: str) -> str | None:
    """CFG-MCP-05 and the case-insensitive duplicate rule, for a name about to be used."""
    if not server_name_ok(name):
        return server_name_message(len(servers) if index is None else index, name)
    for position, server in enumerate(servers):
        other = server.get("name") if isinstance(server, dict) else None
        if position != index and isinstance(other, str) and other.casefold() == name.casefold():
            return f"mcp.servers contains duplicate name: {name}"  # [CFG-VALID-06]
    return None


def create_server_in(doc: Doc, name: str) -> Outcome:
    """[CFG-UI-05] append a server with only its name; every other key takes its default.

    Raises:
        EditError for a bad or already used (ignoring case) name.
    """
    servers = server_list(doc, create=True)
    assert servers is not None
    problem = _name_problem(servers, None, name)
    if problem is not None:
        raise EditError([problem])
    servers.append({"name": name})
    return Outcome(f"Created mcp.servers.{name}", changed=True)


def rename_server_in(doc: Doc, old: str, new: str) -> Outcome:
    """[CFG-UI-07] rename a server in place; bundles naming `old` are left as they are.

    Raises:
        EditError for an unknown `old`, or a `new` that is invalid or used by another server.
    """
    servers = server_list(doc, create=False) or []
    server = find_server(servers, old)
    if server is None:
        raise EditError([f"unknown config path: mcp.servers.{old}"])
    problem = _name_problem(servers, servers.index(server), new)
    if problem is not None:
        raise EditError([problem])
    # Assigning to the existing key keeps its position in the table and the table's in the list.
    server["name"] = new
    return Outcome(f"Renamed mcp.servers.{old} to mcp.servers.{new}", changed=old != new)
