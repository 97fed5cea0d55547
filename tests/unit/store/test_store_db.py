"""Database: PRAGMAs, atomic() nesting and rollback, migrations, foreign files (DESIGN §10)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from zeroclaw_ref.store import db as db_module
from zeroclaw_ref.store.db import Database, StoreError
from zeroclaw_ref.store.sessions import SessionStore, store_path


@pytest.fixture
def traced(tmp_path: Path) -> tuple[Database, list[str]]:
    lines: list[str] = []
    database = Database(tmp_path / "t.db", trace=lines.append)
    database.execute("CREATE TABLE t (v TEXT)")
    lines.clear()
    return database, lines


def _values(database: Database) -> list[str]:
    return [str(row[0]) for row in database.query("SELECT v FROM t ORDER BY v")]


@pytest.mark.req("ACP-STORE-03")
def test_open_applies_the_store_pragmas(tmp_path: Path) -> None:
    database = Database(tmp_path / "p.db")
    assert database.query_one("PRAGMA journal_mode") == ("wal",)
    assert database.query_one("PRAGMA synchronous") == (1,)  # NORMAL
    assert database.query_one("PRAGMA busy_timeout") == (5000,)
    assert database.query_one("PRAGMA foreign_keys") == (1,)


@pytest.mark.req("ACP-STORE-03")
def test_journal_mode_is_set_with_no_transaction_open(tmp_path: Path) -> None:
    lines: list[str] = []
    Database(tmp_path / "p.db", busy_timeout_ms=1234, trace=lines.append)
    assert lines == [
        "PRAGMA busy_timeout = 1234",
        "PRAGMA journal_mode = WAL",
        "PRAGMA synchronous = NORMAL",
        "PRAGMA foreign_keys = ON",
    ]


def test_atomic_commits_with_begin_immediate(traced: tuple[Database, list[str]]) -> None:
    database, lines = traced
    with database.atomic():
        database.execute("INSERT INTO t VALUES (?)", ("a",))
    assert lines == ["BEGIN IMMEDIATE", "INSERT INTO t VALUES ('a')", "COMMIT"]
    assert _values(database) == ["a"]


def test_nested_atomic_uses_savepoints(traced: tuple[Database, list[str]]) -> None:
    database, lines = traced
    with database.atomic(), database.atomic(), database.atomic():
        database.execute("INSERT INTO t VALUES ('a')")
    assert lines == [
        "BEGIN IMMEDIATE",
        "SAVEPOINT sp_1",
        "SAVEPOINT sp_2",
        "INSERT INTO t VALUES ('a')",
        "RELEASE sp_2",
        "RELEASE sp_1",
        "COMMIT",
    ]


def test_a_failing_inner_block_rolls_back_only_its_savepoint(
    traced: tuple[Database, list[str]],
) -> None:
    database, lines = traced
    with database.atomic():
        database.execute("INSERT INTO t VALUES ('outer')")
        with pytest.raises(ValueError, match="inner"), database.atomic():
            database.execute("INSERT INTO t VALUES ('inner')")
            raise ValueError("inner")
    assert lines == [
        "BEGIN IMMEDIATE",
        "INSERT INTO t VALUES ('outer')",
        "SAVEPOINT sp_1",
        "INSERT INTO t VALUES ('inner')",
        "ROLLBACK TO sp_1",
        "RELEASE sp_1",
        "COMMIT",
    ]
    assert _values(database) == ["outer"]


def test_a_failure_inside_rolls_everything_back_and_propagates_unchanged(
    traced: tuple[Database, list[str]],
) -> None:
    database, lines = traced
    with pytest.raises(KeyError), database.atomic():
        database.execute("INSERT INTO t VALUES ('a')")
        with database.atomic():
            database.execute("INSERT INTO t VALUES ('b')")
        raise KeyError("boom")
    assert lines[-2:] == ["RELEASE sp_1", "ROLLBACK"]
    assert _values(database) == []


def test_an_sql_error_inside_becomes_store_error_and_the_handle_stays_usable(
    traced: tuple[Database, list[str]],
) -> None:
    database, _ = traced
    with pytest.raises(StoreError, match="no such table"), database.atomic():
        database.execute("INSERT INTO t VALUES ('a')")
        database.execute("INSERT INTO missing VALUES ('b')")
    assert _values(database) == []
    with database.atomic():
        database.execute("INSERT INTO t VALUES ('c')")
    assert _values(database) == ["c"]


@pytest.mark.req("ACP-STORE-03")
def test_migration_sets_user_version_and_creates_the_tables(tmp_path: Path) -> None:
    database = Database(tmp_path / "m.db")
    assert database.migrate("acp") == 2
    assert database.user_version() == 2
    names = {row[0] for row in database.query("SELECT name FROM sqlite_master")}
    assert {"acp_sessions", "acp_turns", "acp_turns_touch_session"} <= names


def test_reopening_a_migrated_file_runs_no_migration(tmp_path: Path) -> None:
    Database(tmp_path / "m.db").migrate("acp")
    lines: list[str] = []
    database = Database(tmp_path / "m.db", trace=lines.append)
    lines.clear()
    assert database.migrate("acp") == 2
    assert lines == ["PRAGMA user_version"]


def test_a_failing_migration_keeps_the_version_and_leaves_no_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = "CREATE TABLE a (x);\nCREATE TABLE a (x);"
    monkeypatch.setattr(db_module, "_migrations", lambda family: [(1, "0001_bad.sql", script)])
    database = Database(tmp_path / "m.db")
    with pytest.raises(StoreError, match=r"0001_bad\.sql: table a already exists"):
        database.migrate("acp")
    assert database.user_version() == 0
    assert database.query("SELECT name FROM sqlite_master WHERE name = 'a'") == []
    with database.atomic():  # not stuck inside the failed script's transaction
        database.execute("CREATE TABLE b (x)")


def test_migrate_refuses_to_run_inside_a_transaction(tmp_path: Path) -> None:
    database = Database(tmp_path / "m.db")
    with pytest.raises(StoreError, match="inside a transaction"), database.atomic():
        database.migrate("acp")
    assert database.user_version() == 0


def test_an_unknown_schema_family_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="schema nope"):
        Database(tmp_path / "m.db").migrate("nope")


@pytest.mark.req("ACP-STORE-07")
def test_a_file_of_another_version_with_extra_tables_opens_cleanly(tmp_path: Path) -> None:
    path = store_path(tmp_path)
    path.parent.mkdir()
    with sqlite3.connect(path) as raw:
        raw.executescript(
            """
            CREATE TABLE memories (key TEXT PRIMARY KEY, body TEXT);
            INSERT INTO memories VALUES ('k', 'kept');
            CREATE TABLE acp_sessions (
              id INTEGER PRIMARY KEY AUTOINCREMENT, session_uuid TEXT NOT NULL UNIQUE,
              agent_alias TEXT NOT NULL, workspace_dir TEXT NOT NULL,
              token_count INTEGER NOT NULL DEFAULT 0, killed_at TEXT, created_at TEXT NOT NULL,
              last_activity TEXT NOT NULL, plan_json TEXT, title TEXT);
            INSERT INTO acp_sessions (session_uuid, agent_alias, workspace_dir, created_at,
              last_activity, title) VALUES ('old', 'main', '/w', 't0', 't1', 'x');
            """
        )
    raw.close()
    store = SessionStore.open(tmp_path)
    loaded = store.load("old")
    assert loaded is not None
    assert loaded.turns == []  # a row without turns restores with an empty history
    assert store.append_turn("old", "[]", "[]", None, "t2") == 0
    assert store.db.query("SELECT body FROM memories") == [("kept",)]


@pytest.mark.req("ACP-STORE-04", "ACP-STORE-07")
def test_a_foreign_acp_sessions_layout_fails_at_open(tmp_path: Path) -> None:
    path = store_path(tmp_path)
    path.parent.mkdir()
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE acp_sessions (session_id TEXT PRIMARY KEY, cwd TEXT)")
    raw.close()
    with pytest.raises(StoreError, match="acp_sessions lacks column"):
        SessionStore.open(tmp_path)


def test_a_closed_handle_raises_store_error(tmp_path: Path) -> None:
    database = Database(tmp_path / "c.db")
    database.close()
    with pytest.raises(StoreError):
        database.query("SELECT 1")
