"""`cron list | run-due | daemon`: inspect and run scheduled jobs (policy.md §4.7, §7.1).

Implements the command-line side of POL-PATH-18: `run-due` runs the due jobs once and prints
one `<job id> <success|failure>` line per run; `daemon` runs the scheduler thread until
SIGINT or SIGTERM; `list` prints the jobs as `cron_list` shows them.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import TextIO

from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.clock import Clock
from zeroclaw_ref.core.ids import IdFactory
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.cron.scheduler import Scheduler, run_due
from zeroclaw_ref.store.cron import CronStore
from zeroclaw_ref.store.db import StoreError
from zeroclaw_ref.tools.cron import DISABLED_TEXT, job_json, render_jobs


def run_cron(
    action: str,
    agent: str | None,
    config: ConfigSnapshot,
    clock: Clock,
    ids: IdFactory,
    out: TextIO,
    err: TextIO,
    config_source: Callable[[], ConfigSnapshot] | None = None,
) -> int:
    """Run one `cron` action and return the exit status; `daemon` asks `config_source` for
    the current configuration at every tick (CFG-LOAD-10), else it keeps `config`."""
    if action == "list":
        return _list(config, agent, out, err)
    if not config.scheduler.enabled:
        # Design: running jobs is what `scheduler.enabled=false` switches off (POL-CRON-01);
        # listing them stays possible.
        print(f"ERROR: {DISABLED_TEXT}", file=err)
        return 1
    if action == "run-due":
        return _run_due(config, agent, clock, ids, out, err)
    return _daemon(config_source or (lambda: config), config.scheduler.tick_secs, clock, ids)


def _list(config: ConfigSnapshot, agent: str | None, out: TextIO, err: TextIO) -> int:
    try:
        # An inspection command never creates the store; a missing file lists nothing.
        store = CronStore.open_existing(config.data_dir)
        jobs = [] if store is None else store.list_jobs(agent)
        if store is not None:
            store.close()
    except StoreError as exc:
        print(f"ERROR: Failed to open cron store: {exc}", file=err)
        return 1
    items: list[JSONObject] = []
    for job in jobs:
        # Design: without --agent the listing spans agents, so each job names its owner;
        # with --agent it is exactly the owner's `cron_list` output (POL-CRON-11).
        items.append(job_json(job) if agent is not None else {"agent": job.agent, **job_json(job)})
    print(render_jobs(items), file=out)
    return 0


def _run_due(
    config: ConfigSnapshot,
    agent: str | None,
    clock: Clock,
    ids: IdFactory,
    out: TextIO,
    err: TextIO,
) -> int:
    try:
        results = run_due(config, agent=agent, clock=clock, ids=ids)
    except StoreError as exc:
        print(f"ERROR: Failed to open cron store: {exc}", file=err)
        return 1
    for job_id, status in results:
        print(f"{job_id} {status}", file=out)  # [POL-PATH-18]
    out.flush()
    return 0


def _daemon(
    source: Callable[[], ConfigSnapshot], tick_secs: int, clock: Clock, ids: IdFactory
) -> int:
    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    scheduler = Scheduler(source, tick_secs, clock=clock, ids=ids)
    scheduler.start()
    try:
        done.wait()
    finally:
        scheduler.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
