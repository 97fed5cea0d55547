"""`zeroclaw_ref config edit`: the full-screen terminal editor of the MCP servers (config.md §13.4).

The only module that imports `curses` (DESIGN §5.3). It reads keys, draws the frames of
`cli/config_edit_model.py` as plain text (no colour, no mouse; CFG-UI-15), and gives the model
a backend that writes every change at once through `config/write.py`, the write path of
`config set` / `config unset` and of the gateway (CFG-UI-14).

Design: the selected row is marked with `> ` as well as drawn in reverse video, so that a
captured pane (which keeps no attributes) still shows the selection.
"""

from __future__ import annotations

import contextlib
import curses
import locale
from collections.abc import Mapping
from pathlib import Path

from zeroclaw_ref.cli.config_edit_model import (
    BACKSPACE,
    DOWN,
    ENTER,
    ESCAPE,
    FIELDS,
    MAPS,
    UNSET_TEXT,
    UP,
    EditorModel,
    Frame,
    Result,
    ServerView,
)
from zeroclaw_ref.cli.streams import Streams
from zeroclaw_ref.config import write
from zeroclaw_ref.config.dirs import config_file
from zeroclaw_ref.config.edit import server_list
from zeroclaw_ref.config.load import check_document, read_config_file
from zeroclaw_ref.config.view import read_view, render_text

NOT_A_TERMINAL = "config edit requires a terminal"
_ESCAPE_DELAY_MS = 25
_MAX_STATUS_LINES = 3
_INT_KEYS = {
    curses.KEY_UP: UP,
    curses.KEY_DOWN: DOWN,
    curses.KEY_ENTER: ENTER,
    curses.KEY_BACKSPACE: BACKSPACE,
}
_STR_KEYS = {"\n": ENTER, "\r": ENTER, "\x1b": ESCAPE, "\x7f": BACKSPACE, "\b": BACKSPACE}


class FileBackend:
    """The editor's view of `<config dir>/config.toml`: servers in, writes out."""

    def __init__(self, config_dir: Path, data_dir: Path, environ: Mapping[str, str]) -> None:
        self.config_dir = config_dir
        self.data_dir = data_dir
        self.environ = environ

    def servers(self) -> list[ServerView]:
        """[CFG-UI-12] the servers in file order, values rendered as `config get` renders them.

        Raises:
            ConfigError when the file does not load (CFG-CLI-20's refusals).
        """
        source = read_config_file(self.config_dir)
        document, _ = check_document(source.path, source.text)
        listed = server_list(document, create=False) or []
        names = [
            s["name"] for s in listed if isinstance(s, dict) and isinstance(s.get("name"), str)
        ]
        leaves = {leaf.path: leaf for leaf in read_view(self.config_dir, self.environ)}
        views: list[ServerView] = []
        for name in names:
            base = f"mcp.servers.{name}"
            fields = {
                f: render_text(leaves[f"{base}.{f}"]) if f"{base}.{f}" in leaves else UNSET_TEXT
                for f in FIELDS
            }
            # [CFG-UI-13] [CFG-SECRETS-14] only the entry names leave this method, never values.
            maps = {
                m: tuple(
                    sorted(p[len(f"{base}.{m}.") :] for p in leaves if p.startswith(f"{base}.{m}."))
                )
                for m in MAPS
            }
            views.append(ServerView(name, fields, maps))
        return views

    def create(self, name: str) -> Result:
        """[CFG-UI-05] `+ Add`: a new server with only its name."""
        outcome = write.create_server(self.config_dir, name)
        return self._result(outcome, None)

    def set(self, key_path: str, text: str) -> Result:
        """[CFG-UI-14] as `config set --no-interactive <key path> <text>`, secrets encrypted."""
        outcome = write.set_text(self.config_dir, key_path, text)
        return self._result(outcome, key_path)

    def unset(self, key_path: str) -> Result:
        """[CFG-UI-14] as `config unset <key path>`."""
        outcome = write.unset(self.config_dir, key_path)
        return self._result(outcome, key_path)

    def _result(self, outcome: write.Outcome, key_path: str | None) -> Result:
        if not outcome.changed:
            return Result(outcome.message)
        # [CFG-CLI-17] [CFG-CLI-25] the warnings `config set` prints after a write.
        warnings = write.follow_up_warnings(self.config_dir, self.data_dir, key_path, self.environ)
        return Result(outcome.message, tuple(warnings))


def run_editor(config_dir: Path, data_dir: Path, environ: Mapping[str, str], io: Streams) -> int:
    """[CFG-UI-12] [CFG-UI-15] refuse a file that does not load or a missing terminal, then edit.

    Raises:
        ConfigError when the file does not load; the caller prints it and exits 1.
    """
    model = EditorModel(FileBackend(config_dir, data_dir, environ))
    if not (io.stdin.isatty() and io.stdout.isatty()):
        print(f"ERROR: {NOT_A_TERMINAL}", file=io.stderr)
        return 1
    title = f"zeroclaw_ref config edit: {config_file(config_dir)}"
    locale.setlocale(locale.LC_ALL, "")
    try:
        curses.wrapper(_loop, model, title)
    except KeyboardInterrupt:
        return 130
    return 0


def _loop(screen: curses.window, model: EditorModel, title: str) -> None:
    curses.set_escdelay(_ESCAPE_DELAY_MS)  # Escape acts at once, not after a second
    screen.keypad(True)
    while True:
        _draw(screen, title, model.frame())
        key = _read_key(screen)
        if key is not None and not model.press(key):
            return


def _read_key(screen: curses.window) -> str | None:
    """One key as the model names it, or None for a key it does not use (a resize)."""
    try:
        key = screen.get_wch()
    except curses.error:
        return None
    if isinstance(key, int):
        return _INT_KEYS.get(key)
    return _STR_KEYS.get(key, key)


def _put(screen: curses.window, y: int, text: str, attr: int = 0) -> None:
    height, width = screen.getmaxyx()
    if 0 <= y < height and width > 1:
        with contextlib.suppress(curses.error):  # a line that does not fit is cut, not fatal
            screen.addnstr(y, 0, text, width - 1, attr)


def _draw(screen: curses.window, title: str, frame: Frame) -> None:
    """[CFG-UI-15] every row as plain text; the status and help lines at the bottom."""
    screen.erase()
    height, _ = screen.getmaxyx()
    _put(screen, 0, title)
    for offset, line in enumerate(frame.heading):
        _put(screen, 1 + offset, line)
    status = frame.status[:_MAX_STATUS_LINES]
    bottom = height - 1 - len(status) - (1 if frame.prompt is not None else 0)
    top = 2 + len(frame.heading)
    visible = max(bottom - top - 1, 1)
    first = max(0, frame.selected - visible + 1)
    for offset, text in enumerate(frame.rows[first : first + visible]):
        chosen = first + offset == frame.selected
        marker = "> " if chosen else "  "
        _put(screen, top + offset, marker + text, curses.A_REVERSE if chosen else 0)
    if frame.prompt is not None:
        _put(screen, bottom, frame.prompt)
    for offset, line in enumerate(status):
        _put(screen, height - 1 - len(status) + offset, line)
    _put(screen, height - 1, frame.help)
    _show_cursor(screen, bottom, frame.prompt)
    screen.refresh()


def _show_cursor(screen: curses.window, y: int, prompt: str | None) -> None:
    try:
        curses.curs_set(0 if prompt is None else 1)
        if prompt is not None:
            screen.move(y, min(len(prompt), screen.getmaxyx()[1] - 2))
    except curses.error:
        pass  # a terminal without cursor control still works
