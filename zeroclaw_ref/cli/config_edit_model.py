"""The state and key handling of `config edit`, without curses (config.md §13.4).

`cli/config_edit.py` turns key codes into the key names below, draws `EditorModel.screen()`,
and gives the model a `Backend` that reads and writes `config.toml` through
`config/write.py`. Everything here is plain data, so the behaviour of every key is testable
without a terminal.

Design: the model never holds a stored secret. The backend hands over entry names only, the
value read for an entry lives in the prompt buffer until Enter or Escape, and `screen()` draws
a hidden prompt as its label alone (CFG-UI-13, CFG-SECRETS-14).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from zeroclaw_ref.config.model import ConfigError

# The key names the drawing layer sends; any other one-character string is typed text.
UP, DOWN, ENTER, ESCAPE, BACKSPACE = "UP", "DOWN", "ENTER", "ESCAPE", "BACKSPACE"
NAMED_KEYS = frozenset({UP, DOWN, ENTER, ESCAPE, BACKSPACE})

# [CFG-UI-12] the field rows of a server, in this order, then the secret maps.
FIELDS = (
    "transport",
    "command",
    "url",
    "args",
    "tool_timeout_secs",
    "pinned_resources",
    "tls_ca_cert_path",
    "max_response_bytes",
)
MAPS = ("env", "headers")
ADD_ROW = "+ Add"
ADD_ENTRY = "[+ Add entry]"
UNSET_TEXT = "<unset>"
HIDDEN = "****"

HELP_LIST = "Up/Down or j/k: move   Enter: open server / add   d: delete server   q or Esc: quit"
HELP_SERVER = "Up/Down or j/k: move   Enter: edit   d: unset field / delete entry   q or Esc: back"
HELP_PROMPT = "Enter: save   Esc: cancel"


@dataclass(frozen=True, slots=True)
class ServerView:
    """One server as the editor shows it: rendered field values, and entry names only."""

    name: str
    fields: dict[str, str]  # field -> rendered value (CFG-CLI-04), `<unset>` when unset
    maps: dict[str, tuple[str, ...]]  # "env" / "headers" -> sorted entry names


@dataclass(frozen=True, slots=True)
class Result:
    """A successful write: its result line and the follow-up warnings (CFG-CLI-25)."""

    message: str
    warnings: tuple[str, ...] = ()


class Backend(Protocol):
    """Reads the servers and performs writes; a refusal raises ConfigError with its lines."""

    def servers(self) -> list[ServerView]:
        """The servers of `mcp.servers` in file order."""
        ...

    def create(self, name: str) -> Result:
        """[CFG-UI-05] append a server named `name`."""
        ...

    def set(self, key_path: str, text: str) -> Result:
        """`config set --no-interactive <key_path> <text>`."""
        ...

    def unset(self, key_path: str) -> Result:
        """`config unset <key_path>`."""
        ...


class Screen(Enum):
    """The two screens: the server list, and one server's fields."""

    LIST = "list"
    SERVER = "server"


class RowKind(Enum):
    """What a row stands for, which decides what Enter and `d` do on it."""

    SERVER = "server"
    ADD = "add"
    FIELD = "field"
    MAP = "map"
    ENTRY = "entry"


@dataclass(frozen=True, slots=True)
class Row:
    """One selectable line: its kind, the name it acts on, and the text drawn for it."""

    kind: RowKind
    key: str  # server name, field name, map name, or "<map>.<KEY>"
    text: str


class Purpose(Enum):
    """What the text read by a prompt is for."""

    ADD_SERVER = "add-server"
    FIELD = "field"
    ENTRY_NAME = "entry-name"
    ENTRY_VALUE = "entry-value"


@dataclass(slots=True)
class Prompt:
    """A line being read; `secret` prompts are read with echo off (CFG-UI-13)."""

    purpose: Purpose
    label: str
    text: str = ""
    secret: bool = False
    target: str = ""  # the key path (FIELD, ENTRY_VALUE) or the map name (ENTRY_NAME)
    initial: str = ""


@dataclass(frozen=True, slots=True)
class Frame:
    """What to draw: a heading, the rows and the selection, the prompt, status and help."""

    heading: tuple[str, ...]
    rows: tuple[str, ...]
    selected: int
    prompt: str | None
    status: tuple[str, ...]
    help: str


@dataclass(slots=True)
class EditorModel:
    """The editor's whole state; `press` handles one key and says whether to keep running."""

    backend: Backend
    servers: list[ServerView] = field(default_factory=list)
    screen_kind: Screen = Screen.LIST
    selected: int = 0
    server: str | None = None  # the open server's name
    prompt: Prompt | None = None
    status: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.servers = self.backend.servers()

    # -- rows -------------------------------------------------------------------------------

    def rows(self) -> list[Row]:
        """[CFG-UI-12] [CFG-UI-13] the selectable rows of the current screen."""
        if self.screen_kind is Screen.LIST:
            rows = [Row(RowKind.SERVER, s.name, s.name) for s in self.servers]
            return [*rows, Row(RowKind.ADD, "", ADD_ROW)]
        view = self._open_server()
        if view is None:
            return []
        rows = [Row(RowKind.FIELD, f, f"{f} = {view.fields.get(f, UNSET_TEXT)}") for f in FIELDS]
        for name in MAPS:
            entries = view.maps.get(name, ())
            listed = f"[{', '.join(entries)}]  " if entries else "[]  "
            rows.append(Row(RowKind.MAP, name, f"{name}: {listed}{ADD_ENTRY}"))
            rows += [Row(RowKind.ENTRY, f"{name}.{k}", f"{name}.{k} = {HIDDEN}") for k in entries]
        return rows

    def _open_server(self) -> ServerView | None:
        for view in self.servers:
            if view.name == self.server:
                return view
        return None

    def frame(self) -> Frame:
        """Everything the drawing layer shows; a secret prompt's text is never part of it."""
        if self.screen_kind is Screen.LIST:
            heading: tuple[str, ...] = ("MCP servers (mcp.servers)",)
            help_line = HELP_LIST
        else:
            # [CFG-UI-12] the name heads the screen and is not a row: CFG-UI-07 renames.
            heading = (
                f"Server: {self.server}",
                f"(name not editable here: 'zeroclaw_ref config rename mcp.servers.{self.server}"
                " <new name>' or the dashboard renames it)",
            )
            help_line = HELP_SERVER
        prompt = None
        if self.prompt is not None:
            help_line = HELP_PROMPT
            shown = "" if self.prompt.secret else self.prompt.text
            hidden = "(input hidden) " if self.prompt.secret else ""
            prompt = f"{self.prompt.label}{hidden}{shown}"
        rows = tuple(row.text for row in self.rows())
        return Frame(heading, rows, self.selected, prompt, self.status, help_line)

    # -- keys -------------------------------------------------------------------------------

    def press(self, key: str) -> bool:
        """[CFG-UI-15] act on one key; returns False when the editor should exit."""
        if self.prompt is not None:
            self._prompt_key(self.prompt, key)
            return True
        count = len(self.rows())
        if key in (UP, "k"):
            self.selected = max(0, self.selected - 1)
        elif key in (DOWN, "j"):
            self.selected = min(max(count - 1, 0), self.selected + 1)
        elif key == ENTER:
            self._activate()
        elif key == "d":
            self._delete()
        elif key in (ESCAPE, "q"):
            if self.screen_kind is Screen.LIST:
                return False
            self._back_to_list()
        return True

    def _prompt_key(self, prompt: Prompt, key: str) -> None:
        if key == ESCAPE:
            self.prompt = None
            self.status = ("Cancelled",)
        elif key == BACKSPACE:
            prompt.text = prompt.text[:-1]
        elif key == ENTER:
            self.prompt = None
            self._submit(prompt)
        elif key not in NAMED_KEYS and len(key) == 1 and key.isprintable():
            prompt.text += key

    def _activate(self) -> None:
        rows = self.rows()
        if not rows:
            return
        row = rows[min(self.selected, len(rows) - 1)]
        if row.kind is RowKind.SERVER:
            self.screen_kind, self.server, self.selected = Screen.SERVER, row.key, 0
            self.status = ()
        elif row.kind is RowKind.ADD:
            self.prompt = Prompt(Purpose.ADD_SERVER, "New server name: ")
        elif row.kind is RowKind.FIELD:
            view = self._open_server()
            current = view.fields.get(row.key, UNSET_TEXT) if view else UNSET_TEXT
            initial = "" if current == UNSET_TEXT else current
            path = f"mcp.servers.{self.server}.{row.key}"
            self.prompt = Prompt(Purpose.FIELD, f"{path}: ", initial, False, path, initial)
        elif row.kind is RowKind.MAP:
            label = f"New {row.key} entry name: "
            self.prompt = Prompt(Purpose.ENTRY_NAME, label, target=row.key)
        else:
            self.prompt = self._value_prompt(f"mcp.servers.{self.server}.{row.key}")

    @staticmethod
    def _value_prompt(path: str) -> Prompt:
        return Prompt(Purpose.ENTRY_VALUE, f"Value for {path}: ", secret=True, target=path)

    def _submit(self, prompt: Prompt) -> None:
        text = prompt.text
        prompt.text = ""  # a secret lives no longer than its prompt
        if prompt.purpose is Purpose.ADD_SERVER:
            if not text:
                self.status = ("Cancelled",)
                return
            if self._write(lambda: self.backend.create(text)):
                names = [view.name for view in self.servers]
                self.selected = names.index(text) if text in names else self.selected
        elif prompt.purpose is Purpose.FIELD:
            if text == prompt.initial == "":
                self.status = ("Cancelled",)  # nothing typed for an unset field
                return
            self._write(lambda: self.backend.set(prompt.target, text))
        elif prompt.purpose is Purpose.ENTRY_NAME:
            if not text:
                self.status = ("Cancelled",)
                return
            # [CFG-UI-13] the name first, then the value with echo off.
            self.prompt = self._value_prompt(f"mcp.servers.{self.server}.{prompt.target}.{text}")
        else:
            self._write(lambda: self.backend.set(prompt.target, text))

    def _delete(self) -> None:
        rows = self.rows()
        if not rows:
            return
        row = rows[min(self.selected, len(rows) - 1)]
        if row.kind is RowKind.SERVER:
            self._write(lambda: self.backend.unset(f"mcp.servers.{row.key}"))
        elif row.kind in (RowKind.FIELD, RowKind.ENTRY):
            self._write(lambda: self.backend.unset(f"mcp.servers.{self.server}.{row.key}"))
        elif row.kind is RowKind.MAP:
            self.status = (f"Select one {row.key} entry to delete it",)

    def _back_to_list(self) -> None:
        names = [view.name for view in self.servers]
        self.selected = names.index(self.server) if self.server in names else 0
        self.screen_kind, self.server = Screen.LIST, None

    def _write(self, action: Callable[[], Result]) -> bool:
        """[CFG-UI-14] write now, show the result line (or the error), then re-read."""
        try:
            result = action()
        except ConfigError as exc:
            self.status = _error_lines(exc.lines)
            return False
        self.status = (result.message, *_warning_lines(result.warnings))
        self.reload()
        return True

    def reload(self) -> None:
        """Re-read the servers; leave a server that no longer exists; keep the selection."""
        try:
            self.servers = self.backend.servers()
        except ConfigError as exc:
            self.status = (*self.status, *_error_lines(exc.lines))
        if self.screen_kind is Screen.SERVER and self._open_server() is None:
            self.screen_kind, self.server, self.selected = Screen.LIST, None, 0
        self.selected = min(self.selected, max(len(self.rows()) - 1, 0))


def _error_lines(lines: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"ERROR: {line}" for line in lines) or ("ERROR: the write was refused",)


def _warning_lines(warnings: Sequence[str]) -> tuple[str, ...]:
    # The last warning is the summary of CFG-CLI-25; the status line has room for it alone.
    return (f"warning: {warnings[-1]}",) if warnings else ()
