"""Starting one command for the model, confined by the backend in force (ZC-SBX-01..05).

Goals: one entry point for every process run on the model's behalf (the shell tool and
skills' commands), the same handle whatever the backend, and nothing left behind. Plan:
`start()` chooses the backend, makes the plan (plan.py) with a private temporary directory,
and starts the command through the fork server (`landlock`), `bwrap`, or plainly (`none`);
the caller reads the two pipes and waits on the handle. Caveat: with no backend in force the
command runs unconfined, as before this layer existed; `required = true` refuses instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Protocol

from zeroclaw_ref.core.affinity import unpinned
from zeroclaw_ref.policy.security import SecurityPolicy

from . import probe
from .forkserver import FORK_SERVER, SandboxStartError
from .plan import Plan, make_plan

SHELL = "/bin/sh"


class Handle(Protocol):
    """A started command."""

    pid: int

    def wait(self, timeout: float | None) -> int | None:
        """The exit code (minus the signal number when killed), or None on timeout."""

    def kill(self) -> None:
        """Kill the command's whole process group (or sandbox)."""

    def close(self) -> None:
        """Kill whatever is left and release the handle."""


class _Plain:
    """A command started with Popen (backends `bwrap` and `none`)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.pid = process.pid

    def wait(self, timeout: float | None) -> int | None:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def close(self) -> None:
        # Kill the group even after a normal exit: a backgrounded grandchild holding the
        # pipes open would otherwise keep the readers (and the turn) waiting.
        self.kill()
        self.process.wait()


class Started:
    """A started command: its handle, the read ends of its output, and its cleanup."""

    def __init__(self, handle: Handle, stdout: int, stderr: int, tmp: Path | None) -> None:
        self.handle = handle
        self.stdout = stdout
        self.stderr = stderr
        self._tmp = tmp

    def close(self) -> None:
        """Kill what is left, then remove the private temporary directory."""
        self.handle.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)


class Refused(Exception):
    """The command may not run: no sandbox while one is required, or it failed to start."""


def start(security: SecurityPolicy, command: str, environment: dict[str, str]) -> Started:
    """Start `/bin/sh -c command` in the workspace, confined by the backend in force.

    Raises:
        Refused: the sandbox is required but unavailable, or could not be set up.
        OSError: the command could not be spawned (unconfined path).
    """
    choice = probe.choose(security.sandbox)
    if choice.backend == "landlock" and not _proved.is_set():
        choice = _prove_landlock(security)
    if choice.refusal is not None:
        raise Refused(choice.refusal)
    if choice.backend == "none":
        return _popen([SHELL, "-c", command], security, environment, None)
    tmp = Path(tempfile.mkdtemp(prefix="zeroclaw-cmd-"))
    try:
        # [ZC-SBX-04] the command's temporary files and home live in its private directory.
        environment = {**environment, "TMPDIR": str(tmp), "HOME": str(tmp)}
        plan = make_plan(security, tmp, environment)
        if choice.backend == "bwrap":
            argv = [*bwrap_argv(plan, security.workspace_dir), SHELL, "-c", command]
            return _popen(argv, security, environment, tmp)
        return _forked(plan, security, command, environment, tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _popen(
    argv: list[str], security: SecurityPolicy, environment: dict[str, str], tmp: Path | None
) -> Started:
    with unpinned():  # the command gets every CPU, not the server's pin
        process = subprocess.Popen(
            argv,
            cwd=security.workspace_dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            start_new_session=True,  # its own process group, killed as one [DESIGN §7.6]
        )
    assert process.stdout is not None and process.stderr is not None
    out, err = os.dup(process.stdout.fileno()), os.dup(process.stderr.fileno())
    process.stdout.close()
    process.stderr.close()
    return Started(_Plain(process), out, err, tmp)


def landlock_words(plan: Plan) -> list[str]:
    """The fork server's options for `plan`."""
    words: list[str] = []
    for flag, paths in (("--ro", plan.read_only), ("--rw", plan.writable),
                        ("--mask", plan.masks), ("--expose", plan.exposed)):  # fmt: skip
        for path in paths:
            words += [flag, path]
    if not plan.network:
        words.append("--no-net")
    return words


def _forked(
    plan: Plan, security: SecurityPolicy, command: str, environment: dict[str, str], tmp: Path
) -> Started:
    words = [*landlock_words(plan), "--cwd", str(security.workspace_dir)]
    for name, value in environment.items():
        words += ["--env", f"{name}={value}"]
    words += ["--", SHELL, "-c", command]
    if any("\0" in w for w in words):
        raise Refused("Command refused: it contains a NUL character")
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        with Path(os.devnull).open("rb") as null:
            handle = FORK_SERVER.run(words, null.fileno(), out_w, err_w)
    except SandboxStartError as exc:
        for fd in (out_r, err_r):
            os.close(fd)
        raise Refused(f"Command refused: the sandbox could not start ({exc})") from exc
    finally:
        os.close(out_w)
        os.close(err_w)
    return Started(handle, out_r, err_r, tmp)


_proved = threading.Event()
_PROBE_WORDS = ["--ro", "/usr", "--rw", "/dev/null", "--mask", "/etc", "--no-net"]


def _prove_landlock(security: SecurityPolicy) -> probe.Choice:
    """Before the first command, confine a probe for real; a failure demotes `landlock`
    for this process and the choice is made again (a weaker backend, or a refusal)."""
    problem = FORK_SERVER.probe(_PROBE_WORDS)
    if problem is None:
        _proved.set()
    else:
        probe.demote("landlock", problem)
    return probe.choose(security.sandbox)


def _inside(path: str, parent: str) -> bool:
    return path.startswith(parent.rstrip("/") + "/")


def bwrap_argv(plan: Plan, workspace: Path) -> list[str]:
    """The Bubblewrap command line for `plan` (before the command itself)."""
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]  # fmt: skip
    if plan.network:
        argv.append("--share-net")
    argv += [a for link, target in plan.links for a in ("--symlink", target, link)]
    binds = [(p, "--ro-bind") for p in plan.read_only if p != "/proc"]
    binds += [(p, "--bind") for p in plan.writable if not p.startswith("/dev/")]
    for path, flag in sorted(binds, key=lambda b: (b[0].count("/"), b[0])):
        argv += [flag, path, path]
    masks = [m for m in plan.masks if m not in plan.outside]  # a new root hides the rest
    directories = [m for m in masks if Path(m).is_dir()]
    for mask in masks:
        argv += ["--tmpfs", mask] if mask in directories else ["--ro-bind", "/dev/null", mask]
    for root in (e for e in plan.exposed if any(_inside(e, m) for m in masks)):
        # bound back before the masks turn read-only
        flag = "--bind" if root in plan.writable else "--ro-bind"
        argv += [flag, root, root]
    for mask in directories:
        argv += ["--remount-ro", mask]
    return [*argv, "--chdir", str(workspace), "--"]
