"""One SQLite database file: opening, PRAGMAs, transactions, migrations and tracing.

Implements acp.md §8.1 (ACP-STORE-01, ACP-STORE-03, ACP-STORE-04, ACP-STORE-07) for every
database family that shares this module (DESIGN §10).

Design note.
  Goals: a handle that several threads share safely, transactions whose nesting is
  explicit, and failures that surface as one exception type with a readable detail.
  Plan: one `sqlite3` connection per `Database`, opened with `isolation_level=None` so
  that this module alone issues BEGIN/COMMIT, and `check_same_thread=False` so that any
  worker may use it. An `RLock` is held by every public method for the whole of its
  transaction, so statements of two threads never interleave on the connection; WAL
  lets other handles and processes read meanwhile. `atomic()` takes the write lock up
  front with `BEGIN IMMEDIATE` at depth 0 and uses SAVEPOINTs when nested.
  Caveats: `executescript` commits any open transaction first, so `migrate()` refuses
  to run inside `atomic()`. Every `sqlite3.Error` leaves this module as `StoreError`.
"""

from __future__ import annotations

import importlib.resources
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, overload

# [ACP-STORE-03] `busy_timeout=5000`: a bounded wait for another writer's lock.
BUSY_TIMEOUT_MS = 5000

SqlValue = str | int | float | bytes | None
Row = tuple[SqlValue, ...]

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


class StoreError(Exception):
    """A store operation failed; `str(exc)` is a human-readable detail without secrets.

    Callers decide what a failure means: the server logs a WARN and runs without a store
    (ACP-STORE-04) or keeps a session in memory (ACP-STORE-13); the CLI exits 1.
    """


def _detail(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


class Database:
    """A shared handle on one SQLite file.

    Raises:
        StoreError: when the file cannot be opened or is not a database, or a PRAGMA
            cannot be applied. The file is never removed or rewritten on failure.
    """

    def __init__(
        self,
        path: Path,
        *,
        create: bool = True,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        trace: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._depth = 0
        # Design: a URI with mode=rw lets inspection commands open an existing file without
        # ever creating one (ACP-STORE-17); as_uri() percent-encodes `?`, `#` and `%`.
        mode = "rwc" if create else "rw"
        uri = f"{path.absolute().as_uri()}?mode={mode}"
        try:
            self._conn = sqlite3.connect(
                uri,
                uri=True,
                timeout=busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{path}: {_detail(exc)}") from exc
        if trace is not None:
            self._conn.set_trace_callback(trace)
        try:
            self._apply_pragmas(busy_timeout_ms)
        except sqlite3.Error as exc:
            # Closing never touches the file's content: a file that is not a database
            # stays byte-identical (ACP-STORE-04).
            self._conn.close()
            raise StoreError(f"{path}: {_detail(exc)}") from exc

    def _apply_pragmas(self, busy_timeout_ms: int) -> None:
        # busy_timeout comes first so that switching the journal mode waits for locks too.
        self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        # [ACP-STORE-03] journal_mode cannot change inside a transaction; none is open here.
        row = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if row is None or str(row[0]).lower() != "wal":
            raise sqlite3.OperationalError(f"cannot enable WAL journal mode (got {row!r})")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.execute("PRAGMA foreign_keys = ON")

    # -- transactions ---------------------------------------------------------------------

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """A write transaction: `BEGIN IMMEDIATE` at depth 0, a SAVEPOINT when nested.

        The handle's lock is held throughout. An exception inside rolls the block back
        and propagates (a `sqlite3.Error` as `StoreError`).

        Raises:
            StoreError: when the write lock is not granted within the busy timeout, a
                statement fails, or the commit fails; nothing of the block is kept.
        """
        # Taking the write lock at BEGIN avoids lock-upgrade failures under WAL (DESIGN §10).
        with self._transaction("BEGIN IMMEDIATE"):
            yield

    @contextmanager
    def reading(self) -> Iterator[None]:
        """A read transaction, so several SELECTs see one snapshot; never takes the write lock.

        Raises:
            StoreError: when a statement fails.
        """
        with self._transaction("BEGIN DEFERRED"):
            yield

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[None]:
        with self._lock:
            depth = self._depth
            savepoint = f"sp_{depth}"
            self._run(begin if depth == 0 else f"SAVEPOINT {savepoint}")
            self._depth = depth + 1
            try:
                yield
            except BaseException as exc:
                self._depth = depth
                self._rollback(depth, savepoint)
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(_detail(exc)) from exc
                raise
            self._depth = depth
            try:
                self._run("COMMIT" if depth == 0 else f"RELEASE {savepoint}")
            except StoreError:
                self._rollback(depth, savepoint)
                raise

    def _rollback(self, depth: int, savepoint: str) -> None:
        # Some failures have already ended the transaction; a second ROLLBACK would raise
        # and mask the original error, so roll back only while one is open (DESIGN §10).
        if not self._conn.in_transaction:
            return
        try:
            if depth == 0:
                self._conn.execute("ROLLBACK")
            else:
                self._conn.execute(f"ROLLBACK TO {savepoint}")
                self._conn.execute(f"RELEASE {savepoint}")
        except sqlite3.Error:
            # Design: the original error is the one worth reporting; the rollback failure
            # leaves nothing committed either way.
            pass

    # -- statements -----------------------------------------------------------------------

    def _run(self, sql: str, params: Sequence[SqlValue] = ()) -> sqlite3.Cursor:
        try:
            return self._conn.execute(sql, params)
        except (sqlite3.Error, UnicodeEncodeError) as exc:
            # A text with no UTF-8 form (a lone surrogate) cannot be bound: a failure like any
            # other, which callers survive (ACP-STORE-13), not one that ends their thread.
            raise StoreError(_detail(exc)) from exc

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        """Run one statement and return the number of rows it changed.

        Raises:
            StoreError: when the statement fails.
        """
        with self._lock:
            return self._run(sql, params).rowcount

    def query(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        """Run one SELECT and return all rows as tuples.

        Raises:
            StoreError: when the statement fails.
        """
        with self._lock:
            cursor = self._run(sql, params)
            try:
                return [tuple(row) for row in cursor.fetchall()]
            except sqlite3.Error as exc:
                raise StoreError(_detail(exc)) from exc

    def query_one(self, sql: str, params: Sequence[SqlValue] = ()) -> Row | None:
        """The first row of a SELECT, or None when it returns no row.

        Raises:
            StoreError: when the statement fails.
        """
        rows = self.query(sql, params)
        return rows[0] if rows else None

    # -- schema ---------------------------------------------------------------------------

    def user_version(self) -> int:
        """The schema version recorded in the file (`PRAGMA user_version`)."""
        row = self.query_one("PRAGMA user_version")
        return row[0] if row is not None and isinstance(row[0], int) else 0

    def migrate(self, family: str) -> int:
        """Apply the pending `schema/<family>/NNNN_name.sql` files in order; return the version.

        Each file runs as one script `BEGIN IMMEDIATE; <file>; PRAGMA user_version = N;
        COMMIT;`, so a change and its version bump commit together. Scripts use
        `IF NOT EXISTS`, which lets files written by other versions open (ACP-STORE-07).

        Raises:
            StoreError: when a script fails (its changes are rolled back and the version
                is unchanged), or when called inside `atomic()`.
        """
        with self._lock:
            if self._depth:
                # executescript would silently commit the enclosing transaction.
                raise StoreError("migrate() cannot run inside a transaction")
            version = self.user_version()
            for number, name, script in _migrations(family):
                if number <= version:
                    continue
                try:
                    self._conn.executescript(
                        f"BEGIN IMMEDIATE;\n{script}\n;PRAGMA user_version = {number};\nCOMMIT;"
                    )
                except sqlite3.Error as exc:
                    self._rollback(0, "")
                    raise StoreError(f"schema {family}/{name}: {_detail(exc)}") from exc
                version = number
            return version

    def close(self) -> None:
        """Close the connection; later calls raise `StoreError`. Closing twice is harmless."""
        with self._lock:
            self._conn.close()


def _make_private_dir(folder: Path) -> None:
    """Create a store's folder (mode 0700: transcripts and jobs are private) when missing.

    Raises:
        StoreError: naming the folder when it cannot be created.
    """
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create {folder}: {exc.strerror or exc}") from exc


def _no_check(db: Database) -> None:
    del db


@overload
def open_store(
    path: Path,
    family: str,
    *,
    create: Literal[True],
    busy_timeout_ms: int = ...,
    trace: Callable[[str], None] | None = ...,
    check: Callable[[Database], None] = ...,
) -> Database: ...


@overload
def open_store(
    path: Path,
    family: str,
    *,
    create: Literal[False],
    busy_timeout_ms: int = ...,
    trace: Callable[[str], None] | None = ...,
    check: Callable[[Database], None] = ...,
) -> Database | None: ...


def open_store(
    path: Path,
    family: str,
    *,
    create: bool,
    busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    trace: Callable[[str], None] | None = None,
    check: Callable[[Database], None] = _no_check,
) -> Database | None:
    """The one opener of every store (sessions, cron jobs, memory): open `path`, bring schema
    `family` up to date and run `check`.

    With `create`, the folder (mode 0700) and the file are made when missing. Without it the
    store is only inspected: nothing is ever created, and a missing file is `None`
    (ACP-STORE-17). A failure closes the connection (the file is left as it was) and
    propagates.

    Raises:
        StoreError: when the folder cannot be created, the file cannot be opened or is not a
            database, or a migration or `check` fails.
    """
    if create:
        _make_private_dir(path.parent)
    else:
        try:
            path.stat()
        except FileNotFoundError:
            return None
        except OSError as exc:
            # Design: only a missing file reads as "empty"; a store folder that is a regular
            # file or cannot be read is a store that cannot be opened.
            raise StoreError(f"{path}: {exc.strerror or exc}") from exc
    db = Database(path, create=create, busy_timeout_ms=busy_timeout_ms, trace=trace)
    try:
        db.migrate(family)
        check(db)
    except StoreError:
        db.close()
        raise
    return db


def _migrations(family: str) -> list[tuple[int, str, str]]:
    """The family's migration scripts as (number, file name, text), in number order."""
    try:
        folder = importlib.resources.files(__package__ or "zeroclaw_ref.store") / "schema" / family
        entries = [(entry.name, entry) for entry in folder.iterdir() if entry.is_file()]
    except (OSError, ModuleNotFoundError) as exc:
        raise StoreError(f"schema {family}: {_detail(exc)}") from exc
    found: list[tuple[int, str, str]] = []
    for name, entry in sorted(entries):
        match = _MIGRATION_NAME.match(name)
        if match is not None:
            found.append((int(match.group(1)), name, entry.read_text(encoding="utf-8")))
    if not found:
        raise StoreError(f"schema {family}: no migration files")
    return found
