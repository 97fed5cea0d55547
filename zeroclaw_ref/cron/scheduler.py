"""The `cron` construction path: running due jobs once, or on a timer (policy.md §7.1).

Implements POL-PATH-17 to POL-PATH-21 and the run side of POL-CRON-06 and POL-CRON-07.

Design note.
  Goals: at-most-once runs with a frozen or jumping clock, every run recorded, and a job's
  authority exactly its owner's narrowed by its own tool list.
  Plan: `run_due()` reads the due jobs, claims each one (moving `next_run_at` first), resolves
  its owner on path `cron` and runs one turn, then records the run. `Scheduler` is a thread
  that calls `run_due()` after each `stop.wait(tick)` (DESIGN §7.10); the gateway hosts it.
  Caveats: jobs run sequentially; a job that becomes due during a long tick waits for the next
  one. Stopping the scheduler cancels the turn in flight, which is recorded as a failure.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime

from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.clock import Clock, SystemClock, rfc3339
from zeroclaw_ref.core.ids import IdFactory, RandomIds
from zeroclaw_ref.engine.events import Cancelled, Completed, TurnEvent
from zeroclaw_ref.engine.resolve import PathRequest, ResolveError, resolve
from zeroclaw_ref.engine.turn import TurnEngine
from zeroclaw_ref.store.cron import CronJob, CronRun, CronStore
from zeroclaw_ref.store.db import StoreError
from zeroclaw_ref.tools.cron_schedule import advance

log = logging.getLogger(__name__)

SUCCESS = "success"
FAILURE = "failure"

# Design: the text recorded for a run cut short by the scheduler's stop; the spec names none.
CANCELLED_TEXT = "Cancelled: the scheduler stopped during the run"


def _ignore(event: TurnEvent) -> None:
    """Nobody watches a scheduled turn; its outcome is what gets recorded."""


def run_due(
    config: ConfigSnapshot,
    *,
    agent: str | None = None,
    clock: Clock | None = None,
    ids: IdFactory | None = None,
    cancel: CancelToken | None = None,
) -> list[tuple[str, str]]:
    """Run every job due now (of `agent` only, when given) once, sequentially, and return
    `(job id, "success" | "failure")` per run in run order.

    Raises:
        StoreError: when the job store cannot be opened or read; runs already recorded stay.
    """
    clock = clock or SystemClock()
    ids = ids or RandomIds()
    cancel = cancel or CancelToken()
    store = CronStore.open(config.data_dir)
    results: list[tuple[str, str]] = []
    try:
        now = clock.now()
        for job in store.due(rfc3339(now), agent):
            if cancel.is_set():
                break
            outcome = _claim_and_run(store, config, job, now, clock, ids, cancel)
            if outcome is not None:
                results.append((job.id, outcome))
    finally:
        store.close()
    return results


def _claim_and_run(
    store: CronStore,
    config: ConfigSnapshot,
    job: CronJob,
    now: datetime,
    clock: Clock,
    ids: IdFactory,
    cancel: CancelToken,
) -> str | None:
    """Claim one due job and run it; None when another runner claimed it first."""
    assert job.next_run_at is not None  # due() only returns jobs with a due time
    # [POL-PATH-19] advance before running: a second runner finds nothing due, and missed
    # occurrences are skipped rather than replayed.
    if not store.claim(job.id, job.next_run_at, advance(job.schedule, job.next_run_at, now)):
        return None
    run_id = ids.new("cron-run")
    started = rfc3339(clock.now())
    success, output = _run_job(config, job, clock, ids, cancel)
    run = CronRun(run_id, job.id, started, rfc3339(clock.now()), success, output)
    try:
        store.record_run(run, job.delete_after_run)  # [POL-PATH-20]
    except StoreError as exc:
        log.warning("cron job %s: cannot record run %s: %s", job.id, run_id, exc)
    return SUCCESS if success else FAILURE


def _run_job(
    config: ConfigSnapshot, job: CronJob, clock: Clock, ids: IdFactory, cancel: CancelToken
) -> tuple[bool, str]:
    """One turn of `job` as its owner; (success, final text or error)."""
    # [POL-PATH-17] [POL-CRON-07] the job's list, exactly, is the strict caller allow-list;
    # no list means no narrowing. No operator: every Prompt ends in the runtime denial.
    # [POL-CRON-06] `job.approved` is deliberately not consulted.
    allowed = None if job.allowed_tools is None else frozenset(job.allowed_tools)
    try:
        request = PathRequest("cron", caller_allowed=allowed)
        execution = resolve(config, job.agent, request, ids)
    except ResolveError as exc:
        # [POL-PATH-21] an unknown or non-dispatchable owner fails; no other agent stands in
        return False, str(exc)
    try:
        outcome = TurnEngine(ids, clock).run_turn(execution, [], job.prompt, _ignore, cancel)
    except Exception as exc:  # an engine bug must not stop the other jobs of the tick
        log.exception("cron job %s: turn raised", job.id)
        return False, f"Agent turn failed: {exc}"
    finally:
        execution.close()
    if isinstance(outcome, Completed):
        return True, outcome.text
    if isinstance(outcome, Cancelled):
        return False, CANCELLED_TEXT
    return False, outcome.diagnostic


class Scheduler:
    """A thread that runs due jobs every `tick_secs` seconds until `stop()` (POL-PATH-18).

    `config_source` is asked for the current configuration at every tick, so a reloaded
    configuration (and its `scheduler.enabled`) takes effect at the next tick.
    """

    def __init__(
        self,
        config_source: Callable[[], ConfigSnapshot],
        tick_secs: float,
        *,
        clock: Clock | None = None,
        ids: IdFactory | None = None,
    ) -> None:
        self._source = config_source
        self._tick = tick_secs
        self._clock = clock or SystemClock()
        self._ids = ids or RandomIds()
        self._stop = threading.Event()
        self._cancel = CancelToken()
        self._thread = threading.Thread(target=self._loop, name="cron-scheduler", daemon=True)

    def start(self) -> None:
        """Start the thread; the first run happens one tick later."""
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Ask the thread to end, cancelling a turn in flight, and wait for it (bounded by
        `timeout` when given)."""
        self._stop.set()
        self._cancel.fire()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _loop(self) -> None:
        # [POL-PATH-18] the tick period is the specified behaviour (DESIGN §7.10)
        while not self._stop.wait(self._tick):
            self.tick()

    def tick(self) -> list[tuple[str, str]]:
        """Run the jobs due now once; failures are logged, never raised, so the loop lives."""
        try:
            config = self._source()
            if not config.scheduler.enabled:
                return []
            return run_due(config, clock=self._clock, ids=self._ids, cancel=self._cancel)
        except Exception:
            log.exception("cron scheduler tick failed")
            return []
