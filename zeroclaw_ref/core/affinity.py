"""Keep the stdio ACP server's threads on one CPU, and never pass that pin on to children.

Why pin at all: every prompt crosses three threads (reader → session worker → writer,
acp.md ACP-TR-28), and the GIL lets only one of them run Python at a time, so spreading them
over several CPUs buys no parallelism. It does cost a cross-CPU wake-up at every hand-off: an
inter-processor interrupt and a cold cache on the receiving side. Measured with
bench/acp_prompt_rtt on a 2-CPU machine, pinning alone takes the prompt round trip from about
0.40 ms to 0.28 ms.

Why `SCHED_BATCH` as well: on one CPU, a hand-off still costs extra context switches. The
woken thread preempts the one that woke it, finds the GIL taken and goes back to sleep, and it
only runs when the first one blocks. Batch threads do not preempt on wake-up, so each
hand-off is a single switch at the moment the GIL is free anyway. Measured the same way:
about 6 switches per prompt on the session thread become 1, and the round trip drops another
~10 %. The cost is that a woken thread may wait for the running one's time slice. That only
matters while another process competes for the same CPU, and then by milliseconds, which
nothing interactive in ACP notices.

How it stays harmless:
- Linux affinity belongs to a *thread* and is copied to every thread and process it creates.
  `pin_current_thread()` runs on the main thread before the server starts any other thread,
  so the whole server inherits the pin and nothing else in the system is affected.
- A child process (a shell command, an MCP server, `op`) must get the CPUs and the scheduling
  policy the server started with, not the pin: a build run through the shell tool would
  otherwise be held to one CPU. Every spawn therefore happens inside `unpinned()`, which
  restores both on the *calling* thread only, for the duration of the fork, and re-applies
  them afterwards. Other threads keep running
  pinned meanwhile, and no `preexec_fn` is needed (it is unsafe in a threaded parent).
  tests/architecture checks that every spawn in the package sits in such a block.
- The CPU chosen is the one the scheduler already runs the main thread on, so a machine's
  load balancing is followed rather than every server landing on CPU 0.
- `ZEROCLAW_REF_ACP_PIN=0` turns it off (an upper-case name, so never a config override,
  config.md CFG-ENV-01). Without `sched_setaffinity`, or with a single CPU allowed, it is a
  no-op.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

PIN_ENV = "ZEROCLAW_REF_ACP_PIN"

# The mask the process had before pinning; None while nothing is pinned. Written once, by the
# main thread, before any other thread exists; read by every spawning thread.
_inherited: frozenset[int] | None = None
# The scheduling policy replaced by SCHED_BATCH, or None when the policy was left alone.
_inherited_policy: int | None = None
_state_lock = threading.Lock()


def pin_wanted(environ: Mapping[str, str]) -> bool:
    """False when the environment turns pinning off (`ZEROCLAW_REF_ACP_PIN=0`)."""
    return environ.get(PIN_ENV, "").strip() != "0"


def pin_current_thread() -> int | None:
    """Pin the calling thread to the CPU it is running on; returns that CPU, or None.

    Call it before starting any other thread: those created afterwards inherit the pin.
    """
    global _inherited, _inherited_policy
    if not hasattr(os, "sched_setaffinity"):
        return None
    try:
        allowed = frozenset(os.sched_getaffinity(0))
        if len(allowed) < 2:
            return None
        cpu = _current_cpu()
        if cpu not in allowed:
            cpu = min(allowed)
        with _state_lock:
            os.sched_setaffinity(0, {cpu})
            _inherited = allowed
            _inherited_policy = _to_batch()
    except OSError as exc:
        log.debug("CPU pinning unavailable: %s", exc)
        return None
    return cpu


def inherited_cpus() -> frozenset[int] | None:
    """The CPUs children are given, or None when the process is not pinned."""
    return _inherited


@contextmanager
def unpinned() -> Iterator[None]:
    """Run the block (a process spawn) with the calling thread allowed on every CPU the
    process started with, so the child inherits that set instead of the pin."""
    wide, policy = _inherited, _inherited_policy
    if wide is None:
        yield
        return
    narrow = os.sched_getaffinity(0)
    os.sched_setaffinity(0, wide)
    if policy is not None:
        os.sched_setscheduler(0, policy, os.sched_param(0))
    try:
        yield
    finally:
        os.sched_setaffinity(0, narrow)
        if policy is not None:
            _to_batch()


def reset_for_tests() -> None:
    """Forget a pin (tests only; the thread's own mask is the caller's business)."""
    global _inherited, _inherited_policy
    with _state_lock:
        _inherited = None
        _inherited_policy = None


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
