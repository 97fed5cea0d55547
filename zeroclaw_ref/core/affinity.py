"""Keep the stdio ACP server's threads on one CPU, and never pass that pin on to children.

Why this trick stays (issue 17 item 3): every prompt crosses three threads (reader → session
worker → writer, acp.md ACP-TR-28) and the GIL lets only one of them run Python at a time, so
spreading them over CPUs buys no parallelism. It costs wake-ups instead: a cross-CPU wake-up at
every hand-off, and a woken thread that preempts the one that woke it, finds the GIL taken and
goes back to sleep. Pinning the threads to one CPU *and* running them as `SCHED_BATCH` (batch
threads do not preempt on wake-up) makes each hand-off one switch at the moment the GIL is free.
Measured with bench/acp_prompt_rtt (a blocking client in its own process, 200 prompts × 3
sessions, alternated with the SDK echo agent; 2 shared CPUs, load average 0.8-6.3):
- round trip, pinned / unpinned in the same round: median 0.68 (0.37-0.99, faster in 14 of 14
  rounds); over all 56 rounds of five runs, median 0.81, faster in 48;
- ratio to the SDK agent: 1.04 (0.68-1.58) pinned, 1.59 (1.12-2.52) unpinned;
- CPU per prompt 271 µs in 3.6 time slices pinned, 424 µs in 12.6 slices unpinned;
- either half alone gains nothing: affinity without batch 0.97 of unpinned (38 rounds), batch
  without affinity 1.00 (26 rounds).
The cost is that a woken thread may wait for the running one's time slice. That only matters
while another process competes for the same CPU, and then by milliseconds, which nothing
interactive in ACP notices.

How it stays harmless:
- Linux affinity belongs to a *thread* and is copied to every thread and process it creates.
  `pin_current_thread()` runs on the main thread before the server starts any other thread,
  so the whole server inherits the pin and nothing else in the system is affected.
- A child process (a shell command, an MCP server, `op`) must get the CPUs and the scheduling
  policy the server started with, not the pin: a build run through the shell tool would
  otherwise be held to one CPU. Every spawn therefore happens inside `unpinned()`, which
  restores both on the *calling* thread only, for the duration of the spawning call, and
  re-applies them afterwards. Other threads keep running
  pinned meanwhile, and no `preexec_fn` is needed (it is unsafe in a threaded parent).
  tests/architecture checks that every spawn in the package sits in such a block.
- The CPU chosen is the one the scheduler already runs the main thread on, so a machine's
  load balancing is followed rather than every server landing on CPU 0.
- `ZEROCLAW_REF_ACP_PIN=0` turns it off (an upper-case name, so never a config override,
  config.md CFG-ENV-01). Without `sched_setaffinity`, or with a single CPU allowed, it is a
  no-op. Only the `acp` command pins (`StdioOptions.pin_cpu` is off unless the command line
  asks), and the gateway never does: it serves many connections.

The trade-off, stated plainly: the CPU is chosen once. Two servers started on the same CPU
stay there, and a busy neighbour on that CPU delays their wake-ups, where the scheduler could
otherwise have moved them. The servers are idle between messages and their heavy work runs
in children, which are not pinned, so this costs little. Turn it off where it does matter.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

PIN_ENV = "ZEROCLAW_REF_ACP_PIN"


@dataclass(frozen=True, slots=True)
class _Pin:
    cpu: int  # the one CPU of the server's threads
    inherited: frozenset[int]  # the mask before pinning: what children get
    policy: int | None  # the policy SCHED_BATCH replaced, None when it was left alone


# Set once by `pin_current_thread()` on the main thread before any other thread exists, and
# only read afterwards (one object, so a reader never sees half of it).
_pin: _Pin | None = None


def pin_wanted(environ: Mapping[str, str]) -> bool:
    """False when the environment turns pinning off (`ZEROCLAW_REF_ACP_PIN=0`)."""
    return environ.get(PIN_ENV, "").strip() != "0"


def pin_current_thread() -> int | None:
    """Pin the calling thread to the CPU it is running on; returns that CPU, or None.

    Call it once, before starting any other thread: those created afterwards inherit the pin.
    """
    global _pin
    if _pin is not None or not hasattr(os, "sched_setaffinity"):
        return None
    try:
        allowed = frozenset(os.sched_getaffinity(0))
        if len(allowed) < 2:
            return None
        cpu = _current_cpu()
        if cpu not in allowed:
            cpu = min(allowed)
        os.sched_setaffinity(0, {cpu})
    except OSError as exc:
        log.debug("CPU pinning unavailable: %s", exc)
        return None
    _pin = _Pin(cpu, allowed, _to_batch())
    return cpu


def inherited_cpus() -> frozenset[int] | None:
    """The CPUs children are given, or None when the process is not pinned."""
    return None if _pin is None else _pin.inherited


@contextmanager
def unpinned() -> Iterator[None]:
    """Run the block (a process spawn) with the calling thread allowed on every CPU the
    process started with, so the child inherits that set instead of the pin.

    Best effort in both directions: placement must never decide whether a child starts, and
    an error while restoring must never hide a child that did start (the caller would lose
    its handle, and with it the timeout and the kill). A thread whose mask is no longer the
    pin was changed from outside (`taskset -a -p`): it is left alone, so the administrator's
    choice reaches the child.
    """
    pin = _pin
    if pin is None or _try(os.sched_getaffinity, 0) != {pin.cpu}:
        yield
        return
    widened = _try(os.sched_setaffinity, 0, pin.inherited) is not _FAILED
    if widened and pin.policy is not None:
        _try(os.sched_setscheduler, 0, pin.policy, os.sched_param(0))
    try:
        yield
    finally:
        if widened:
            _try(os.sched_setaffinity, 0, {pin.cpu})
            if pin.policy is not None:
                _to_batch()


def reset_for_tests() -> None:
    """Forget a pin (tests only; the thread's own mask is the caller's business)."""
    global _pin
    _pin = None


_FAILED = object()


def _try(call: Callable[..., object], *args: object) -> object:
    """Run one placement call; an OSError is logged at DEBUG and returns `_FAILED`."""
    try:
        return call(*args)
    except OSError as exc:
        log.debug("CPU placement call %s failed: %s", getattr(call, "__name__", call), exc)
        return _FAILED


def _to_batch() -> int | None:
    """Switch the calling thread to SCHED_BATCH; returns the policy it had, or None when it
    stays as it was (not available, not permitted, or a policy we must not weaken)."""
    batch = getattr(os, "SCHED_BATCH", None)
    other = getattr(os, "SCHED_OTHER", None)
    if batch is None or other is None:
        return None
    try:
        current = os.sched_getscheduler(0)
        if current != other:  # real-time or idle: somebody chose it on purpose
            return None
        os.sched_setscheduler(0, batch, os.sched_param(0))
    except OSError:
        return None
    return current


def _current_cpu() -> int | None:
    """The CPU the calling thread last ran on (field 39 of /proc/thread-self/stat)."""
    try:
        stat = Path("/proc/thread-self/stat").read_text(encoding="ascii")
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses; fields after it start
    # behind the last ')'. Field 39 is then the 37th of those.
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        return int(fields[36])
    except (IndexError, ValueError):
        return None
