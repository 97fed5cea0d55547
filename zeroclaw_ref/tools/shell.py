"""The `shell` tool: one policy-checked command in the workspace (policy.md §4.3).

Goals: nothing is spawned before the command policy (POL-SHELL-02…07) and the path scan
(POL-SHELL-08) have passed; the child cannot outlive its timeout or its turn's cancellation
(DESIGN §7.6); memory stays bounded whatever the child prints. Plan: the child runs in its own
session (so its own process group) with a scrubbed environment; two reader threads keep at
most 1 MiB of each stream and drain the rest; the cancel token's callback and the timeout both
kill the whole group. The path scan is a lexical barrier over the command's words; the second
barrier is the OS sandbox every command runs in (zeroclaw_ref/sandbox, ZC-SBX-01), since an
allowed interpreter running a workspace script could otherwise read what the OS lets it.
"""

from __future__ import annotations

import glob
import itertools
import os
import threading
from pathlib import Path
from typing import IO, ClassVar

from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.policy import shell_rules
from zeroclaw_ref.policy.security import PathRefusal, SecurityPolicy, canonicalise
from zeroclaw_ref.sandbox import launch
from zeroclaw_ref.tools.base import Tool, ToolContext, ToolResult, argument, missing
from zeroclaw_ref.tools.catalogue import ToolSettings

CAPTURE_LIMIT = 1048576  # [POL-SHELL-11]
STDOUT_MARKER = "\n... [output truncated at 1MB]"
STDERR_MARKER = "\n... [stderr truncated at 1MB]"
# [POL-SHELL-09] the only inherited variables, besides shell_env_passthrough.
BASE_ENV: tuple[str, ...] = (
    "PATH", "HOME", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "USER", "SHELL", "TMPDIR",
)  # fmt: skip
# Design: a glob matching more than this many names is refused rather than checked name by name.
GLOB_LIMIT = 1000
_CHUNK = 65536
# Design: no spec text exists for a cancelled call; the engine reports the cancelled turn itself.
CANCELLED_TEXT = "Command cancelled"


class _Capture:
    """Reads one stream to its end on a thread, keeping only the first CAPTURE_LIMIT bytes."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.data = bytearray()
        self.truncated = False
        self._stream = stream
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        with self._stream:
            while chunk := os.read(self._stream.fileno(), _CHUNK):
                room = CAPTURE_LIMIT - len(self.data)
                if len(chunk) > room:
                    self.truncated = True
                self.data += chunk[: max(room, 0)]

    def text(self, marker: str) -> str:
        decoded = bytes(self.data).decode("utf-8", errors="replace")
        return decoded + marker if self.truncated else decoded


def _environment(passthrough: tuple[str, ...]) -> dict[str, str]:
    """[POL-SHELL-09] the child's environment: the fixed names plus passthrough, when set."""
    # Design: reading os.environ here is the one exception to "environment only in config/":
    # POL-SHELL-09 defines the child's environment as a filtered copy of the process's.
    return {n: os.environ[n] for n in (*BASE_ENV, *passthrough) if n in os.environ}


class ShellTool:
    """The `shell` tool bound to one execution's SecurityPolicy."""

    name: ClassVar[str] = "shell"
    description: ClassVar[str] = (
        "Run a shell command in the workspace directory and return its output."
    )
    # [POL-APPROVE-12] `approved` is injected by the runtime and never offered to the model.
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The command line to run."}},
        "required": ["command"],
    }
    act: ClassVar[bool] = True

    def __init__(self, security: SecurityPolicy, settings: ToolSettings) -> None:
        self.security = security
        self.settings = settings

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        """[POL-SHELL-01] validate, then run; every refusal is a failed result."""
        command = argument(arguments, "command")
        if not isinstance(command, str):
            return missing("command")  # [POL-TOOL-04]
        approved = argument(arguments, "approved") is True
        timeout = self.settings.shell_timeout_secs
        return run_checked(self.security, command, approved, timeout, context.cancel)

    def path_refusal(self, command: str) -> str | None:
        """[POL-SHELL-08] the refusal for the first path-like token that fails the read check."""
        return _PathScan(self.security).refusal(command)


def run_checked(
    security: SecurityPolicy, command: str, approved: bool, timeout_secs: int, cancel: CancelToken
) -> ToolResult:
    """Check `command` against the command policy and the path scan, then run it like `shell`.

    Shared by `shell` and the skill tools (POL-SKILL-07): `approved` is the runtime-owned
    approval value, never the model's. Every refusal, the timeout and a cancellation come
    back as failed results; nothing is spawned before both checks have passed.
    """
    refusal = shell_rules.command_refusal(command, security, approved)
    if refusal is None:
        refusal = _PathScan(security).refusal(command)
    if refusal is not None:
        return ToolResult.fail(refusal)
    if cancel.is_set():
        return ToolResult.fail(CANCELLED_TEXT)
    return _run(security, command, timeout_secs, cancel)


class _PathScan:
    """[POL-SHELL-08] the path scan of one command against one SecurityPolicy."""

    def __init__(self, security: SecurityPolicy) -> None:
        self.security = security

    def refusal(self, command: str) -> str | None:
        """The refusal for the first path-like token that fails the read check, or None."""
        tokens = shell_rules.path_tokens(command, self._through_link)
        return shell_rules.path_refusal(tokens, self._allows)

    def _through_link(self, token: str) -> bool:
        """A relative name whose existing part goes through a symbolic link (POL-SHELL-08)."""
        # Design: the spec names existing entries; a not-yet-existing name under a linked
        # directory (`touch dir-out/new`) would write outside too, so its existing ancestor
        # decides.
        if "\x00" in token:
            return True
        try:
            real_ws = Path(os.path.realpath(self.security.workspace_dir))
            lexical = Path(os.path.normpath(real_ws / token))
            # The non-strict realpath also follows a dangling link, which canonicalise keeps.
            loose = Path(os.path.realpath(self.security.workspace_dir / token))
            return canonicalise(self.security.workspace_dir / token) != lexical or loose != lexical
        except (OSError, ValueError):
            return True

    def _allows(self, token: shell_rules.PathToken) -> bool:
        if not self._readable(token.text):
            return False
        if not token.glob:
            return True
        # Design: the shell expands globs after this check; every name it could produce must
        # pass too, or `cat l*` would read through a link the token never named.
        pattern = str(_expanded(token.text))
        root = None if pattern.startswith("/") else self.security.workspace_dir
        try:
            # Path.glob cannot take an absolute pattern, hence glob.iglob.
            found = glob.iglob(pattern, root_dir=root)  # noqa: PTH207
            matches = list(itertools.islice(found, GLOB_LIMIT + 1))
        except (OSError, ValueError):
            return False
        return len(matches) <= GLOB_LIMIT and all(self._readable(m) for m in matches)

    def _readable(self, text: str) -> bool:
        """The §4.2 read check, repeated on the non-strict realpath so that a dangling link
        (which the strict canonicalisation leaves unresolved) cannot point outside either."""
        checked = self.security.check_path(text)
        if isinstance(checked, PathRefusal):
            return False
        loose = Path(os.path.realpath(self.security.workspace_dir / _expanded(text)))
        return not isinstance(self.security.decide(loose, text), PathRefusal)


def _run(security: SecurityPolicy, command: str, timeout: int, cancel: CancelToken) -> ToolResult:
    """[POL-SHELL-09…13] spawn (confined, ZC-SBX-01), wait under the timeout and the cancel
    token, report."""
    try:
        started = launch.start(security, command, _environment(security.shell_env_passthrough))
    except launch.Refused as exc:
        return ToolResult.fail(str(exc))
    except OSError as exc:
        return ToolResult.fail(f"Failed to spawn command: {exc}")  # [POL-SHELL-13]
    handle = started.handle
    out = _Capture(os.fdopen(started.stdout, "rb", buffering=0))
    err = _Capture(os.fdopen(started.stderr, "rb", buffering=0))
    unregister = cancel.add_callback(handle.kill)
    try:
        code = handle.wait(timeout)
    finally:
        unregister()
    started.close()  # [ZC-SBX-05] nothing of the command outlives the call
    out.thread.join()
    err.thread.join()
    if code is None:
        return ToolResult.fail(f"Command timed out after {timeout}s and was killed")
    if cancel.is_set():
        return ToolResult.fail(CANCELLED_TEXT)
    return _result(code, out.text(STDOUT_MARKER), err.text(STDERR_MARKER))


def _expanded(text: str) -> Path:
    """`~` expanded as the path check does it (POL-FS-03)."""
    return Path(text).expanduser() if text.startswith("~") else Path(text)


def _result(code: int, stdout: str, stderr: str) -> ToolResult:
    """[POL-SHELL-12] both streams reach the model, on success and on failure."""
    if code == 0:
        return ToolResult.ok(stdout + (f"\n[stderr]\n{stderr}" if stderr else ""))
    error = f"Command exited with status {code}"
    if stdout:
        error += f"\nstdout:\n{stdout}"
    if stderr:
        error += f"\nstderr:\n{stderr}"
    return ToolResult.fail(error)


def tools(security: SecurityPolicy, settings: ToolSettings) -> list[Tool]:
    """The tools this module contributes to the built-in universe."""
    return [ShellTool(security, settings)]
