"""The scheduler's job store: one row per agent job and one per run (policy.md §4.7, §7.1).

Implements the persistence side of POL-CRON-07, POL-CRON-09, POL-CRON-11, POL-CRON-12 and
POL-PATH-19 to POL-PATH-21, in the file `<data dir>/cron/jobs.sqlite3` (config.md CFG-DIR-05).

Design note.
  Goals: a job never runs twice for one due time, whichever process or thread looks at it,
  and every run leaves a row behind.
  Plan: the same `Database` pattern as the session store (DESIGN §10). `claim()` is a
  compare-and-set on `next_run_at`: only the caller whose UPDATE still sees the due value it
  read wins the run. The store keeps schedules as the JSON objects it is given; their meaning
  belongs to `tools/cron_schedule.py`.
  Caveats: timestamps are RFC 3339 UTC text of one fixed shape, so SQL text comparison
  orders them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps, loads
from zeroclaw_ref.store.db import (
    BUSY_TIMEOUT_MS,
    Database,
    Row,
    SqlValue,
    StoreError,
    open_store,
)

# [CFG-DIR-05] `<data dir>/cron/jobs.sqlite3`
CRON_DIR = "cron"
STORE_FILE = "jobs.sqlite3"
SCHEMA_FAMILY = "cron"

# [POL-PATH-20] a run's recorded output is cut to this many characters.
MAX_RUN_OUTPUT_CHARS = 10_000

_JOB_COLUMNS = (
    "id, agent, name, schedule_json, prompt, allowed_tools_json, delete_after_run, approved, "
    "created_at, next_run_at, last_run_at, last_status"
)


@dataclass(frozen=True, slots=True)
class CronJob:
    """One stored job; `allowed_tools` is None when the job was created without a list."""

    id: str
    agent: str
    name: str | None
    schedule: JSONObject
    prompt: str
    allowed_tools: tuple[str, ...] | None
    delete_after_run: bool
    approved: bool
    created_at: str
    next_run_at: str | None
    last_run_at: str | None = None
    last_status: str | None = None


@dataclass(frozen=True, slots=True)
class CronRun:
    """One finished run (POL-PATH-20)."""

    run_id: str
    job_id: str
    started_at: str
    finished_at: str
    success: bool
    output: str


def store_path(data_dir: Path) -> Path:
    """Where the job store lives under a data dir (CFG-DIR-05)."""
    return data_dir / CRON_DIR / STORE_FILE


class CronStore:
    """Jobs and runs over one `Database`; each public method is one transaction."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @classmethod
    def open(
        cls,
        data_dir: Path,
        *,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        trace: Callable[[str], None] | None = None,
    ) -> CronStore:
        """Open the store, creating its directory, file and tables when missing.

        Raises:
            StoreError: when the directory or file cannot be created or opened, or the file
                is not a database; the caller reports the failure and schedules nothing.
        """
        # [CFG-DIR-04] the folder and the file are created on demand
        path = store_path(data_dir)
        return cls(
            open_store(
                path, SCHEMA_FAMILY, create=True, busy_timeout_ms=busy_timeout_ms, trace=trace
            )
        )

    @classmethod
    def open_existing(cls, data_dir: Path) -> CronStore | None:
        """Open the store for inspection; None when the file does not exist.

        Raises:
            StoreError: when the file exists but cannot be opened or is not a database.
        """
        db = open_store(store_path(data_dir), SCHEMA_FAMILY, create=False)
        return None if db is None else cls(db)

    def close(self) -> None:
        """Close the underlying connection."""
        self.db.close()

    # -- jobs -----------------------------------------------------------------------------

    def add(self, job: CronJob) -> bool:
        """Insert `job`; False (nothing written) when its agent already has a job of that name.

        Raises:
            StoreError: when the row cannot be written.
        """
        with self.db.atomic():
            # [POL-CRON-09] names are unique per agent, ignoring case; checked in the same
            # transaction as the insert so two concurrent adds cannot both pass.
            if job.name is not None and self._find(job.agent, job.name) is not None:
                return False
            allowed = None if job.allowed_tools is None else dumps(list(job.allowed_tools))
            self.db.execute(
                f"INSERT INTO jobs ({_JOB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job.id,
                    job.agent,
                    job.name,
                    dumps(job.schedule),
                    job.prompt,
                    allowed,
                    int(job.delete_after_run),
                    int(job.approved),
                    job.created_at,
                    job.next_run_at,
                    job.last_run_at,
                    job.last_status,
                ),
            )
        return True

    def list_jobs(self, agent: str | None = None) -> list[CronJob]:
        """The jobs of `agent` (of every agent when None), by creation time then id.

        Raises:
            StoreError: when the read fails or a row holds an unexpected value.
        """
        # [POL-CRON-11] creation order, ties broken by id
        if agent is None:
            rows = self.db.query(f"SELECT {_JOB_COLUMNS} FROM jobs ORDER BY created_at, id")
        else:
            rows = self.db.query(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE agent = ? ORDER BY created_at, id",
                (agent,),
            )
        return [_job(row) for row in rows]

    def get(self, job_id: str) -> CronJob | None:
        """The job with that id, or None.

        Raises:
            StoreError: when the read fails.
        """
        row = self.db.query_one(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        return None if row is None else _job(row)

    def remove(self, agent: str, key: str) -> str | None:
        """Delete the agent's job whose id is `key`, or else whose name is `key` ignoring case;
        return the removed id, or None when the agent has no such job.

        Raises:
            StoreError: when the delete fails.
        """
        with self.db.atomic():
            # [POL-CRON-12] an id first, then a name, only among the caller's own jobs
            row = self.db.query_one(
                "SELECT id FROM jobs WHERE agent = ? AND id = ?", (agent, key)
            ) or self._find(agent, key)
            if row is None:
                return None
            job_id = _text(row[0], "id")
            self.db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
        return job_id

    def _find(self, agent: str, name: str) -> Row | None:
        # Design: Python's casefold matches the tools' notion of "the same name" for non-ASCII
        # text too, which SQLite's NOCASE (ASCII only) would not.
        wanted = name.casefold()
        for row in self.db.query(
            "SELECT id, name FROM jobs WHERE agent = ? AND name IS NOT NULL", (agent,)
        ):
            if isinstance(row[1], str) and row[1].casefold() == wanted:
                return row
        return None

    # -- scheduling -----------------------------------------------------------------------

    def due(self, now: str, agent: str | None = None) -> list[CronJob]:
        """Jobs whose `next_run_at` is not after `now` (POL-PATH-19), oldest due time first.

        Raises:
            StoreError: when the read fails.
        """
        sql = f"SELECT {_JOB_COLUMNS} FROM jobs WHERE next_run_at IS NOT NULL AND next_run_at <= ?"
        params: list[SqlValue] = [now]
        if agent is not None:
            sql += " AND agent = ?"
            params.append(agent)
        rows = self.db.query(sql + " ORDER BY next_run_at, created_at, id", params)
        return [_job(row) for row in rows]

    def claim(self, job_id: str, seen_next_run_at: str, next_run_at: str | None) -> bool:
        """Move a due job's `next_run_at` from `seen_next_run_at` to `next_run_at` (None: no
        further run); True when this caller won the run.

        Raises:
            StoreError: when the update fails.
        """
        # [POL-PATH-19] compare-and-set before running: a second claimant of the same due
        # time finds the value already moved and runs nothing.
        with self.db.atomic():
            changed = self.db.execute(
                "UPDATE jobs SET next_run_at = ? WHERE id = ? AND next_run_at = ?",
                (next_run_at, job_id, seen_next_run_at),
            )
        return changed == 1

    def record_run(self, run: CronRun, delete_after_run: bool) -> None:
        """Store a finished run, update its job's last run, and delete the job after a
        successful run when `delete_after_run` is set (POL-PATH-20).

        Raises:
            StoreError: when anything fails; nothing of the run is kept.
        """
        status = "success" if run.success else "failure"
        with self.db.atomic():
            self.db.execute(
                "INSERT INTO runs (run_id, job_id, started_at, finished_at, status, output) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    run.run_id,
                    run.job_id,
                    run.started_at,
                    run.finished_at,
                    status,
                    run.output[:MAX_RUN_OUTPUT_CHARS],
                ),
            )
            if run.success and delete_after_run:
                self.db.execute("DELETE FROM jobs WHERE id = ?", (run.job_id,))
            else:
                # A job removed while it ran simply updates no row.
                self.db.execute(
                    "UPDATE jobs SET last_run_at = ?, last_status = ? WHERE id = ?",
                    (run.finished_at, status, run.job_id),
                )

    def runs(self, job_id: str) -> list[CronRun]:
        """The recorded runs of a job, oldest first.

        Raises:
            StoreError: when the read fails.
        """
        rows = self.db.query(
            "SELECT run_id, job_id, started_at, finished_at, status, output FROM runs "
            "WHERE job_id = ? ORDER BY id",
            (job_id,),
        )
        return [
            CronRun(
                run_id=_text(row[0], "run_id"),
                job_id=_text(row[1], "job_id"),
                started_at=_text(row[2], "started_at"),
                finished_at=_text(row[3], "finished_at"),
                success=row[4] == "success",
                output=_text(row[5], "output"),
            )
            for row in rows
        ]


def _text(value: SqlValue, column: str) -> str:
    if not isinstance(value, str):
        raise StoreError(f"unexpected value in column {column}: {type(value).__name__}")
    return value


def _optional_text(value: SqlValue, column: str) -> str | None:
    return None if value is None else _text(value, column)


def _json(value: SqlValue, column: str) -> JSON:
    try:
        return loads(_text(value, column))
    except ValueError as exc:
        raise StoreError(f"unexpected value in column {column}: {exc}") from exc


def _job(row: Row) -> CronJob:
    schedule = _json(row[3], "schedule_json")
    if not isinstance(schedule, dict):
        raise StoreError("unexpected value in column schedule_json")
    allowed: tuple[str, ...] | None = None
    if row[5] is not None:
        items = _json(row[5], "allowed_tools_json")
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise StoreError("unexpected value in column allowed_tools_json")
        allowed = tuple(str(i) for i in items)
    return CronJob(
        id=_text(row[0], "id"),
        agent=_text(row[1], "agent"),
        name=_optional_text(row[2], "name"),
        schedule=schedule,
        prompt=_text(row[4], "prompt"),
        allowed_tools=allowed,
        delete_after_run=bool(row[6]),
        approved=bool(row[7]),
        created_at=_text(row[8], "created_at"),
        next_run_at=_optional_text(row[9], "next_run_at"),
        last_run_at=_optional_text(row[10], "last_run_at"),
        last_status=_optional_text(row[11], "last_status"),
    )
