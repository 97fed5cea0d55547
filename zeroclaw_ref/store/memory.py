"""One agent's long-term memory: a key-value table of notes in its own SQLite file (policy.md §11).

Implements the storage side of POL-MEM-01 and POL-MEM-04 to POL-MEM-08; the tool texts live in
`tools/memory.py` and automatic recall and save (POL-MEM-03) in the engine.

Design note.
  Goals: nothing touches the disk until memory is first used (POL-MEM-02), and recall is
  deterministic without an embedding model (POL-MEM-05).
  Plan: `LazyMemory` holds the path and opens the `MemoryStore` on the first `get()`; the
  store owns one `Database` and each public method is one statement or transaction. Recall
  scores every row in Python: stores are small, and the ordering rule is easier to read
  here than in SQL.
  Caveats: timestamps have whole-second resolution, so entries written in the same second
  are ordered by key.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from zeroclaw_ref.store.db import Database, Row, SqlValue, StoreError, open_store

# [POL-MEM-01] [CFG-DIR-05] `<data_dir>/memory/<alias>.sqlite3`
MEMORY_DIR = "memory"
SCHEMA_FAMILY = "memory"
_COLUMNS = "key, content, category, session_id, created_at, updated_at"
# Design: the wildcard query of POL-MEM-05, meaning "no keyword filter".
WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One row of `memories`, its fields in column order."""

    key: str
    content: str
    category: str
    session_id: str | None
    created_at: str
    updated_at: str


def memory_path(data_dir: Path, alias: str) -> Path:
    """Where the agent `alias` keeps its memory under a data dir (POL-MEM-01)."""
    return data_dir / MEMORY_DIR / f"{alias}.sqlite3"


def query_terms(query: str | None) -> list[str]:
    """[POL-MEM-05] the lower-case whitespace-separated terms; none for an absent query or `*`."""
    if query is None or query.strip() == WILDCARD:
        return []
    return query.lower().split()


def _text(value: SqlValue, column: str) -> str:
    if not isinstance(value, str):
        raise StoreError(f"unexpected value in column {column}: {type(value).__name__}")
    return value


def _entry(row: Row) -> MemoryEntry:
    session = row[3]
    return MemoryEntry(
        key=_text(row[0], "key"),
        content=_text(row[1], "content"),
        category=_text(row[2], "category"),
        session_id=None if session is None else _text(session, "session_id"),
        created_at=_text(row[4], "created_at"),
        updated_at=_text(row[5], "updated_at"),
    )


class MemoryStore:
    """The `memories` table of one agent over one `Database`."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @classmethod
    def open(cls, path: Path) -> MemoryStore:
        """Open the store at `path`, creating its directory, file and table when missing.

        Raises:
            StoreError: when the directory or file cannot be created or opened, the file is
                not a database, or the table cannot be created. The caller reports the
                failure for this call; a later call may try again.
        """
        # the folder is made 0700: memory holds the operator's notes and past prompts
        return cls(open_store(path, SCHEMA_FAMILY, create=True))

    def close(self) -> None:
        """Close the underlying connection."""
        self.db.close()

    def store(
        self, key: str, content: str, category: str, session_id: str | None, now: str
    ) -> None:
        """[POL-MEM-04] insert the entry, or replace the one with that key.

        Raises:
            StoreError: when the write fails.
        """
        # Design: a replaced entry keeps its created_at; updated_at records the replacement,
        # which is what recall orders by.
        with self.db.atomic():
            self.db.execute(
                f"INSERT INTO memories ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET content = excluded.content, "
                "category = excluded.category, session_id = excluded.session_id, "
                "updated_at = excluded.updated_at",
                (key, content, category, session_id, now, now),
            )

    def recall(self, query: str | None, limit: int) -> list[MemoryEntry]:
        """[POL-MEM-05] at most `limit` entries matching `query`, best first.

        An entry scores one point per query term found in its lower-cased `key + " " +
        content`; entries scoring at least 1 come by score, then newest `updated_at`, then
        key. Without terms (absent, blank or `*`) the newest entries come first.

        Raises:
            StoreError: when the read fails.
        """
        if limit < 1:
            return []
        terms = query_terms(query)
        if not terms:
            rows = self.db.query(
                f"SELECT {_COLUMNS} FROM memories ORDER BY updated_at DESC, key ASC LIMIT ?",
                (limit,),
            )
            return [_entry(row) for row in rows]
        scored: list[tuple[int, MemoryEntry]] = []
        for row in self.db.query(f"SELECT {_COLUMNS} FROM memories"):
            entry = _entry(row)
            haystack = f"{entry.key} {entry.content}".lower()
            score = sum(1 for term in terms if term in haystack)
            if score:
                scored.append((score, entry))
        # Stable sorts, last key first: key ascending, then updated_at and score descending.
        scored.sort(key=lambda item: item[1].key)
        scored.sort(key=lambda item: item[1].updated_at, reverse=True)
        scored.sort(key=lambda item: item[0], reverse=True)
        return [entry for _, entry in scored[:limit]]

    def forget(self, key: str) -> bool:
        """[POL-MEM-06] delete the entry with that key; False when there was none.

        Raises:
            StoreError: when the delete fails.
        """
        with self.db.atomic():
            return self.db.execute("DELETE FROM memories WHERE key = ?", (key,)) > 0

    def export(self, category: str | None) -> list[MemoryEntry]:
        """[POL-MEM-07] every entry (only those of `category` when given), ordered by key.

        Raises:
            StoreError: when the read fails.
        """
        if category is None:
            rows = self.db.query(f"SELECT {_COLUMNS} FROM memories ORDER BY key")
        else:
            rows = self.db.query(
                f"SELECT {_COLUMNS} FROM memories WHERE category = ? ORDER BY key", (category,)
            )
        return [_entry(row) for row in rows]

    def purge(self, category: str | None, session_id: str | None) -> int:
        """[POL-MEM-08] delete the entries matching every given filter; return how many.

        Raises:
            ValueError: when neither filter is given (a whole-store wipe is never meant).
            StoreError: when the delete fails.
        """
        clauses: list[str] = []
        params: list[SqlValue] = []
        if category is not None:
            clauses.append("category = ?")
            params.append(category)
        if session_id is not None:
            clauses.append("session_id = ?")
            params.append(session_id)
        if not clauses:
            raise ValueError("purge needs a category or a session_id")
        with self.db.atomic():
            return self.db.execute(f"DELETE FROM memories WHERE {' AND '.join(clauses)}", params)


class LazyMemory:
    """A memory store opened on the first `get()`, never before (POL-MEM-02).

    Shared by the five memory tools of one execution and, when the lead wires it, by the
    engine's automatic recall and save (POL-MEM-03). Thread-safe: two first calls racing
    open one store.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._store: MemoryStore | None = None

    @property
    def opened(self) -> bool:
        """Whether the store has been opened (tests and the snapshot use this)."""
        return self._store is not None

    def get(self) -> MemoryStore:
        """The open store, opening it now when this is the first use.

        Raises:
            StoreError: when opening fails; the next call tries again.
        """
        with self._lock:
            if self._store is None:
                self._store = MemoryStore.open(self.path)
            return self._store

    def close(self) -> None:
        """Close the store when it was opened; later `get()` calls reopen it."""
        with self._lock:
            store, self._store = self._store, None
        if store is not None:
            store.close()
