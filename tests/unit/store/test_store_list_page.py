"""SessionStore.list_page: the keyset pages behind ACP session/list (acp/listing.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeroclaw_ref.store.sessions import ListedSession, SessionStore

T = "2026-03-02T10:00:0{}Z"


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    opened = SessionStore.open(tmp_path)
    rows = [("a", "/w", 0), ("b", "/x", 1), ("c", "/w", 1), ("d", "/w", 2), ("e", "/x", 0)]
    for sid, workspace, second in rows:
        opened.insert_session(sid, "main", workspace, T.format(second))
    return opened


def ids(rows: list[ListedSession]) -> list[str]:
    return [r.session_id for r in rows]


@pytest.mark.req("ZC-LIST-03")
def test_newest_activity_first_and_ties_newest_row_first(store: SessionStore) -> None:
    assert ids(store.list_page(None, None, 10)) == ["d", "c", "b", "e", "a"]


@pytest.mark.req("ZC-LIST-03")
def test_a_page_continues_after_the_last_row_of_the_one_before(store: SessionStore) -> None:
    first = store.list_page(None, None, 2)
    assert ids(first) == ["d", "c"]
    last = first[-1]
    rest = store.list_page(None, (last.last_activity, last.row_id), 10)
    assert ids(rest) == ["b", "e", "a"]
    store.append_turn("a", "[]", "[]", None, T.format(9))  # a turn moves "a" to the front
    assert ids(store.list_page(None, (last.last_activity, last.row_id), 10)) == ["b", "e"]


@pytest.mark.req("ZC-LIST-04")
def test_workspaces_filter_on_any_of_the_spellings(store: SessionStore) -> None:
    assert ids(store.list_page(("/w",), None, 10)) == ["d", "c", "a"]
    assert ids(store.list_page(("/nowhere", "/x"), None, 10)) == ["b", "e"]
    assert store.list_page((), None, 10) == []


def test_rows_carry_what_session_info_needs(store: SessionStore) -> None:
    row = store.list_page(("/x",), None, 1)[0]
    assert (row.session_id, row.agent_alias, row.workspace_dir, row.last_activity) == (
        "b",
        "main",
        "/x",
        T.format(1),
    )
    assert row.row_id == 2
