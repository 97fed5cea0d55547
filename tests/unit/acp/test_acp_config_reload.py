"""The stdio `acp` server builds each session from the configuration on disk now (config.md
CFG-LOAD-10): a real process, its config.toml edited between sessions.

The edit revokes `file_read` (`excluded_tools` in the agent's risk profile); the demo model's
`read:` prefix shows which tools a session was resolved with (config.md CFG-PROV-09: a tool the
request does not offer is answered in text). Each edit moves the file's mtime to a value of its
own with `os.utime`, so the store's change check never depends on the clock's granularity.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.helpers.acp_client import AcpProcess

CONFIG = """\
schema_version = 1

[providers.demo]
kind = "demo"
model = "demo"

[risk_profiles.default]
level = "supervised"
{extra}

[runtime_profiles.default]

[agents.default]
model_provider = "demo"
risk_profile = "default"
runtime_profile = "default"
"""
ALLOWED = CONFIG.format(extra="")
REVOKED = CONFIG.format(extra='excluded_tools = ["file_read"]')
BROKEN = REVOKED + "[agents.default\n"  # a TOML syntax error
NOT_AVAILABLE = "Tool file_read is not available to this agent."


class Editor:
    """Writes config.toml and gives every version an mtime of its own (whole seconds apart)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.version = 0

    def write(self, text: str) -> None:
        self.path.write_text(text, encoding="utf-8")
        self.version += 1
        stamp = 1_700_000_000 + 10 * self.version
        os.utime(self.path, (stamp, stamp))


class Client:
    def __init__(self, agent: AcpProcess, workspace: Path) -> None:
        self.agent = agent
        self.workspace = workspace
        self.next_id = 0

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        self.agent.request(self.next_id, method, params)
        updates: list[dict[str, Any]] = []
        reply = self.agent.response(self.next_id, updates)
        self.last_updates = updates
        return reply

    def new_session(self) -> str:
        reply = self.call("session/new", {"cwd": str(self.workspace), "mcpServers": []})
        assert "result" in reply, reply
        sid: str = reply["result"]["sessionId"]
        return sid

    def read_note(self, sid: str) -> str:
        """The text of a `read: note.txt` turn (file_read needs no approval when allowed)."""
        reply = self.call("session/prompt", {"sessionId": sid, "prompt": "read: note.txt"})
        assert reply.get("result", {}).get("stopReason") == "end_turn", reply
        return "".join(
            u["params"]["update"]["content"]["text"]
            for u in self.last_updates
            if u.get("method") == "session/update"
            and u["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
        )


@pytest.mark.req("CFG-LOAD-10", "MCP-LIFE-05", "POL-BUNDLE-06", "POL-PATH-03", "POL-PATH-06")
def test_new_sessions_see_edits_and_a_broken_edit_keeps_the_last_good_snapshot(
    tmp_path: Path,
) -> None:
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "note.txt").write_text("hello from the note")
    editor = Editor(config_dir / "config.toml")
    editor.write(ALLOWED)
    agent = AcpProcess(config_dir, "--config-dir", str(config_dir))
    try:
        client = Client(agent, workspace)
        initialize = client.call("initialize", {"protocolVersion": 1})["result"]
        assert initialize["agentCapabilities"]["sessionCapabilities"]["resume"] == {}
        first = client.new_session()
        assert "hello from the note" in client.read_note(first)

        # An edit revokes file_read: the next session is built without it ...
        editor.write(REVOKED)
        second = client.new_session()
        assert client.read_note(second) == NOT_AVAILABLE
        # ... while the session built before the edit keeps the execution it was resolved with.
        assert "hello from the note" in client.read_note(first)
        # `initialize` answers as it did at start (ACP-INIT-01: the same result every time).
        assert client.call("initialize", {"protocolVersion": 1})["result"] == initialize

        # A resumed session is resolved again, from the configuration as it is now.
        assert "result" in client.call("session/close", {"sessionId": first})
        assert "result" in client.call(
            "session/resume", {"sessionId": first, "cwd": str(workspace), "mcpServers": []}
        )
        assert client.read_note(first) == NOT_AVAILABLE

        # A broken file: sessions still start, from the last good snapshot (the revoking one,
        # not the one loaded at start), and stderr says why the file was not taken.
        editor.write(BROKEN)
        third = client.new_session()
        assert client.read_note(third) == NOT_AVAILABLE
        wait_for(
            lambda: any(
                "config reload failed, keeping previous configuration" in line
                and "invalid TOML" in line
                for line in agent.stderr_lines
            ),
            "the reload error on stderr",
            detail=lambda: "".join(agent.stderr_lines),
        )

        # Repairing the file is the next change: it is picked up.
        editor.write(ALLOWED)
        fourth = client.new_session()
        assert "hello from the note" in client.read_note(fourth)
        assert agent.close_input() == 0
    finally:
        agent.kill()


@pytest.mark.req("CFG-LOAD-09", "CFG-LOAD-10")
def test_a_broken_file_at_start_still_stops_the_agent(tmp_path: Path) -> None:
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    Editor(config_dir / "config.toml").write(BROKEN)
    agent = AcpProcess(config_dir, "--config-dir", str(config_dir))
    try:
        assert agent.close_input() == 1
        assert agent.lines.get(timeout=10) is None  # nothing on stdout before the exit
        wait_for(lambda: bool(agent.stderr_lines), "the ERROR line")
        assert agent.stderr_lines[0].startswith("ERROR: ")
        assert "invalid TOML" in agent.stderr_lines[0]
    finally:
        agent.kill()
