"""`shell` with real subprocesses in temporary workspaces (policy.md §4.3)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.conftest import wait_for
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.tools.base import ToolContext, ToolResult
from zeroclaw_ref.tools.catalogue import ToolSettings
from zeroclaw_ref.tools.shell import ShellTool, tools

SECRET = "TOPSECRET-7f3a"
BASE_COMMANDS = ("ls", "cat", "echo", "grep", "head", "pwd", "env", "rm")


def make_tool(
    ws: Path,
    *,
    level: str = "supervised",
    commands: tuple[str, ...] = BASE_COMMANDS,
    forbidden: tuple[str, ...] = (),
    timeout: int = 60,
    passthrough: tuple[str, ...] = (),
    block_high: bool = True,
) -> ShellTool:
    policy = SecurityPolicy(
        level=level,
        workspace_dir=ws,
        allowed_roots=(ws,),
        workspace_only=level != "full",
        forbidden_paths=forbidden,
        allowed_commands=commands,
        require_approval_for_medium_risk=True,
        block_high_risk_commands=block_high,
        shell_env_passthrough=passthrough,
        allowed_tools=None,
        excluded_tools=frozenset(),
    )
    settings = ToolSettings(agent_alias="a", data_dir=ws.parent, shell_timeout_secs=timeout)
    return ShellTool(policy, settings)


def run(
    tool: ShellTool, command: JSON, approved: bool = False, cancel: CancelToken | None = None
) -> ToolResult:
    context = ToolContext(cancel=cancel or CancelToken())
    return tool.execute({"command": command, "approved": approved}, context)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace holding `a.txt`, with a secret outside it reachable through links."""
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "a.txt").write_text("alpha\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text(SECRET + "\n")
    (workspace / "link-to-secret").symlink_to(outside / "secret")
    (workspace / "dir-out").symlink_to(outside)
    return workspace


def test_the_spec_hides_the_runtime_owned_approval() -> None:
    built = make_tool(Path("/ws"))
    (shell,) = tools(built.security, built.settings)
    assert shell.name == "shell" and shell.act
    assert shell.parameters["required"] == ["command"]
    properties = shell.parameters["properties"]
    assert isinstance(properties, dict) and set(properties) == {"command"}


@pytest.mark.req("POL-TOOL-04")
@pytest.mark.parametrize("arguments", [{}, {"command": 5}, None, []])
def test_a_missing_command_is_reported(ws: Path, arguments: JSON) -> None:
    result = make_tool(ws).execute(arguments, ToolContext(cancel=CancelToken()))
    assert result.error == "Missing 'command' parameter"


@pytest.mark.req("POL-SHELL-12")
def test_success_carries_stdout_and_stderr(ws: Path) -> None:
    tool = make_tool(ws)
    assert run(tool, "cat a.txt") == ToolResult.ok("alpha\n")
    assert run(tool, "echo out; ls a.txt 1>&2").output == "out\n\n[stderr]\na.txt\n"
    assert run(tool, "pwd").output.strip() == str(ws)


@pytest.mark.req("POL-SHELL-12")
def test_failure_carries_the_status_and_both_streams(ws: Path) -> None:
    result = run(make_tool(ws), "cat a.txt missing")
    assert not result.success and result.error is not None
    assert result.error.startswith("Command exited with status 1\nstdout:\nalpha\n\nstderr:\n")
    assert "missing" in result.error
    assert run(make_tool(ws), "grep zzz a.txt").error == "Command exited with status 1"


@pytest.mark.req("POL-SHELL-11")
def test_each_stream_is_cut_at_one_mebibyte_with_its_marker(ws: Path) -> None:
    tool = make_tool(ws, commands=("yes", "head"))
    out = run(tool, "yes | head -c 3000000")
    assert out.output == "y\n" * 524288 + "\n... [output truncated at 1MB]"
    err = run(tool, "yes | head -c 3000000 1>&2")
    assert err.output == "\n[stderr]\n" + "y\n" * 524288 + "\n... [stderr truncated at 1MB]"
    exact = run(tool, "yes | head -c 1048576")
    assert exact.output == "y\n" * 524288


@pytest.mark.req("POL-SHELL-11")
def test_invalid_utf8_is_replaced(ws: Path) -> None:
    (ws / "bin.dat").write_bytes(b"ok\xff\n")
    assert run(make_tool(ws), "cat bin.dat").output == "ok\ufffd\n"


@pytest.mark.req("POL-SHELL-10")
def test_a_command_past_its_timeout_is_killed(ws: Path) -> None:
    tool = make_tool(ws, commands=("sleep",), timeout=1)
    result = run(tool, "sleep 30")
    assert result.error == "Command timed out after 1s and was killed"


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


@pytest.mark.req("POL-SHELL-09")
def test_cancel_from_another_thread_kills_the_whole_group(ws: Path) -> None:
    # The escape hatch lets the test start a grandchild and learn its pid.
    tool = make_tool(ws, commands=("*",), block_high=False)
    cancel = CancelToken()
    results: list[ToolResult] = []
    command = "sleep 1000 & echo $! > pid; wait"
    worker = threading.Thread(target=lambda: results.append(run(tool, command, cancel=cancel)))
    worker.start()
    wait_for(lambda: (ws / "pid").exists() and (ws / "pid").read_text().strip() != "", "pid")
    pid = int((ws / "pid").read_text())
    assert not _gone(pid)
    cancel.fire()
    worker.join(timeout=10)
    assert not worker.is_alive()
    assert results and not results[0].success
    wait_for(lambda: _gone(pid), "grandchild killed")


def test_a_fired_token_spawns_nothing(ws: Path) -> None:
    cancel = CancelToken()
    cancel.fire()
    tool = make_tool(ws, commands=("*",), block_high=False)
    result = run(tool, "echo x > made", cancel=cancel)
    assert not result.success and not (ws / "made").exists()


@pytest.mark.req("POL-SHELL-09")
def test_the_environment_is_scrubbed(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZC_PLANTED_TOKEN", SECRET)
    monkeypatch.setenv("LANG", "C.UTF-8")
    scrubbed = run(make_tool(ws), "env").output
    assert SECRET not in scrubbed and "LANG=C.UTF-8" in scrubbed and "PATH=" in scrubbed
    passed = run(make_tool(ws, passthrough=("ZC_PLANTED_TOKEN",)), "env").output
    assert f"ZC_PLANTED_TOKEN={SECRET}" in passed


@pytest.mark.req("POL-SHELL-09")
def test_standard_input_is_closed(ws: Path) -> None:
    assert run(make_tool(ws), "cat").output == ""


@pytest.mark.req("POL-SHELL-13")
def test_a_spawn_failure_is_reported(tmp_path: Path) -> None:
    result = run(make_tool(tmp_path / "missing-ws"), "ls")
    assert result.error is not None and result.error.startswith("Failed to spawn command: ")


@pytest.mark.req("POL-SHELL-01", "POL-SHELL-06", "POL-APPROVE-12")
def test_the_runtime_approval_gates_high_risk_commands(ws: Path) -> None:
    tool = make_tool(ws)
    (ws / "doomed").write_text("x")
    refused = run(tool, "rm doomed")
    assert (
        refused.error == "Command requires explicit approval (approved=true): high-risk operation"
    )
    assert (ws / "doomed").exists()
    assert run(tool, "rm doomed", approved=True).success
    assert not (ws / "doomed").exists()


@pytest.mark.req("POL-SHELL-01", "POL-SHELL-02")
def test_a_refused_command_spawns_nothing(ws: Path) -> None:
    result = run(make_tool(ws), "echo x > made")
    assert result.error == "Command not allowed by security policy: echo x > made"
    assert not (ws / "made").exists()


def _attacks(ws: Path) -> list[str]:
    outside = ws.parent / "outside"
    return [
        "cat ../outside/secret",
        f"cat {outside}/secret",
        "cat link-to-secret",
        "cat ./link-to-secret",
        "cat 'link-to-secret'",
        'cat "../outside/secret"',
        "cat sub/../../outside/secret",
        "cat ~/secret",
        "cat ~",
        "X=../outside/secret cat a.txt",
        f"grep -h . --file={outside}/secret a.txt",
        f"grep -h . -f{outside}/secret a.txt",
        "head dir-out/secret",
        "cat dir-out/*",
        "cat link*",
        "cat l?nk-to-secret",
        "cat {link-to-secret,a.txt}",
        "cat a.txt; cat ../outside/secret",
        "cat a.txt && cat link-to-secret",
        "ls | cat link-to-secret",
        "cat $HOME/secret",
        'cat "$HOME/secret"',
        "cat ~root/secret",
        "cat `echo link-to-secret`",
        'cat "dir"-out/secret',
        "cat < link-to-secret",
    ]


@pytest.mark.req("POL-SHELL-08", "ACP-SEC-09", "POL-AUTO-04")
@pytest.mark.parametrize("level", ["supervised", "full"])
@pytest.mark.parametrize("index", range(26))
def test_planted_secret_outside_the_workspace_never_leaks(
    ws: Path, monkeypatch: pytest.MonkeyPatch, level: str, index: int
) -> None:
    outside = ws.parent / "outside"
    monkeypatch.setenv("HOME", str(outside))
    # At full, workspace_only is off and only forbidden_paths protect the secret.
    forbidden = (str(outside),) if level == "full" else ()
    tool = make_tool(ws, level=level, forbidden=forbidden)
    command = _attacks(ws)[index]
    result = run(tool, command)
    assert not result.success, command
    assert SECRET not in result.output and SECRET not in (result.error or "")
    assert result.error is not None
    assert result.error.startswith(("Path blocked by security policy: ", "Command not allowed"))


@pytest.mark.req("POL-SHELL-08")
def test_attack_table_is_fully_parametrised(ws: Path) -> None:
    assert len(_attacks(ws)) == 26


@pytest.mark.req("POL-SHELL-08")
def test_paths_inside_the_workspace_still_work(ws: Path) -> None:
    (ws / "sub" / "b.txt").write_text("beta\n")
    (ws / "link-in").symlink_to(ws / "a.txt")
    tool = make_tool(ws)
    assert run(tool, f"cat {ws}/a.txt").output == "alpha\n"
    assert run(tool, "cat sub/../a.txt").success is False  # `..` is refused by text (POL-FS-02)
    assert run(tool, "cat link-in").output == "alpha\n"
    assert run(tool, "cat sub/*").output == "beta\n"
    assert run(tool, "ls /dev/null").output == "/dev/null\n"


@pytest.mark.req("POL-SHELL-08", "POL-AUTO-04")
def test_full_level_reads_outside_paths_that_are_not_forbidden(ws: Path) -> None:
    free = ws.parent / "free.txt"
    free.write_text("free\n")
    tool = make_tool(ws, level="full", forbidden=(str(ws.parent / "outside"),))
    assert run(tool, f"cat {free}").output == "free\n"


@pytest.mark.req("POL-SHELL-08")
def test_a_new_name_under_a_linked_directory_is_refused(ws: Path) -> None:
    tool = make_tool(ws, commands=("touch",))
    result = run(tool, "touch dir-out/planted", approved=True)
    assert result.error == "Path blocked by security policy: dir-out/planted"
    assert not (ws.parent / "outside" / "planted").exists()


@pytest.mark.req("POL-SHELL-08")
def test_a_dangling_link_pointing_outside_is_refused(ws: Path) -> None:
    (ws / "dangling").symlink_to(ws.parent / "outside" / "not-yet")
    tool = make_tool(ws, commands=("touch",))
    result = run(tool, "touch dangling", approved=True)
    assert result.error == "Path blocked by security policy: dangling"
    assert not (ws.parent / "outside" / "not-yet").exists()
