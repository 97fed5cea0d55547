"""The ACP session store: session rows and one row per completed turn (acp.md §8).

Implements ACP-STORE-01, ACP-STORE-04, ACP-STORE-06 to ACP-STORE-09 and ACP-STORE-15 to
ACP-STORE-17, the reads behind ACP-LOAD-02 and ACP-LOAD-06, and the pages behind the stable
`session/list` (ZC-LIST-03); `delete` also serves `session/delete` (ZC-DEL-03).

Design note.
  Goals: the one write of a completed turn is atomic, and every failure is a
  `StoreError` the caller can log and survive.
  Plan: a `SessionStore` owns one `Database` (one connection, one lock, DESIGN §10);
  each public method is one transaction. The store keeps the JSON text it is given and
  never parses messages or updates: their meaning belongs to the engine and `acp/`.
  Caveats: `acp sessions delete` (or `session/delete` on another server's connection) may
  remove a row while a server still serves that session; the server's next `append_turn` then
  fails with `StoreError` (ACP-STORE-16). Pages are read without an index on
  `last_activity`: a store holds a person's sessions, hundreds, not millions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from zeroclaw_ref.store.db import (
    BUSY_TIMEOUT_MS,
    Database,
    Row,
    SqlValue,
    StoreError,
    open_store,
)

# [ACP-STORE-01] `<data dir>/sessions/acp-sessions.db`
SESSIONS_DIR = "sessions"
STORE_FILE = "acp-sessions.db"
SCHEMA_FAMILY = "acp"

# Design: the columns this module reads or writes; a file whose tables lack one of them
# (another version's layout) fails at open, not at the first completed turn.
_REQUIRED_COLUMNS = {
    "acp_sessions": (
        "id",
        "session_uuid",
        "agent_alias",
        "workspace_dir",
        "created_at",
        "last_activity",
        "plan_json",
    ),
    "acp_turns": ("session_id", "turn_index", "messages_json", "updates_json", "created_at"),
}


@dataclass(frozen=True, slots=True)
class StoredTurn:
    """One completed turn as stored: its ConversationMessages and its update log (JSON text)."""

    turn_index: int
    messages_json: str
    updates_json: str


@dataclass(frozen=True, slots=True)
class StoredSession:
    """A session row with its turns in `turn_index` order."""

    session_id: str
    agent_alias: str
    workspace_dir: str
    plan_json: str | None
    turns: list[StoredTurn]


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One line of `acp sessions list` (ACP-STORE-15)."""

    session_id: str
    agent_alias: str
    workspace_dir: str
    last_activity: str


@dataclass(frozen=True, slots=True)
class ListedSession:
    """One session of a `session/list` page, with the position a cursor resumes after."""

    row_id: int
    session_id: str
    agent_alias: str
    workspace_dir: str
    last_activity: str


def store_path(data_dir: Path) -> Path:
    """Where the session store lives under a data dir (ACP-STORE-01)."""
    return data_dir / SESSIONS_DIR / STORE_FILE


def _text(value: SqlValue, column: str) -> str:
    if not isinstance(value, str):
        raise StoreError(f"unexpected value in column {column}: {type(value).__name__}")
    return value


def _storable(session_id: str) -> bool:
    """Whether the id has a UTF-8 form: one that has none (a lone surrogate sent as `\\udfff`)
    cannot name a stored row, so it is simply not found (acp.md ACP-TR-22), where binding it
    would raise an encoding error."""
    try:
        session_id.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _integer(value: SqlValue, column: str) -> int:
    if not isinstance(value, int):
        raise StoreError(f"unexpected value in column {column}: {type(value).__name__}")
    return value


_INSERT_TURN = (
    "INSERT INTO acp_turns "
    "(session_id, turn_index, messages_json, updates_json, created_at) "
    "SELECT s.id, (SELECT COALESCE(MAX(t.turn_index) + 1, 0) FROM acp_turns t "
    "WHERE t.session_id = s.id), ?, ?, ? "
    "FROM acp_sessions s WHERE s.session_uuid = ? RETURNING turn_index"
)


class SessionStore:
    """Session rows and turn rows over one `Database`."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @classmethod
    def open(
        cls,
        data_dir: Path,
        *,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        trace: Callable[[str], None] | None = None,
    ) -> SessionStore:
        """Open the store, creating its directory, file and tables when missing.

        Raises:
            StoreError: when the directory or file cannot be created or opened, the file
                is not a database, or the schema cannot be created (ACP-STORE-04); the
                caller runs without a store. An existing file is never removed or rewritten.
        """
        # [ACP-STORE-01] the folder and the file are created when missing
        db = open_store(
            store_path(data_dir),
            SCHEMA_FAMILY,
            create=True,
            busy_timeout_ms=busy_timeout_ms,
            trace=trace,
            check=_check_columns,
        )
        return cls(db)

    @classmethod
    def open_existing(
        cls,
        data_dir: Path,
        *,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        trace: Callable[[str], None] | None = None,
    ) -> SessionStore | None:
        """Open the store for inspection; None when the file does not exist (ACP-STORE-17).

        Neither the directory nor the file is ever created.

        Raises:
            StoreError: when the file exists but cannot be opened or is not a database.
        """
        db = open_store(
            store_path(data_dir),
            SCHEMA_FAMILY,
            create=False,
            busy_timeout_ms=busy_timeout_ms,
            trace=trace,
            check=_check_columns,
        )
        return None if db is None else cls(db)

    def close(self) -> None:
        """Close the underlying connection."""
        self.db.close()

    # -- writes ---------------------------------------------------------------------------

    def insert_session(
        self, session_id: str, agent_alias: str, workspace_dir: str, now: str
    ) -> None:
        """Insert a new session row; `created_at` and `last_activity` are `now` (ACP-STORE-08).

        Raises:
            StoreError: when the row cannot be written (`session/new` then fails, ACP-NEW-19).
        """
        with self.db.atomic():
            self.db.execute(
                "INSERT INTO acp_sessions "
                "(session_uuid, agent_alias, workspace_dir, created_at, last_activity) "
                "VALUES (?, ?, ?, ?, ?)",
                (session_id, agent_alias, workspace_dir, now, now),
            )

    def append_turn(
        self,
        session_id: str,
        messages_json: str,
        updates_json: str,
        plan_json: str | None,
        now: str,
    ) -> int:
        """Store one completed turn in one transaction and return its `turn_index`.

        `plan_json` is the turn's last plan, or None when the turn emitted none; `[]`
        records a cleared plan.

        Raises:
            StoreError: when anything fails, including a session row deleted meanwhile;
                nothing of the turn is kept (the caller logs a WARN, ACP-STORE-13).
        """
        # [ACP-STORE-09] the turn row, plan_json and last_activity in one transaction. Design:
        # the session lookup and the next index are folded into the INSERT, and a trigger
        # (schema 0002) refreshes last_activity, so a turn without a plan is ONE statement —
        # its own transaction — and a turn with one adds a single UPDATE inside BEGIN/COMMIT
        # (bench/acp_prompt_rtt). A session row deleted meanwhile inserts nothing.
        gone = StoreError(f"session {session_id} is no longer in the store")
        if plan_json is None:
            row = self.db.query_one(_INSERT_TURN, (messages_json, updates_json, now, session_id))
            if row is None:
                raise gone
            return _integer(row[0], "turn_index")
        with self.db.atomic():
            row = self.db.query_one(_INSERT_TURN, (messages_json, updates_json, now, session_id))
            if row is None:
                raise gone  # rolls the (empty) transaction back
            self.db.execute(
                "UPDATE acp_sessions SET plan_json = ? WHERE session_uuid = ?",
                (plan_json, session_id),
            )
        return _integer(row[0], "turn_index")

    def delete(self, session_id: str) -> bool:
        """Delete a session row and, by cascade, its turns; False when no row has that id.

        Raises:
            StoreError: when the delete fails.
        """
        # [ACP-STORE-16] the foreign key's ON DELETE CASCADE removes the acp_turns rows
        if not _storable(session_id):
            return False
        with self.db.atomic():
            return (
                self.db.execute("DELETE FROM acp_sessions WHERE session_uuid = ?", (session_id,))
                > 0
            )

    # -- reads ----------------------------------------------------------------------------

    def exists(self, session_id: str) -> bool:
        """Whether a session row has that id.

        Raises:
            StoreError: when the read fails.
        """
        if not _storable(session_id):
            return False
        row = self.db.query_one("SELECT 1 FROM acp_sessions WHERE session_uuid = ?", (session_id,))
        return row is not None

    def load(self, session_id: str) -> StoredSession | None:
        """The stored session with its turns in `turn_index` order; None when no row.

        Raises:
            StoreError: when the read fails or a value has an unexpected type (the caller
                answers `Failed to load session: <detail>`, ACP-LOAD-02 step 5).
        """
        if not _storable(session_id):
            return None  # (6) no row, never (5) a read error
        with self.db.reading():
            head = self.db.query_one(
                "SELECT id, agent_alias, workspace_dir, plan_json "
                "FROM acp_sessions WHERE session_uuid = ?",
                (session_id,),
            )
            if head is None:
                return None
            rows = self.db.query(
                "SELECT turn_index, messages_json, updates_json FROM acp_turns "
                "WHERE session_id = ? ORDER BY turn_index",
                (head[0],),
            )
        plan = head[3]
        return StoredSession(
            session_id=session_id,
            agent_alias=_text(head[1], "agent_alias"),
            workspace_dir=_text(head[2], "workspace_dir"),
            plan_json=None if plan is None else _text(plan, "plan_json"),
            turns=[_turn(row) for row in rows],
        )

    def list_sessions(self) -> list[SessionRow]:
        """Every session, newest `last_activity` first, ties by ascending id (ACP-STORE-15).

        Raises:
            StoreError: when the read fails.
        """
        rows = self.db.query(
            "SELECT session_uuid, agent_alias, workspace_dir, last_activity FROM acp_sessions "
            "ORDER BY last_activity DESC, session_uuid ASC"
        )
        return [
            SessionRow(
                session_id=_text(row[0], "session_uuid"),
                agent_alias=_text(row[1], "agent_alias"),
                workspace_dir=_text(row[2], "workspace_dir"),
                last_activity=_text(row[3], "last_activity"),
            )
            for row in rows
        ]

    def list_page(
        self,
        workspaces: tuple[str, ...] | None,
        after: tuple[str, int] | None,
        limit: int,
    ) -> list[ListedSession]:
        """Up to `limit` sessions, newest `last_activity` first, ties newest row first.

        `workspaces`: keep only sessions whose stored workspace is one of these (None: all).
        `after`: the (`last_activity`, row id) of the last session of the previous page; the
        page starts with the session that follows it in this order (keyset pagination, so
        sessions created meanwhile never shift a later page).

        Raises:
            StoreError: when the read fails.
        """
        where: list[str] = []
        args: list[SqlValue] = []
        if workspaces is not None:
            if not workspaces:
                return []
            where.append(f"workspace_dir IN ({', '.join('?' for _ in workspaces)})")
            args += workspaces
        if after is not None:
            where.append("(last_activity < ? OR (last_activity = ? AND id < ?))")
            args += [after[0], after[0], after[1]]
        sql = "SELECT id, session_uuid, agent_alias, workspace_dir, last_activity FROM acp_sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY last_activity DESC, id DESC LIMIT ?"
        rows = self.db.query(sql, (*args, limit))
        return [
            ListedSession(
                row_id=_integer(row[0], "id"),
                session_id=_text(row[1], "session_uuid"),
                agent_alias=_text(row[2], "agent_alias"),
                workspace_dir=_text(row[3], "workspace_dir"),
                last_activity=_text(row[4], "last_activity"),
            )
            for row in rows
        ]

    def _row_id(self, session_id: str) -> int:
        row = self.db.query_one("SELECT id FROM acp_sessions WHERE session_uuid = ?", (session_id,))
        if row is None:
            # `acp sessions delete` removed it while the session ran (ACP-STORE-16).
            raise StoreError(f"session {session_id} is no longer in the store")
        return _integer(row[0], "id")


def _turn(row: Row) -> StoredTurn:
    return StoredTurn(
        turn_index=_integer(row[0], "turn_index"),
        messages_json=_text(row[1], "messages_json"),
        updates_json=_text(row[2], "updates_json"),
    )


def _check_columns(db: Database) -> None:
    """Fail at open when a table lacks a column this module uses (ACP-STORE-04, ACP-STORE-07)."""
    for table, columns in _REQUIRED_COLUMNS.items():
        present = {row[1] for row in db.query(f"PRAGMA table_info({table})")}
        missing = [column for column in columns if column not in present]
        if missing:
            raise StoreError(f"table {table} lacks column(s) {', '.join(missing)}")
