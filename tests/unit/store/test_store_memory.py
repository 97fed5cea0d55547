"""MemoryStore: the memories table, upsert, keyword recall, export and purge (policy.md §11)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from zeroclaw_ref.store.memory import LazyMemory, MemoryEntry, MemoryStore, memory_path

T0, T1, T2 = "2026-03-02T10:00:00Z", "2026-03-02T10:15:00Z", "2026-03-02T10:30:00Z"


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore.open(memory_path(tmp_path, "main"))


def _opened(lazy: LazyMemory) -> bool:
    # A call, so the type checker does not carry a narrowed property across `get()`.
    return lazy.opened


def _keys(entries: list[MemoryEntry]) -> list[str]:
    return [entry.key for entry in entries]


@pytest.mark.req("POL-MEM-01", "CFG-DIR-05")
def test_the_store_is_one_file_per_agent_under_the_data_dir(tmp_path: Path) -> None:
    path = memory_path(tmp_path / "data", "coder")
    assert path == tmp_path / "data" / "memory" / "coder.sqlite3"
    MemoryStore.open(path).close()
    assert path.is_file()
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


@pytest.mark.req("POL-MEM-01")
def test_the_table_has_the_six_columns(store: MemoryStore) -> None:
    rows = store.db.query("PRAGMA table_info(memories)")
    columns = [(row[1], row[2], row[3], row[5]) for row in rows]
    assert columns == [
        ("key", "TEXT", 0, 1),
        ("content", "TEXT", 1, 0),
        ("category", "TEXT", 1, 0),
        ("session_id", "TEXT", 0, 0),
        ("created_at", "TEXT", 1, 0),
        ("updated_at", "TEXT", 1, 0),
    ]


@pytest.mark.req("POL-MEM-04")
def test_storing_a_key_again_replaces_the_entry_and_keeps_created_at(store: MemoryStore) -> None:
    store.store("lang", "Python", "core", "run-1", T0)
    store.store("lang", "Rust", "prefs", "run-2", T1)
    assert store.export(None) == [MemoryEntry("lang", "Rust", "prefs", "run-2", T0, T1)]


def test_reopening_keeps_the_entries(tmp_path: Path) -> None:
    path = memory_path(tmp_path, "main")
    first = MemoryStore.open(path)
    first.store("k", "v", "core", None, T0)
    first.close()
    again = MemoryStore.open(path)
    assert again.export(None) == [MemoryEntry("k", "v", "core", None, T0, T0)]


@pytest.mark.req("POL-MEM-05")
def test_recall_orders_by_score_then_newest_then_key(store: MemoryStore) -> None:
    store.store("a-one", "likes tea", "core", None, T0)
    store.store("b-two", "likes tea and green things", "core", None, T0)
    store.store("c-three", "green tea please", "core", None, T1)
    store.store("d-four", "nothing relevant", "core", None, T2)
    store.store("a-zero", "green tea too", "core", None, T1)
    # "green tea": two points for b-two, c-three, a-zero; one for a-one.
    assert _keys(store.recall("Green TEA", 10)) == ["a-zero", "c-three", "b-two", "a-one"]


@pytest.mark.req("POL-MEM-05")
def test_recall_matches_terms_in_the_key_too(store: MemoryStore) -> None:
    store.store("user:name", "Ada", "core", None, T0)
    store.store("other", "unrelated", "core", None, T0)
    assert _keys(store.recall("NAME", 5)) == ["user:name"]
    # The key and the content are joined by a space, so a term may span them.
    assert _keys(store.recall("name ada", 5)) == ["user:name"]


@pytest.mark.req("POL-MEM-05")
@pytest.mark.parametrize("query", [None, "", "*", "   ", " * "])
def test_recall_without_terms_returns_the_newest(store: MemoryStore, query: str | None) -> None:
    store.store("old", "x", "core", None, T0)
    store.store("new-b", "y", "core", None, T2)
    store.store("new-a", "z", "core", None, T2)
    store.store("mid", "w", "core", None, T1)
    assert _keys(store.recall(query, 3)) == ["new-a", "new-b", "mid"]


@pytest.mark.req("POL-MEM-05")
def test_recall_respects_the_limit_and_finds_nothing_without_a_match(store: MemoryStore) -> None:
    for i in range(5):
        store.store(f"k{i}", "apple", "core", None, T0)
    assert _keys(store.recall("apple", 2)) == ["k0", "k1"]
    assert store.recall("banana", 5) == []
    assert store.recall(None, 0) == []


@pytest.mark.req("POL-MEM-06")
def test_forget_reports_whether_an_entry_was_deleted(store: MemoryStore) -> None:
    store.store("k", "v", "core", None, T0)
    assert store.forget("k") is True
    assert store.forget("k") is False
    assert store.export(None) == []


@pytest.mark.req("POL-MEM-07")
def test_export_is_ordered_by_key_and_filtered_by_category(store: MemoryStore) -> None:
    store.store("b", "2", "core", None, T0)
    store.store("a", "1", "prefs", "s", T1)
    store.store("c", "3", "prefs", None, T2)
    assert _keys(store.export(None)) == ["a", "b", "c"]
    assert _keys(store.export("prefs")) == ["a", "c"]
    assert store.export("none") == []


@pytest.mark.req("POL-MEM-08")
def test_purge_deletes_entries_matching_every_given_filter(store: MemoryStore) -> None:
    store.store("a", "1", "conversation", "run-1", T0)
    store.store("b", "2", "conversation", "run-2", T0)
    store.store("c", "3", "core", "run-1", T0)
    store.store("d", "4", "core", None, T0)
    assert store.purge("conversation", "run-1") == 1
    assert _keys(store.export(None)) == ["b", "c", "d"]
    assert store.purge(None, "run-1") == 1
    assert store.purge("core", None) == 1
    assert _keys(store.export(None)) == ["b"]
    assert store.purge("nothing", None) == 0


@pytest.mark.req("POL-MEM-08")
def test_purge_without_a_filter_is_refused(store: MemoryStore) -> None:
    store.store("a", "1", "core", None, T0)
    with pytest.raises(ValueError):
        store.purge(None, None)
    assert _keys(store.export(None)) == ["a"]


@pytest.mark.req("POL-MEM-02")
def test_a_lazy_store_touches_nothing_until_first_use(tmp_path: Path) -> None:
    path = memory_path(tmp_path, "main")
    lazy = LazyMemory(path)
    assert not _opened(lazy) and not path.parent.exists()
    assert lazy.get() is lazy.get()
    assert _opened(lazy) and path.is_file()
    lazy.close()
    assert not _opened(lazy)
    lazy.close()
