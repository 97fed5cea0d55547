"""Process groups of stdio MCP servers: signal one, wait for it to empty (mcp.md §3.7).

Why: a server started through a launcher (`npx -y <package>` runs `npm exec`, which runs a
shell, which runs `node`) is a tree, and signalling only the direct child leaves the real server
running after the agent has gone. Each child therefore leads its own process group
(`start_new_session=True`), and the close sequence of MCP-STDIO-23 is applied to the whole
group, so that every grace period is granted to every member.

Plan: members are found in `/proc` (zombies do not count: they have exited, and an orphan's
zombie lingers until whoever adopted it reaps it). Waiting uses one pidfd per member and
`select.poll`, so that no code polls on a timer (DESIGN §7.10): the wait returns as soon as a
member exits, then the group is looked at again. Where `/proc` or pidfds are missing the wait
gives up at once and the caller escalates, which is still bounded and still kills the group.
Caveats: a member that starts a session of its own has left the group and is out of reach
(MCP-STDIO-24 covers the reader it may hold open).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from pathlib import Path

_PROC = Path("/proc")


def signal_group(pgid: int, signum: signal.Signals) -> bool:
    """Send `signum` to every process of the group; False when the group is already gone."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        # A member changed its credentials (a setuid helper): the others still got the signal.
        return True
    return True


def live_members(pgid: int) -> list[int] | None:
    """The pids of the group that have not exited, or None when they cannot be listed."""
    try:
        entries = list(os.scandir(_PROC))
    except OSError:
        return None
    found: list[int] = []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_bytes()
        except OSError:
            continue  # exited (and was reaped) while we looked
        # Fields after the command name, which is in parentheses and may contain anything.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X"):
            found.append(int(entry.name))
    return found


def wait_group(pgid: int, deadline: float) -> bool:
    """Wait until no member of the group is running, at most until `deadline` (monotonic).

    Returns True when the group is empty, False on timeout or when it cannot be watched.
    """
    while True:
        members = live_members(pgid)
        if members is None:
            return not _exists(pgid)
        if not members:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if not _wait_any(members, left):
            return False


def _exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_any(pids: list[int], timeout: float) -> bool:
    """Block until one of `pids` exits or `timeout` passes; False when pidfds are missing."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return False
    fds: list[int] = []
    try:
        for pid in pids:
            try:
                fds.append(opener(pid))
            except ProcessLookupError:
                return True  # already gone: look at the group again
            except OSError:
                return False  # no pidfd support here
        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLIN)
        poller.poll(max(1, int(timeout * 1000)))
        return True
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
