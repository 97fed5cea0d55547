"""server-everything started the way its README says
(`npx -y @modelcontextprotocol/server-everything`) leaves no process behind (mcp.md §3.7
MCP-STDIO-23, §1.5 MCP-LIFE-09/10).

Under `npx` the server is a tree: `npm exec` → `sh -c mcp-server-everything` → `node`. With a
tool call in flight, `node` does not exit at end of input, and a SIGTERM to `npm exec` alone
orphans it; so these tests hold a `trigger-long-running-operation` call open while closing.

`--offline` keeps npx off the network; it resolves the package installed by .ci/run in .peers/
because the server is started from that directory (the child inherits the working directory,
MCP-STDIO-03). Skipped without node or the peer, failed instead under
ZEROCLAW_REF_REQUIRE_PEERS=1.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
from pathlib import Path

import pytest

from tests.conftest import require_peer, wait_for
from tests.helpers.acp_client import AcpProcess
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.mcp import McpClosedError, McpOptions, McpRegistry

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / ".peers"
NPX_ARGS = ("--offline", "-y", "@modelcontextprotocol/server-everything")
LONG_CALL = {"duration": 120, "steps": 2}


def _npx() -> str:
    require_peer("server-everything")  # node and the package in .peers/
    found = shutil.which("npx")
    if found is None:
        reason = "peer npx missing: it ships with node (apt-get install nodejs npm)"
        if os.environ.get("ZEROCLAW_REF_REQUIRE_PEERS") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return found


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state, ppid, pgrp, ...)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def descendants(root: int) -> dict[int, str]:
    """Every live descendant of `root`: pid -> command line."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: dict[int, str] = {}
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if not dead(child):
                found[child] = _cmdline(child)
                todo.append(child)
    return found


def dead(pid: int) -> bool:
    """Gone, or a zombie waiting only for whoever adopted it to reap it."""
    fields = _stat(pid)
    return fields is None or fields[0] in ("Z", "X")


def pgid(pid: int) -> int:
    fields = _stat(pid)
    assert fields is not None, f"{pid} vanished"
    return int(fields[2])


def npx_tree(npm: int, not_in: int) -> dict[int, str]:
    """`npm exec` and everything under it (sh → node), checked to be one process group that
    `npm exec` leads, apart from the group `not_in` of the process that started it."""
    tree = {npm: _cmdline(npm), **descendants(npm)}
    assert tree[npm].startswith("npm exec"), tree
    assert any("node" in cmd and "server-everything" in cmd for cmd in tree.values()), tree
    assert {pgid(pid) for pid in tree} == {npm} != {not_in}, tree
    return tree


def assert_all_gone(tree: dict[int, str]) -> None:
    try:
        wait_for(
            lambda: all(dead(pid) for pid in tree),
            "every process of the npx tree to end",
            timeout=5,
            detail=lambda: repr({p: c for p, c in tree.items() if not dead(p)}),
        )
    finally:
        for pid in tree:  # never leave a peer running past the test
            if not dead(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.req("MCP-PEER-01", "MCP-STDIO-23", "MCP-LIFE-09")
def test_closing_the_client_ends_the_whole_npx_tree_mid_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    npx = _npx()
    monkeypatch.chdir(PEERS)
    config = McpServerConfig(name="everything", command=npx, args=NPX_ARGS)
    options = McpOptions(init_timeout_s=60, list_timeout_s=30, close_grace_s=0.5)
    reg = McpRegistry.connect_all([config], options=options)
    errors: list[BaseException] = []
    try:
        assert reg.servers() == ("everything",)
        npm = reg.connection("everything")._transport.pid  # type: ignore[attr-defined]
        tree = npx_tree(npm, os.getpgrp())

        def call() -> None:
            try:
                reg.call_tool("everything__trigger-long-running-operation", LONG_CALL)
            except BaseException as exc:
                errors.append(exc)

        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        wait_for(lambda: reg.connection("everything").pending_count() == 1, "the call in flight")
    finally:
        reg.close()
    caller.join(10)
    assert len(errors) == 1 and isinstance(errors[0], McpClosedError), errors
    assert_all_gone(tree)


AGENT_CONFIG = """\
schema_version = 1

[providers.demo]
kind = "demo"
model = "demo"

[risk_profiles.default]
level = "supervised"
auto_approve = ["everything__trigger-long-running-operation"]

[runtime_profiles.default]

[agents.default]
model_provider = "demo"
risk_profile = "default"
runtime_profile = "default"
mcp_bundles = ["npx"]
acp_enable_mcp = true

[[mcp.servers]]
name = "everything"
command = "npx"
args = {args}

[mcp_bundles.npx]
servers = ["everything"]
"""


@pytest.mark.req("MCP-PEER-01", "MCP-LIFE-10", "MCP-STDIO-23", "ACP-TR-35")
def test_the_agent_leaves_no_npx_process_behind_at_end_of_input(tmp_path: Path) -> None:
    _npx()
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    args = "[" + ", ".join(f'"{a}"' for a in NPX_ARGS) + "]"
    (config_dir / "config.toml").write_text(AGENT_CONFIG.format(args=args))
    env = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "")}
    agent = AcpProcess(config_dir, "--config-dir", str(config_dir), env=env, cwd=PEERS)
    try:
        agent.request(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        reply = agent.response(1)
        assert "result" in reply, reply
        sid = reply["result"]["sessionId"]
        [npm] = [p for p, cmd in descendants(agent.proc.pid).items() if cmd.startswith("npm exec")]
        tree = npx_tree(npm, os.getpgid(agent.proc.pid))
        assert not any("Failed to connect" in line for line in agent.stderr_lines)
        prompt = f"call: everything__trigger-long-running-operation {LONG_CALL}".replace("'", '"')
        agent.request(2, "session/prompt", {"sessionId": sid, "prompt": prompt})
        for _ in range(50):  # bounded: each recv waits at most its own timeout
            message = agent.recv("the tool call update", timeout=30)
            update = message.get("params", {}).get("update", {})
            if update.get("sessionUpdate") == "tool_call":
                break
        else:
            raise AssertionError(f"no tool call started\n{agent.traffic[-10:]}")
        assert agent.close_input() == 0
    finally:
        agent.kill()
    assert_all_gone(tree)
