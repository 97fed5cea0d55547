"""SessionStore: the SQL of a completed turn, reads, deletes, and stores that cannot open (§8)."""

from __future__ import annotations

import errno
import hashlib
import os
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from zeroclaw_ref.store.db import StoreError
from zeroclaw_ref.store.sessions import SessionRow, SessionStore, StoredTurn, store_path

SID = "5b0c9d3e-2f4a-4c61-9a7e-1d2b3c4d5e6f"
T0, T1, T2 = "2026-03-02T10:00:00Z", "2026-03-02T10:15:00Z", "2026-03-02T10:30:00Z"


def _runs(lines: list[str]) -> list[str]:
    """The trace with consecutive repeats folded (trigger programs repeat their statement)."""
    return [line for i, line in enumerate(lines) if i == 0 or lines[i - 1] != line]


@pytest.fixture
def traced(tmp_path: Path) -> tuple[SessionStore, list[str]]:
    lines: list[str] = []
    store = SessionStore.open(tmp_path, trace=lines.append)
    store.insert_session(SID, "main", "/w", T0)
    lines.clear()
    return store, lines


@pytest.fixture
def store(traced: tuple[SessionStore, list[str]]) -> SessionStore:
    return traced[0]


def _turn_count(store: SessionStore) -> int:
    row = store.db.query_one("SELECT COUNT(*) FROM acp_turns")
    assert row is not None and isinstance(row[0], int)
    return row[0]


@pytest.mark.req("ACP-STORE-09")
def test_append_turn_without_a_plan_runs_exactly_this_sql(
    traced: tuple[SessionStore, list[str]],
) -> None:
    store, lines = traced
    assert store.append_turn(SID, '[{"m":1}]', '[{"u":1}]', None, T1) == 0
    # One statement, its own transaction; the schema's trigger refreshes last_activity.
    # (SQLite's trace reports the statement again for its trigger program: compare runs.)
    assert _runs(lines) == [
        "INSERT INTO acp_turns (session_id, turn_index, messages_json, updates_json, created_at) "
        "SELECT s.id, (SELECT COALESCE(MAX(t.turn_index) + 1, 0) FROM acp_turns t "
        f"""WHERE t.session_id = s.id), '[{{"m":1}}]', '[{{"u":1}}]', '{T1}' """
        f"FROM acp_sessions s WHERE s.session_uuid = '{SID}' RETURNING turn_index",
    ]
    assert store.db.query("SELECT last_activity FROM acp_sessions") == [(T1,)]


@pytest.mark.req("ACP-STORE-09")
def test_append_turn_with_a_plan_sets_it_in_the_same_transaction(
    traced: tuple[SessionStore, list[str]],
) -> None:
    store, lines = traced
    store.append_turn(SID, "[]", "[]", None, T1)
    lines.clear()
    assert store.append_turn(SID, "[]", "[]", '[{"content":"a"}]', T2) == 1
    assert _runs(lines) == [
        "BEGIN IMMEDIATE",
        "INSERT INTO acp_turns (session_id, turn_index, messages_json, updates_json, created_at) "
        "SELECT s.id, (SELECT COALESCE(MAX(t.turn_index) + 1, 0) FROM acp_turns t "
        f"WHERE t.session_id = s.id), '[]', '[]', '{T2}' "
        f"FROM acp_sessions s WHERE s.session_uuid = '{SID}' RETURNING turn_index",
        """UPDATE acp_sessions SET plan_json = '[{"content":"a"}]' """
        f"WHERE session_uuid = '{SID}'",
        "COMMIT",
    ]


@pytest.mark.req("ACP-STORE-09", "ACP-STORE-13", "ACP-STORE-16")
def test_append_turn_for_a_deleted_row_is_a_store_error_that_writes_nothing(
    tmp_path: Path, traced: tuple[SessionStore, list[str]]
) -> None:
    store, lines = traced
    other = SessionStore.open(tmp_path)
    assert other.delete(SID)
    with pytest.raises(StoreError, match="no longer in the store"):
        store.append_turn(SID, "[]", "[]", "[]", T1)
    assert lines == [
        "BEGIN IMMEDIATE",
        "INSERT INTO acp_turns (session_id, turn_index, messages_json, updates_json, created_at) "
        "SELECT s.id, (SELECT COALESCE(MAX(t.turn_index) + 1, 0) FROM acp_turns t "
        f"WHERE t.session_id = s.id), '[]', '[]', '{T1}' "
        f"FROM acp_sessions s WHERE s.session_uuid = '{SID}' RETURNING turn_index",
        "ROLLBACK",
    ]
    assert _turn_count(store) == 0


@pytest.mark.req("ACP-STORE-09")
def test_turn_indexes_count_from_zero_per_session(store: SessionStore) -> None:
    store.insert_session("other", "main", "/w", T0)
    assert [store.append_turn(SID, "[]", "[]", None, T1) for _ in range(3)] == [0, 1, 2]
    assert store.append_turn("other", "[]", "[]", None, T1) == 0


@pytest.mark.req("ACP-STORE-08")
def test_insert_session_records_created_at_and_last_activity(store: SessionStore) -> None:
    assert store.db.query(
        "SELECT agent_alias, workspace_dir, token_count, created_at, last_activity, plan_json "
        "FROM acp_sessions"
    ) == [("main", "/w", 0, T0, T0, None)]
    with pytest.raises(StoreError, match="UNIQUE"):
        store.insert_session(SID, "main", "/w", T1)


@pytest.mark.req("ACP-STORE-09", "ACP-RESUME-02")
def test_plan_json_is_set_kept_and_cleared(store: SessionStore) -> None:
    def plan() -> str | None:
        loaded = store.load(SID)
        assert loaded is not None
        return loaded.plan_json

    assert plan() is None
    store.append_turn(SID, "[]", "[]", '[{"content":"a"}]', T1)
    assert plan() == '[{"content":"a"}]'
    store.append_turn(SID, "[]", "[]", None, T2)  # a turn without a plan keeps it
    assert plan() == '[{"content":"a"}]'
    store.append_turn(SID, "[]", "[]", "[]", T2)  # an empty array records a cleared plan
    assert plan() == "[]"
    assert store.db.query("SELECT created_at, last_activity FROM acp_sessions") == [(T0, T2)]


@pytest.mark.req("ACP-LOAD-06", "ACP-LOAD-09")
def test_load_returns_turns_in_turn_index_order(store: SessionStore) -> None:
    for index in (2, 0, 1):  # stored out of order on purpose
        store.db.execute(
            "INSERT INTO acp_turns (session_id, turn_index, messages_json, updates_json, "
            "created_at) VALUES (1, ?, ?, ?, ?)",
            (index, f"[{index}]", f"[u{index}]", T1),
        )
    loaded = store.load(SID)
    assert loaded is not None
    assert (loaded.agent_alias, loaded.workspace_dir) == ("main", "/w")
    assert loaded.turns == [StoredTurn(i, f"[{i}]", f"[u{i}]") for i in range(3)]


def test_the_store_keeps_json_text_verbatim(store: SessionStore) -> None:
    odd = '[ {"text": "é\\u00e9 \\n"} ,\n null ]'
    store.append_turn(SID, odd, odd + " ", odd, T1)
    loaded = store.load(SID)
    assert loaded is not None
    assert loaded.turns == [StoredTurn(0, odd, odd + " ")]
    assert loaded.plan_json == odd


@pytest.mark.req("ACP-LOAD-02")
def test_load_and_exists_of_an_unknown_id(store: SessionStore) -> None:
    assert store.load("nope") is None
    assert not store.exists("nope")
    assert store.exists(SID)


@pytest.mark.req("ACP-STORE-15")
def test_list_is_newest_first_with_ties_in_ascending_id(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path)
    for sid, when in (("c", T1), ("a", T0), ("d", T2), ("b", T1)):
        store.insert_session(sid, f"agent-{sid}", f"/w/{sid}", when)
    assert store.list_sessions() == [
        SessionRow("d", "agent-d", "/w/d", T2),
        SessionRow("b", "agent-b", "/w/b", T1),
        SessionRow("c", "agent-c", "/w/c", T1),
        SessionRow("a", "agent-a", "/w/a", T0),
    ]


@pytest.mark.req("ACP-STORE-16")
def test_delete_cascades_to_the_sessions_turns_only(store: SessionStore) -> None:
    store.insert_session("other", "main", "/w", T0)
    store.append_turn(SID, "[]", "[]", None, T1)
    store.append_turn("other", "[]", "[]", None, T1)
    assert store.delete(SID)
    assert not store.exists(SID)
    assert store.db.query("SELECT session_id FROM acp_turns") == [(2,)]
    assert not store.delete(SID)


@pytest.mark.req("ACP-STORE-01")
def test_open_creates_a_private_sessions_directory(tmp_path: Path) -> None:
    SessionStore.open(tmp_path / "data").close()
    assert store_path(tmp_path / "data").is_file()
    assert (tmp_path / "data" / "sessions").stat().st_mode & 0o777 == 0o700


@pytest.mark.req("ACP-STORE-17")
def test_open_existing_never_creates_the_store(tmp_path: Path) -> None:
    assert SessionStore.open_existing(tmp_path) is None
    assert list(tmp_path.iterdir()) == []
    SessionStore.open(tmp_path).close()
    existing = SessionStore.open_existing(tmp_path)
    assert existing is not None
    assert existing.list_sessions() == []


@pytest.mark.req("ACP-STORE-04")
@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_a_read_only_data_dir_is_a_store_error(tmp_path: Path) -> None:
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(StoreError, match="cannot create"):
            SessionStore.open(tmp_path)
    finally:
        tmp_path.chmod(0o700)


@pytest.mark.req("ACP-STORE-04")
def test_a_data_dir_that_refuses_new_folders_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal above without relying on permissions root ignores (CI runs as root): the
    folder's creation fails with EACCES exactly as mkdir reports it in a read-only data dir,
    and the store turns that into the same error."""
    real_mkdir = Path.mkdir

    def refusing(self: Path, *args: Any, **kwargs: Any) -> None:
        if self.is_relative_to(tmp_path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", refusing)
    with pytest.raises(StoreError, match=r"^cannot create .*: Permission denied$"):
        SessionStore.open(tmp_path)
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.req("ACP-STORE-04", "ACP-STORE-17")
def test_sessions_being_a_regular_file_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "sessions").write_bytes(b"not a directory")
    with pytest.raises(StoreError, match="cannot create"):
        SessionStore.open(tmp_path)
    with pytest.raises(StoreError, match="Not a directory"):
        SessionStore.open_existing(tmp_path)
    assert (tmp_path / "sessions").read_bytes() == b"not a directory"


@pytest.mark.req("ACP-STORE-04")
def test_a_directory_in_place_of_the_file_is_a_store_error(tmp_path: Path) -> None:
    store_path(tmp_path).mkdir(parents=True)
    with pytest.raises(StoreError, match=r"acp-sessions\.db"):
        SessionStore.open(tmp_path)


@pytest.mark.req("ACP-STORE-04", "ACP-STORE-17")
def test_a_corrupt_file_is_a_store_error_and_stays_byte_identical(tmp_path: Path) -> None:
    path = store_path(tmp_path)
    path.parent.mkdir()
    content = b"garbage!" + random.Random(7).randbytes(8192)
    path.write_bytes(content)
    with pytest.raises(StoreError, match="file is not a database"):
        SessionStore.open(tmp_path)
    with pytest.raises(StoreError, match="file is not a database"):
        SessionStore.open_existing(tmp_path)
    assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(content).digest()
    assert sorted(p.name for p in path.parent.iterdir()) == ["acp-sessions.db"]


@pytest.mark.req("ACP-STORE-09")
def test_two_handles_writing_from_threads_lose_nothing(tmp_path: Path) -> None:
    first, second = SessionStore.open(tmp_path), SessionStore.open(tmp_path)
    first.insert_session(SID, "main", "/w", T0)
    writers, per_writer = 4, 25
    start = threading.Barrier(writers)
    failures: list[BaseException] = []

    def write(store: SessionStore, writer: int) -> None:
        start.wait()
        try:
            for n in range(per_writer):
                store.append_turn(SID, f'["{writer}-{n}"]', "[]", None, T1)
        except BaseException as exc:  # reported below, not swallowed
            failures.append(exc)

    threads = [
        threading.Thread(target=write, args=((first, second)[w % 2], w)) for w in range(writers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []
    loaded = first.load(SID)
    assert loaded is not None
    assert [turn.turn_index for turn in loaded.turns] == list(range(writers * per_writer))
    written = {f'["{w}-{n}"]' for w in range(writers) for n in range(per_writer)}
    assert {turn.messages_json for turn in loaded.turns} == written


_LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


@pytest.mark.req("ACP-STORE-03", "ACP-STORE-13")
def test_a_database_locked_by_another_process_gives_a_bounded_store_error(
    tmp_path: Path,
) -> None:
    store = SessionStore.open(tmp_path, busy_timeout_ms=50)
    store.insert_session(SID, "main", "/w", T0)
    locker = subprocess.Popen(
        [sys.executable, "-c", _LOCKER, str(store_path(tmp_path))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert locker.stdin is not None and locker.stdout is not None
    try:
        assert locker.stdout.readline() == "locked\n"
        with pytest.raises(StoreError, match="database is locked"):
            store.append_turn(SID, "[]", "[]", "[]", T1)
        loaded = store.load(SID)  # WAL: reads go on while another process writes
        assert loaded is not None and loaded.turns == []
    finally:
        locker.stdin.close()
        assert locker.wait(timeout=10) == 0
    assert store.append_turn(SID, "[]", "[]", None, T2) == 0
    assert store.db.query("PRAGMA integrity_check") == [("ok",)]


@pytest.mark.req("ACP-STORE-06")
def test_the_store_has_the_required_tables_and_columns(store: SessionStore) -> None:
    def columns(table: str) -> dict[str, tuple[str, int]]:
        rows = store.db.query(f"PRAGMA table_info({table})")
        return {str(r[1]): (str(r[2]).upper(), int(r[3])) for r in rows}  # type: ignore[arg-type]

    sessions = columns("acp_sessions")
    for name, kind, notnull in [
        ("id", "INTEGER", 0), ("session_uuid", "TEXT", 1), ("agent_alias", "TEXT", 1),
        ("workspace_dir", "TEXT", 1), ("token_count", "INTEGER", 1), ("killed_at", "TEXT", 0),
        ("created_at", "TEXT", 1), ("last_activity", "TEXT", 1), ("plan_json", "TEXT", 0),
    ]:  # fmt: skip
        assert sessions[name] == (kind, notnull), name
    turns = columns("acp_turns")
    for name, kind in [
        ("id", "INTEGER"), ("session_id", "INTEGER"), ("turn_index", "INTEGER"),
        ("messages_json", "TEXT"), ("updates_json", "TEXT"), ("created_at", "TEXT"),
    ]:  # fmt: skip
        assert turns[name] == (kind, 0 if name == "id" else 1), name
    with pytest.raises(StoreError):  # UNIQUE (session_id, turn_index)
        store.db.execute(
            "INSERT INTO acp_turns (session_id, turn_index, messages_json, updates_json,"
            " created_at) SELECT id, 0, '[]', '[]', 'x' FROM acp_sessions UNION ALL"
            " SELECT id, 0, '[]', '[]', 'x' FROM acp_sessions"
        )
