"""The sandbox layer directly: backend choice, refusals, network, descriptors, the plan, the
end of every process, and the Bubblewrap backend."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_peer, wait_for
from zeroclaw_ref.config.model import AutonomyConfig, SandboxConfig
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.sandbox import launch, probe
from zeroclaw_ref.sandbox.plan import etc_secrets, make_plan
from zeroclaw_ref.tools.shell import run_checked

MARKER = "zc-backend-marker"
ANY_COMMAND = AutonomyConfig(
    level="full", allowed_commands=("*",), block_high_risk_commands=False, forbidden_paths=()
)


@pytest.fixture(autouse=True)
def _fresh_probe() -> Iterator[None]:
    probe.reset_for_tests()
    yield
    probe.reset_for_tests()


def _policy(
    workspace: Path, backend: str = "landlock", *, network: bool = False, required: bool = False,
    hidden: tuple[Path, ...] = (), profile: AutonomyConfig = ANY_COMMAND,
    agent_ws: Path | None = None,
) -> SecurityPolicy:  # fmt: skip
    sandbox = SandboxConfig(backend=backend, required=required, network=network)
    return SecurityPolicy.build(profile, workspace, agent_ws or workspace, sandbox, hidden)


def _run(policy: SecurityPolicy, command: str, timeout: int = 20) -> tuple[bool, str]:
    result = run_checked(policy, command, True, timeout, CancelToken())
    return result.success, result.output if result.success else str(result.error)


def _survivors() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and MARKER.encode() in (entry / "cmdline").read_bytes():
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(entry.name)
        except OSError:
            continue
    return found


# --- choice and refusal (ZC-SBX-01, ZC-SBX-07) ----------------------------------------------


@pytest.mark.req("ZC-SBX-01", "ZC-SBX-07")
def test_auto_picks_the_strongest_backend_and_falls_back_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(probe._PROBES, "landlock", lambda: None)
    monkeypatch.setitem(probe._PROBES, "bwrap", lambda: None)
    assert probe.choose(SandboxConfig()).backend == "landlock"
    probe.reset_for_tests()
    monkeypatch.setitem(probe._PROBES, "landlock", lambda: "no Landlock (ENOSYS)")
    assert probe.choose(SandboxConfig()).backend == "bwrap"
    probe.reset_for_tests()
    monkeypatch.setitem(probe._PROBES, "bwrap", lambda: "bwrap is not installed")
    with caplog.at_level(logging.WARNING, logger="zeroclaw_ref.sandbox.probe"):
        for _ in range(3):
            choice = probe.choose(SandboxConfig())
            probe.choose(SandboxConfig(network=True))
    assert (choice.backend, choice.refusal) == ("none", None)
    assert "no Landlock (ENOSYS)" in str(choice.problem)
    assert len(caplog.records) == 1, "the fallback warns once, not per command"
    assert "unconfined" in caplog.records[0].getMessage()


@pytest.mark.req("ZC-SBX-07")
def test_a_required_sandbox_that_is_missing_refuses_every_command_and_spawns_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(probe._PROBES, "landlock", lambda: "the kernel offers no Landlock (ENOSYS)")
    monkeypatch.setitem(probe._PROBES, "bwrap", lambda: "bwrap (Bubblewrap) is not installed")

    def no_spawn(*_: object, **__: object) -> None:
        raise AssertionError("spawned although the sandbox is required and missing")

    monkeypatch.setattr(launch.subprocess, "Popen", no_spawn)
    monkeypatch.setattr(launch.FORK_SERVER, "run", no_spawn)
    ok, text = _run(_policy(tmp_path, "auto", required=True), "touch made")
    assert not ok
    assert text.startswith("Command refused: no OS sandbox is available")
    assert "the kernel offers no Landlock (ENOSYS)" in text
    assert not (tmp_path / "made").exists()


@pytest.mark.req("ZC-SBX-06")
def test_describe_reports_the_backend_and_why_a_stronger_one_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert probe.describe(SandboxConfig(backend="none")) == {"backend": "none", "required": False}
    monkeypatch.setitem(probe._PROBES, "landlock", lambda: "user namespaces are disabled")
    monkeypatch.setitem(probe._PROBES, "bwrap", lambda: None)
    assert probe.describe(SandboxConfig(required=True)) == {
        "backend": "bwrap",
        "required": True,
        "network": False,
        "unavailable": "landlock: user namespaces are disabled",
    }


# --- the landlock backend, for real -----------------------------------------------------------


@pytest.fixture
def landlock() -> None:
    require_peer("landlock")


@pytest.mark.req("ZC-SBX-08")
@pytest.mark.usefixtures("landlock")
def test_without_network_a_command_cannot_connect_or_listen(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        server.settimeout(5)
        code = (
            "import socket\n"
            f"try: socket.create_connection(('127.0.0.1', {port}), timeout=5); print('CONNECTED')\n"
            "except OSError as e: print('REFUSED', e.errno)\n"
            "try: socket.create_server(('127.0.0.1', 0)); print('LISTENING')\n"
            "except OSError as e: print('NO LISTEN', e.errno)\n"
        )
        (tmp_path / "net.py").write_text(code)
        ok, text = _run(_policy(tmp_path), "python3 net.py")
        assert ok, text
        assert "REFUSED 13" in text and "NO LISTEN 13" in text
        ok, text = _run(_policy(tmp_path, network=True), "python3 net.py")
        assert ok and "CONNECTED" in text and "LISTENING" in text, text
        server.accept()[0].close()


@pytest.mark.req("ZC-SBX-09")
@pytest.mark.usefixtures("landlock")
def test_the_command_inherits_no_descriptor_and_no_secret_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZEROCLAW_providers__x__api_key", "LEAKED-OVERRIDE")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "LEAKED-PROVIDER")
    read_end, write_end = os.pipe()
    os.set_inheritable(read_end, True)  # a careless descriptor of the server's
    os.set_inheritable(write_end, True)
    try:
        (tmp_path / "fds.py").write_text(
            "import os\nprint(sorted(int(n) for n in os.listdir('/proc/self/fd')))\n"
            "print(sorted(os.environ))\n"
        )
        ok, text = _run(_policy(tmp_path), "python3 fds.py")
    finally:
        os.close(read_end)
        os.close(write_end)
    assert ok, text
    fds, names = text.splitlines()[:2]
    assert fds == "[0, 1, 2, 3]"  # the three streams and listdir's own descriptor
    assert "LEAKED" not in text
    assert set(eval(names)) <= {"PATH", "HOME", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "USER",
                                "SHELL", "TMPDIR", "PWD"}  # fmt: skip


DETACH = (
    "import os, sys, time\n"
    "if os.fork(): sys.exit(0)\n"
    "os.setsid()\n"
    "if os.fork(): sys.exit(0)\n"
    "time.sleep(120)\n"
)


@pytest.mark.req("ZC-SBX-05")
@pytest.mark.usefixtures("landlock")
@pytest.mark.parametrize("ending", ["normal", "timeout", "cancel"])
def test_no_process_of_the_command_outlives_the_call(tmp_path: Path, ending: str) -> None:
    (tmp_path / "detach.py").write_text(DETACH)
    policy = _policy(tmp_path)
    command = f"python3 detach.py {MARKER}"
    if ending == "timeout":
        command += f"; python3 detach.py {MARKER}-again; sleep 60"
    if ending == "cancel":
        command += "; sleep 60"
        cancel = CancelToken()
        results = []
        runner = threading.Thread(
            target=lambda: results.append(run_checked(policy, command, True, 30, cancel))
        )
        runner.start()
        # Cancel once the detached grandchild exists, i.e. while the command runs.
        wait_for(lambda: bool(_survivors()), "the grandchild to start", 10.0)
        cancel.fire()
        runner.join(timeout=20)
        assert results and results[0].error == "Command cancelled"
    else:
        result = run_checked(policy, command, True, 1 if ending == "timeout" else 20, CancelToken())
        if ending == "timeout":
            assert result.error == "Command timed out after 1s and was killed"
        else:
            assert result.success, result.error
    wait_for(lambda: not _survivors(), "the detached grandchildren to be gone", 10.0,
             lambda: str(_survivors()))  # fmt: skip


@pytest.mark.req("ZC-SBX-03", "ZC-SBX-04")
@pytest.mark.usefixtures("landlock")
def test_hidden_directories_inside_the_workspace_are_masked_but_nested_roots_stay(
    tmp_path: Path,
) -> None:
    config = tmp_path / ".zeroclaw"
    agent_ws = config / "agents" / "a" / "workspace"
    agent_ws.mkdir(parents=True)
    (agent_ws / "skill.txt").write_text("skill-visible")
    (config / ".secret_key").write_text("SECRET")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "key").write_text("FORBIDDEN")
    profile = dataclasses.replace(ANY_COMMAND, forbidden_paths=(str(tmp_path / "private"),))
    policy = _policy(tmp_path, hidden=(config, config / "data"), profile=profile, agent_ws=agent_ws)
    _, text = _run(policy, "ls -a .zeroclaw; cat .zeroclaw/agents/a/workspace/skill.txt;"
                            " cat .zeroclaw/.secret_key; ls private; cat private/key;"
                            " echo x > .zeroclaw/new; echo $TMPDIR")  # fmt: skip
    assert "skill-visible" in text
    assert "SECRET" not in text and "FORBIDDEN" not in text
    assert not (config / "new").exists()
    tmp = text.strip().splitlines()[-1]
    assert tmp.startswith("/") and not Path(tmp).exists(), "the private tmp is removed after"


def test_the_plan_masks_only_inside_allowed_roots_and_hides_etc_secrets(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "inner").mkdir(parents=True)
    profile = AutonomyConfig(forbidden_paths=("/tmp", "/etc", str(workspace / "inner")))
    policy = _policy(workspace, profile=profile)
    plan = make_plan(policy, tmp_path / "t", {"PATH": "/usr/bin:/bin:/", "HOME": str(tmp_path)})
    assert str(workspace / "inner") in plan.masks
    # /tmp contains the workspace: as a forbidden path it is not masked (allowed roots win), but
    # as a directory outside every allowed tree it is hidden, the workspace bound back into it.
    assert "/tmp" in plan.outside and str(workspace) in plan.exposed
    assert "/tmp" not in [m for m in plan.masks if m not in plan.outside]
    assert "/" not in plan.read_only and str(tmp_path) not in plan.read_only
    assert str(workspace) in plan.writable and "/etc" in plan.read_only
    assert set(etc_secrets()) <= set(plan.masks)
    assert not any(p.endswith(".pub") for p in etc_secrets())


# --- bwrap ----------------------------------------------------------------------------------


@pytest.mark.req("ZC-SBX-01", "ZC-SBX-02", "ZC-SBX-04", "ZC-SBX-05")
def test_the_bwrap_backend_confines_the_same_way(tmp_path: Path) -> None:
    require_peer("bwrap")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside.txt").write_text("OUTSIDE")
    (workspace / "link").symlink_to(tmp_path / "outside.txt")
    (workspace / "detach.py").write_text(DETACH)
    policy = _policy(workspace, "bwrap")
    assert probe.choose(policy.sandbox).backend == "bwrap"
    _, text = _run(policy, "cat link; cat .?/outside.txt; ls /proc; echo made > made.txt;"
                            f" python3 detach.py {MARKER}; echo done")  # fmt: skip
    assert "OUTSIDE" not in text and "done" in text, text
    assert (workspace / "made.txt").read_text() == "made\n"
    assert str(os.getpid()) not in text.split()
    wait_for(lambda: not _survivors(), "bwrap's processes to be gone", 10.0)


@pytest.mark.req("ZC-SBX-02", "POL-SHELL-08")
@pytest.mark.usefixtures("landlock")
def test_swapping_a_checked_file_for_a_link_during_the_command_leaks_nothing(
    tmp_path: Path,
) -> None:
    """The argument check sees a plain file; a racer swaps it (or its directory) for a link to
    a secret outside while the command runs. 150 rounds each; the kernel, not the check,
    decides what the command reads."""
    workspace = tmp_path / "ws"
    (workspace / "d").mkdir(parents=True)
    secret_dir = tmp_path / "outside"
    secret_dir.mkdir()
    (secret_dir / "f").write_text("RACED-SECRET")
    policy = _policy(workspace)
    stop = threading.Event()

    def racer(target: Path, decoy: Path) -> None:
        while not stop.is_set():
            staged = target.with_name(target.name + ".tmp")
            with contextlib.suppress(OSError):
                staged.unlink() if staged.is_symlink() or staged.is_file() else None
                staged.symlink_to(decoy)
                staged.replace(target)  # atomic: target is now a link outside
            with contextlib.suppress(OSError):
                plain = target.with_name(target.name + ".plain")
                if decoy.is_dir():
                    plain.mkdir(exist_ok=True)
                    (plain / "f").write_text("plain")
                else:
                    plain.write_text("plain")
                plain.replace(target)  # and back to a plain entry

    leaks = 0
    for target, decoy, command in (
        (workspace / "f", secret_dir / "f", "cat f"),
        (workspace / "d", secret_dir, "cat d/f"),
    ):
        if decoy.is_dir():
            target.mkdir(exist_ok=True)
            (target / "f").write_text("plain")
        else:
            target.write_text("plain")
        stop.clear()
        thread = threading.Thread(target=racer, args=(target, decoy), daemon=True)
        thread.start()
        try:
            for _ in range(150):
                _, text = _run(policy, command)
                leaks += "RACED-SECRET" in text
        finally:
            stop.set()
            thread.join(timeout=10)
    assert leaks == 0


@pytest.mark.req("ZC-SBX-01")
@pytest.mark.usefixtures("landlock")
def test_a_workspace_whose_name_is_not_utf8_is_confined_too(tmp_path: Path) -> None:
    workspace = tmp_path / os.fsdecode(b"ws-\xff")
    workspace.mkdir()
    (workspace / "inside.txt").write_text("inside-ok")
    ok, text = _run(_policy(workspace), "cat inside.txt; pwd")
    assert ok and "inside-ok" in text, text


@pytest.mark.req("ZC-SBX-01")
@pytest.mark.usefixtures("landlock")
def test_concurrent_commands_each_get_their_own_output_and_status(tmp_path: Path) -> None:
    """The gateway runs many sessions: one fork server serves them all, each request with its
    own reply socket and streams."""
    policy = _policy(tmp_path)
    results: dict[int, tuple[bool, str]] = {}

    def one(n: int) -> None:
        results[n] = _run(policy, f"echo out-{n}; echo err-{n} >&2; exit {n % 3}")

    threads = [threading.Thread(target=one, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(results) == list(range(12))
    for n, (ok, text) in results.items():
        assert ok == (n % 3 == 0), text
        assert f"out-{n}" in text and f"err-{n}" in text
        assert not any(f"out-{m}\n" in text for m in range(12) if m != n)
        if not ok:
            assert text.startswith(f"Command exited with status {n % 3}")


@pytest.mark.req("ZC-SBX-10")
@pytest.mark.parametrize("backend", ["landlock", "bwrap"])
def test_unix_sockets_outside_the_allowed_trees_are_out_of_reach(
    tmp_path: Path, backend: str
) -> None:
    """Connecting to a UNIX socket is no file access, so an allow-list of reads alone would
    not stop it (think /run/docker.sock or an ssh-agent socket); the rest of the file system
    is hidden, and abstract sockets are scoped to the sandbox."""
    require_peer(backend)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside_path = str(tmp_path / "agent.sock")
    abstract = f"\0zc-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX) as outside, socket.socket(socket.AF_UNIX) as hidden:
        outside.bind(outside_path)
        outside.listen()
        hidden.bind(abstract)
        hidden.listen()
        (workspace / "targets.txt").write_text(f"{outside_path}\n@{abstract[1:]}")
        (workspace / "sock.py").write_text(
            "import socket\n"
            "for t in open('targets.txt').read().split('\\n'):\n"
            "    s = socket.socket(socket.AF_UNIX)\n"
            "    try: s.connect(t.replace('@', '\\0', 1)); print('CONNECTED', t)\n"
            "    except OSError as e: print('REFUSED', t, e.errno)\n"
        )
        ok, text = _run(_policy(workspace, backend), "python3 sock.py")
    assert ok, text
    assert "CONNECTED" not in text and text.count("REFUSED") == 2, text
