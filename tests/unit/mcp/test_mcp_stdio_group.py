"""Stdio servers are process groups: closing, the agent's exit and interpreter exit end the
grandchildren too (mcp.md §3.7 MCP-STDIO-23, §1.5 MCP-LIFE-09/10).

The server is `tests/helpers/fake_mcp_group.py`, which leaves a grandchild behind that never
reads stdin, the way `npx` leaves `node` under `npm exec`. Death is checked with `kill(pid, 0)`
and `/proc/<pid>/stat`: an orphan's zombie counts as dead, since it waits only for whoever
adopted it to reap it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.helpers.acp_client import AcpProcess
from tests.helpers.internals import stdio_pid
from tests.unit.mcp.conftest import Connect
from zeroclaw_ref.config.load import EMBEDDED_DEFAULT
from zeroclaw_ref.config.model import McpServerConfig
from zeroclaw_ref.mcp import McpOptions

HELPER = Path(__file__).resolve().parents[2] / "helpers" / "fake_mcp_group.py"
ROOT = Path(__file__).resolve().parents[3]


def group_config(pidfile: Path, *args: str) -> McpServerConfig:
    return McpServerConfig(
        name="peer", command=sys.executable, args=(str(HELPER), str(pidfile), *args)
    )


def dead(pid: int) -> bool:
    """Gone, or a zombie (it has exited; only its reaping is left)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    return stat[stat.rfind(")") + 2 :].split()[0] in ("Z", "X")


def pgid_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    return int(stat[stat.rfind(")") + 2 :].split()[2])


def read_pid(pidfile: Path) -> int:
    wait_for(pidfile.exists, "the grandchild's pid file")
    return int(pidfile.read_text())


@pytest.mark.req("MCP-STDIO-23", "MCP-LIFE-09")
@pytest.mark.parametrize(
    ("server_args", "ends_at"),
    [
        ((), "SIGTERM to the group after the child exited at end of input"),
        (("--grandchild-ignores-sigterm",), "SIGKILL to the group"),
        (
            ("--grandchild-ignores-sigterm", "--linger", "30", "--ignore-sigterm"),
            "SIGKILL to the group, child included",
        ),
    ],
)
def test_closing_ends_a_grandchild_that_ignores_end_of_input(
    connect: Connect, tmp_path: Path, server_args: tuple[str, ...], ends_at: str
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    reg = connect(group_config(pidfile, *server_args), options=McpOptions(close_grace_s=0.2))
    child = stdio_pid(reg)
    assert isinstance(child, int)
    grandchild = read_pid(pidfile)
    # The child leads a group of its own, the grandchild is in it, the test process is not.
    assert pgid_of(child) == child == pgid_of(grandchild) != os.getpgrp()
    reg.close()
    try:
        wait_for(lambda: dead(grandchild), f"the grandchild to die ({ends_at})", timeout=5)
        assert dead(child)
    finally:
        if not dead(grandchild):
            os.kill(grandchild, signal.SIGKILL)


@pytest.mark.req("MCP-LIFE-10")
def test_interpreter_exit_without_close_ends_the_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    code = (
        "import sys\n"
        "from zeroclaw_ref.config.model import McpServerConfig\n"
        "from zeroclaw_ref.mcp import McpOptions, McpRegistry\n"
        "config = McpServerConfig(name='peer', command=sys.executable, args=tuple(sys.argv[1:]))\n"
        "reg = McpRegistry.connect_all([config], options=McpOptions(close_grace_s=0.2))\n"
        "assert reg.servers() == ('peer',)\n"
        "# no close(): the interpreter exits with the registry still referenced\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(HELPER), str(pidfile)],
        cwd=ROOT,
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr.decode()
    grandchild = int(pidfile.read_text())
    try:
        wait_for(lambda: dead(grandchild), "the grandchild to die at interpreter exit", timeout=5)
    finally:
        if not dead(grandchild):
            os.kill(grandchild, signal.SIGKILL)


# The embedded default (demo model, agent `default`), with the peer granted through a bundle.
AGENT_CONFIG = (
    EMBEDDED_DEFAULT
    + """mcp_bundles = ["b"]
acp_enable_mcp = true

[[mcp.servers]]
name = "peer"
command = {command}
args = {args}

[mcp_bundles.b]
servers = ["peer"]
"""
)


@pytest.mark.req("MCP-LIFE-10", "MCP-STDIO-23")
def test_the_agents_end_of_input_ends_the_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    args = [str(HELPER), str(pidfile)]
    (config_dir / "config.toml").write_text(
        AGENT_CONFIG.format(command=f'"{sys.executable}"', args=str(args).replace("'", '"'))
    )
    agent = AcpProcess(config_dir, env={"PYTHONPATH": str(ROOT)})
    try:
        agent.request(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        assert "result" in agent.response(1), agent.traffic
        grandchild = read_pid(pidfile)
        assert pgid_of(grandchild) != os.getpgid(agent.proc.pid)
        assert agent.close_input() == 0
    finally:
        agent.kill()
    try:
        wait_for(lambda: dead(grandchild), "the grandchild to die after the agent exits", timeout=5)
    finally:
        if not dead(grandchild):
            os.kill(grandchild, signal.SIGKILL)
