"""`zeroclaw_ref config edit` driven in a real terminal: tmux send-keys / capture-pane.

The terminal is the behaviour under test (CFG-UI-15), so every step sends keys and then waits,
bounded by `wait_for`, until the pane shows the expected text; `config.toml` is checked after
each step. The secret typed for an `env` entry must never appear in any captured pane.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_peer, wait_for
from zeroclaw_ref.config.secrets import decrypt, key_file, read_key

REPO = Path(__file__).resolve().parents[2]
SECRET = "tmux-typed-Secret-4242"
START = '[[mcp.servers]]\nname = "github"\ncommand = "npx"\n'


class Pane:
    """One tmux server on its own socket, running the editor in a 120x40 pane."""

    def __init__(self, tmux: str, socket: str) -> None:
        self.tmux, self.socket = tmux, socket
        self.seen: list[str] = []  # every capture, for the final secret check

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [self.tmux, "-L", self.socket, *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return done.stdout

    def capture(self) -> str:
        text = self.run("capture-pane", "-p", "-S", "-", "-t", "edit")
        self.seen.append(text)
        return text

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "edit", *keys)

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", "edit", "-l", text)

    def wait(self, *texts: str) -> str:
        """Wait (at most 10 s) until the pane shows every one of `texts`; return the pane."""
        wait_for(
            lambda: all(t in self.capture() for t in texts),
            f"the pane to show {texts!r}",
            detail=lambda: self.seen[-1] if self.seen else "",
        )
        return self.seen[-1]


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[Pane]:
    tmux = require_peer("tmux")
    assert isinstance(tmux, str)
    (tmp_path / "config.toml").write_text(START)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZEROCLAW", "TMUX"))}
    env |= {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    socket = f"zeroclaw-edit-{uuid.uuid4().hex[:12]}"
    command = (
        f"'{sys.executable}' -m zeroclaw_ref --config-dir '{tmp_path}' config edit; "
        'echo "exit status $?"; cat'
    )
    session = ["new-session", "-d", "-s", "edit", "-x", "120", "-y", "40", "-c", str(REPO)]
    subprocess.run(
        [tmux, "-L", socket, "-f", "/dev/null", *session, command],
        env=env,
        timeout=30,
        check=True,
    )
    try:
        yield Pane(tmux, socket)
    finally:
        subprocess.run([tmux, "-L", socket, "kill-server"], timeout=30, check=False)


def _servers(config_dir: Path) -> list[dict[str, object]]:
    document = tomllib.loads((config_dir / "config.toml").read_text())
    servers = document.get("mcp", {}).get("servers", [])
    assert isinstance(servers, list)
    return servers


@pytest.mark.peer("tmux")
@pytest.mark.req("CFG-UI-12", "CFG-UI-13", "CFG-UI-14", "CFG-UI-15", "CFG-SECRETS-14")
def test_editor_adds_a_server_and_a_secret_entry_then_deletes_it(
    pane: Pane, tmp_path: Path
) -> None:
    # The list: one row per server, then + Add, and the help line.
    pane.wait("> github", "  + Add", "q or Esc: quit")

    # + Add, seeded with the name it reads (echoed, unlike a secret).
    pane.keys("Down", "Enter")
    pane.wait("New server name:")
    pane.type("notes")
    pane.wait("New server name: notes")
    pane.keys("Enter")
    pane.wait("Created mcp.servers.notes", "> notes")
    assert [s["name"] for s in _servers(tmp_path)] == ["github", "notes"]

    # A duplicate name (ignoring case) is refused on the status line; the file is unchanged.
    before = (tmp_path / "config.toml").read_bytes()
    pane.keys("Down", "Enter")
    pane.wait("New server name:")
    pane.type("GitHub")
    pane.keys("Enter")
    pane.wait("ERROR: mcp.servers contains duplicate name: GitHub")
    assert (tmp_path / "config.toml").read_bytes() == before

    # Open the server: its name heads the screen, one row per field, the maps as containers.
    pane.keys("Up", "Enter")
    screen = pane.wait("Server: notes", "> transport = stdio", "headers: []  [+ Add entry]")
    assert "name =" not in screen

    # [+ Add entry] on env: the name, then the value with echo off, written at once.
    pane.keys(*["Down"] * 8)
    pane.wait("> env: []  [+ Add entry]")
    pane.keys("Enter")
    pane.wait("New env entry name:")
    pane.type("API_TOKEN")
    pane.keys("Enter")
    pane.wait("Value for mcp.servers.notes.env.API_TOKEN: (input hidden)")
    pane.type(SECRET)
    assert SECRET not in pane.capture()
    pane.keys("Enter")
    pane.wait("Updated mcp.servers.notes.env.API_TOKEN", "env.API_TOKEN = ****")
    stored = _servers(tmp_path)[1]["env"]
    assert isinstance(stored, dict)
    cipher = stored["API_TOKEN"]
    assert isinstance(cipher, str) and cipher.startswith("enc2:")
    key = read_key(key_file(tmp_path))
    assert decrypt("mcp.servers.notes.env.API_TOKEN", cipher, key) == SECRET
    assert SECRET not in (tmp_path / "config.toml").read_text()

    # Back to the list, delete the server, quit with status 0.
    pane.keys("Escape")
    pane.wait("MCP servers (mcp.servers)", "> notes")
    pane.keys("d")
    pane.wait("Removed mcp.servers.notes")
    assert [s["name"] for s in _servers(tmp_path)] == ["github"]
    pane.keys("q")
    pane.wait("exit status 0")
    assert not any(SECRET in text for text in pane.seen)
