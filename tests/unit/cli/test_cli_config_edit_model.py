"""The `config edit` model: keys to actions, rows, prompts and the status line (config.md §13.4).

Most tests drive `EditorModel` with a recording backend; the last ones use the real
`FileBackend` on a temporary configuration directory, and the command without a terminal.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from zeroclaw_ref.cli.config_edit import NOT_A_TERMINAL, FileBackend, run_editor
from zeroclaw_ref.cli.config_edit_model import (
    ADD_ROW,
    BACKSPACE,
    DOWN,
    ENTER,
    ESCAPE,
    FIELDS,
    UP,
    EditorModel,
    Result,
    Screen,
    ServerView,
)
from zeroclaw_ref.cli.streams import Streams
from zeroclaw_ref.config.edit import EditError
from zeroclaw_ref.config.model import ConfigError
from zeroclaw_ref.config.secrets import decrypt, key_file, read_key

SECRET = "s3cret-value-never-drawn"


def _view(name: str, env: tuple[str, ...] = (), headers: tuple[str, ...] = ()) -> ServerView:
    fields = {f: "<unset>" for f in FIELDS} | {"transport": "stdio", "command": "npx"}
    return ServerView(name, fields, {"env": env, "headers": headers})


@dataclass
class FakeBackend:
    """Records every write; `refuse` makes the next write fail with those lines."""

    views: list[ServerView] = field(default_factory=list)
    calls: list[tuple[str, ...]] = field(default_factory=list)
    refuse: list[str] | None = None
    warnings: tuple[str, ...] = ()

    def servers(self) -> list[ServerView]:
        return list(self.views)

    def _done(self, call: tuple[str, ...], message: str) -> Result:
        if self.refuse is not None:
            raise EditError(self.refuse)
        self.calls.append(call)
        return Result(message, self.warnings)

    def create(self, name: str) -> Result:
        result = self._done(("create", name), f"Created mcp.servers.{name}")
        self.views.append(_view(name))
        return result

    def set(self, key_path: str, text: str) -> Result:
        return self._done(("set", key_path, text), f"Updated {key_path}")

    def unset(self, key_path: str) -> Result:
        result = self._done(("unset", key_path), f"Removed {key_path}")
        self.views = [v for v in self.views if f"mcp.servers.{v.name}" != key_path]
        return result


def _model(*views: ServerView) -> tuple[EditorModel, FakeBackend]:
    backend = FakeBackend(list(views))
    return EditorModel(backend), backend


def _press(model: EditorModel, *keys: str) -> None:
    for key in keys:
        assert model.press(key)


def _type(model: EditorModel, text: str) -> None:
    _press(model, *text)


def _drawn(model: EditorModel) -> str:
    frame = model.frame()
    return "\n".join((*frame.heading, *frame.rows, frame.prompt or "", *frame.status, frame.help))


@pytest.mark.req("CFG-UI-12", "CFG-UI-15")
def test_list_shows_one_row_per_server_in_order_then_add_and_moves_with_arrows_and_jk() -> None:
    model, _ = _model(_view("github"), _view("alpha"))
    assert model.frame().rows == ("github", "alpha", ADD_ROW)
    _press(model, DOWN, "j", "j")
    assert model.selected == 2  # stops on the last row
    _press(model, UP, "k", "k")
    assert model.selected == 0  # and on the first
    assert "q" in model.frame().help and "Enter" in model.frame().help


@pytest.mark.req("CFG-UI-12", "CFG-UI-13")
def test_opening_a_server_shows_its_name_as_heading_and_one_row_per_field() -> None:
    model, _ = _model(_view("github", env=("GITHUB_TOKEN",), headers=("Authorization",)))
    _press(model, ENTER)
    frame = model.frame()
    assert model.screen_kind is Screen.SERVER
    assert frame.heading[0] == "Server: github"
    assert [row.split(" ")[0] for row in frame.rows[: len(FIELDS)]] == list(FIELDS)
    assert frame.rows[len(FIELDS) :] == (
        "env: [GITHUB_TOKEN]  [+ Add entry]",
        "env.GITHUB_TOKEN = ****",
        "headers: [Authorization]  [+ Add entry]",
        "headers.Authorization = ****",
    )
    assert not any(row.startswith("name") for row in frame.rows)  # not editable inline


@pytest.mark.req("CFG-UI-12", "CFG-UI-14")
def test_add_reads_a_name_creates_the_server_at_once_and_selects_it() -> None:
    model, backend = _model(_view("github"))
    _press(model, DOWN, ENTER)
    _type(model, "notes")
    assert model.frame().prompt == "New server name: notes"
    _press(model, ENTER)
    assert backend.calls == [("create", "notes")]
    assert model.frame().status == ("Created mcp.servers.notes",)
    assert model.frame().rows == ("github", "notes", ADD_ROW)
    assert model.selected == 1


@pytest.mark.req("CFG-UI-15")
def test_add_with_an_empty_name_or_escape_writes_nothing() -> None:
    model, backend = _model()
    _press(model, ENTER, ENTER)
    _press(model, ENTER, "x", ESCAPE)
    assert backend.calls == []
    assert model.prompt is None and model.frame().status == ("Cancelled",)


@pytest.mark.req("CFG-UI-13", "CFG-UI-14", "CFG-SECRETS-14")
def test_adding_an_entry_reads_its_name_then_the_value_with_echo_off() -> None:
    model, backend = _model(_view("github"))
    _press(model, ENTER, *[DOWN] * len(FIELDS), ENTER)
    assert model.frame().prompt == "New env entry name: "
    _type(model, "API_TOKEN")
    _press(model, ENTER)
    _type(model, SECRET)
    drawn = _drawn(model)
    assert "Value for mcp.servers.github.env.API_TOKEN: (input hidden)" in drawn
    assert SECRET not in drawn
    _press(model, ENTER)
    assert backend.calls == [("set", "mcp.servers.github.env.API_TOKEN", SECRET)]
    assert model.frame().status == ("Updated mcp.servers.github.env.API_TOKEN",)
    assert SECRET not in _drawn(model) and model.prompt is None


@pytest.mark.req("CFG-UI-13", "CFG-SECRETS-14")
def test_enter_on_an_entry_row_replaces_its_value_read_hidden() -> None:
    model, backend = _model(_view("api", headers=("Authorization",)))
    _press(model, ENTER, *[DOWN] * (len(FIELDS) + 2), ENTER)
    _type(model, "Bearer xyz")
    assert "Bearer xyz" not in _drawn(model)
    _press(model, ENTER)
    assert backend.calls == [("set", "mcp.servers.api.headers.Authorization", "Bearer xyz")]


@pytest.mark.req("CFG-UI-14", "CFG-UI-15")
def test_a_field_is_edited_in_a_line_prefilled_with_its_value() -> None:
    model, backend = _model(_view("github"))
    _press(model, ENTER, DOWN, ENTER)
    assert model.frame().prompt == "mcp.servers.github.command: npx"
    _press(model, BACKSPACE, BACKSPACE, BACKSPACE)
    _type(model, "uvx")
    _press(model, ENTER)
    assert backend.calls == [("set", "mcp.servers.github.command", "uvx")]
    _press(model, ENTER, "z", ESCAPE)  # Escape cancels
    _press(model, DOWN, ENTER, ENTER)  # an unset field left empty is not written
    assert len(backend.calls) == 1


@pytest.mark.req("CFG-UI-14", "CFG-UI-15")
def test_d_deletes_a_server_an_entry_or_unsets_a_field_but_not_a_container() -> None:
    model, backend = _model(_view("github", env=("K",)), _view("other"))
    _press(model, ENTER, DOWN, "d")  # command
    _press(model, *[DOWN] * (len(FIELDS) - 1), "d")  # env container
    assert model.frame().status == ("Select one env entry to delete it",)
    _press(model, DOWN, "d")  # env.K
    _press(model, "q", DOWN, "d")  # back on the list: delete `other`
    assert backend.calls == [
        ("unset", "mcp.servers.github.command"),
        ("unset", "mcp.servers.github.env.K"),
        ("unset", "mcp.servers.other"),
    ]
    assert model.frame().rows == ("github", ADD_ROW)


@pytest.mark.req("CFG-UI-14")
def test_a_refused_write_shows_the_error_on_the_status_line_and_changes_nothing() -> None:
    model, backend = _model(_view("github"))
    backend.refuse = ["mcp.servers contains duplicate name: GitHub"]
    _press(model, DOWN, ENTER)
    _type(model, "GitHub")
    _press(model, ENTER)
    assert model.frame().status == ("ERROR: mcp.servers contains duplicate name: GitHub",)
    assert model.frame().rows == ("github", ADD_ROW) and backend.calls == []


@pytest.mark.req("CFG-UI-14")
def test_the_summary_warning_follows_the_result_line() -> None:
    model, backend = _model()
    backend.warnings = ("mcp.servers[0]: command is required", "the configuration has errors")
    _press(model, ENTER)
    _type(model, "a")
    _press(model, ENTER)
    assert model.frame().status == (
        "Created mcp.servers.a",
        "warning: the configuration has errors",
    )


@pytest.mark.req("CFG-UI-15")
def test_escape_leaves_a_server_on_its_row_and_q_on_the_list_quits() -> None:
    model, _ = _model(_view("a"), _view("b"))
    _press(model, DOWN, ENTER, ESCAPE)
    assert model.screen_kind is Screen.LIST and model.selected == 1
    assert model.press("q") is False
    assert model.press(ESCAPE) is False


def test_a_server_removed_behind_the_editor_sends_it_back_to_the_list() -> None:
    model, backend = _model(_view("a"))
    _press(model, ENTER)
    backend.views = []
    model.reload()
    assert model.screen_kind is Screen.LIST and model.frame().rows == (ADD_ROW,)


# -- the real backend --------------------------------------------------------------------------


@pytest.mark.req("CFG-UI-13", "CFG-UI-14", "CFG-SECRETS-14")
def test_file_backend_writes_at_once_encrypts_and_hands_over_entry_names_only(
    tmp_path: Path,
) -> None:
    (tmp_path / "config.toml").write_text('[[mcp.servers]]\nname = "github"\ncommand = "npx"\n')
    model = EditorModel(FileBackend(tmp_path, tmp_path, {}))
    _press(model, DOWN, ENTER)
    _type(model, "notes")
    _press(model, ENTER, ENTER, *[DOWN] * len(FIELDS), ENTER)
    _type(model, "TOKEN")
    _press(model, ENTER)
    _type(model, SECRET)
    _press(model, ENTER)
    stored = tomllib.loads((tmp_path / "config.toml").read_text())["mcp"]["servers"]
    assert [s["name"] for s in stored] == ["github", "notes"]
    cipher = stored[1]["env"]["TOKEN"]
    key = read_key(key_file(tmp_path))
    assert cipher.startswith("enc2:") and decrypt("env.TOKEN", cipher, key) == SECRET
    assert model.servers[1].maps["env"] == ("TOKEN",)
    assert SECRET not in repr(model.servers) and cipher not in repr(model.servers)
    assert model.frame().status[0] == "Updated mcp.servers.notes.env.TOKEN"


@pytest.mark.req("CFG-UI-14")
def test_file_backend_refusal_leaves_the_file_byte_for_byte(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[[mcp.servers]]\nname = "github"\ncommand = "npx"\n')
    before = (tmp_path / "config.toml").read_bytes()
    model = EditorModel(FileBackend(tmp_path, tmp_path, {}))
    _press(model, DOWN, ENTER)
    _type(model, "GitHub")
    _press(model, ENTER, UP, ENTER, *[DOWN] * 4, ENTER)  # tool_timeout_secs
    _type(model, "soon")
    _press(model, ENTER)
    assert model.frame().status[0].startswith("ERROR: invalid value for mcp.servers.github.")
    assert (tmp_path / "config.toml").read_bytes() == before


@pytest.mark.req("CFG-UI-12")
def test_a_file_that_does_not_load_is_refused_before_the_editor_opens(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[mcp\n")
    streams = Streams(io.StringIO(), io.StringIO(), io.StringIO())
    with pytest.raises(ConfigError) as caught:
        run_editor(tmp_path, tmp_path, {}, streams)
    assert "invalid TOML" in caught.value.lines[0]


@pytest.mark.req("CFG-UI-15")
def test_config_edit_without_a_terminal_exits_1_with_its_message(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW")}
    done = subprocess.run(
        [sys.executable, "-m", "zeroclaw_ref", "--config-dir", str(tmp_path), "config", "edit"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (1, f"ERROR: {NOT_A_TERMINAL}\n")
    assert not (tmp_path / "config.toml").exists()
