"""Every timeout and size limit of the ACP side, with the rule it comes from (DESIGN §7.10)."""

from __future__ import annotations

from typing import Final

# [ACP-TR-08] inbound lines of at least 64 MiB must be accepted; longer ones are refused as a
# parse error without being buffered whole. Design: a small margin above the requirement.
MAX_INBOUND_LINE_BYTES: Final = 64 * 1024 * 1024 + 1024

# [ACP-TR-35] shutdown waits at most this long for session workers to enqueue their results.
SHUTDOWN_BUDGET_SECS: Final = 5.0

# Design: bound on joining the writer after its CLOSE sentinel; it only flushes what is queued.
WRITER_JOIN_SECS: Final = 5.0

# [ACP-PROMPT-14] decoded size limit of an embedded blob; [ACP-DELIV-03] of a delivered file.
MAX_BLOB_BYTES: Final = 10_485_760

# [ACP-PERM-11] a reject-with-edit replacement is cut to this many UTF-8 bytes.
MAX_REPLACEMENT_BYTES: Final = 65_536

# [ACP-REAP-01] default reaper period (seconds), overridable with --reaper-interval.
DEFAULT_REAPER_INTERVAL_SECS: Final = 60.0

# [CFG-PROV-09] the demo provider's `slow:` tick period and cap.
DEMO_SLOW_TICK_SECS: Final = 0.05
DEMO_SLOW_MAX_TICKS: Final = 10_000
