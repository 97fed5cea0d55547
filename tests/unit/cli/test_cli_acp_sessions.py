"""`acp sessions list|delete`: output lines, error texts and exit statuses (acp.md §8.7)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from zeroclaw_ref.cli.acp_sessions import run_sessions
from zeroclaw_ref.store.sessions import SessionStore, store_path

A = "5b0c9d3e-2f4a-4c61-9a7e-1d2b3c4d5e6f"
B = "0f1e2d3c-4b5a-4697-8887-766554433221"


def _run(argv: list[str], data_dir: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run_sessions(argv, data_dir, out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    store = SessionStore.open(tmp_path)
    store.insert_session(A, "myagent", "/home/dev/project", "2026-03-02T10:15:00Z")
    store.insert_session(B, "other", "/home/dev/other", "2026-03-01T09:00:00Z")
    store.append_turn(A, "[]", "[]", None, "2026-03-02T10:15:00Z")
    store.close()
    return tmp_path


@pytest.mark.req("ACP-STORE-15")
def test_list_prints_one_tab_separated_line_per_session_newest_first(data_dir: Path) -> None:
    assert _run(["list"], data_dir) == (
        0,
        f"{A}\tmyagent\t/home/dev/project\t2026-03-02T10:15:00Z\n"
        f"{B}\tother\t/home/dev/other\t2026-03-01T09:00:00Z\n",
        "",
    )


@pytest.mark.req("ACP-STORE-15", "ACP-STORE-17")
def test_list_without_a_store_file_prints_nothing_and_creates_nothing(tmp_path: Path) -> None:
    assert _run(["list"], tmp_path) == (0, "", "")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.req("ACP-STORE-15")
def test_list_of_an_empty_store_prints_nothing(tmp_path: Path) -> None:
    SessionStore.open(tmp_path).close()
    assert _run(["list"], tmp_path) == (0, "", "")


@pytest.mark.req("ACP-STORE-16")
def test_delete_removes_the_session_and_leaves_uploads_alone(data_dir: Path) -> None:
    uploads = data_dir / "workspace" / "uploads"
    uploads.mkdir(parents=True)
    (uploads / "kept.txt").write_text("kept")
    assert _run(["delete", A], data_dir) == (0, f"Deleted {A}\n", "")
    assert _run(["list"], data_dir)[1] == f"{B}\tother\t/home/dev/other\t2026-03-01T09:00:00Z\n"
    assert (uploads / "kept.txt").read_text() == "kept"
    store = SessionStore.open(data_dir)
    assert store.db.query("SELECT COUNT(*) FROM acp_turns") == [(0,)]


@pytest.mark.req("ACP-STORE-16")
def test_delete_of_an_unknown_id_fails_with_session_not_found(data_dir: Path) -> None:
    assert _run(["delete", "nope"], data_dir) == (1, "", "Session not found: nope\n")


@pytest.mark.req("ACP-STORE-16", "ACP-STORE-17")
def test_delete_without_a_store_file_is_not_found_and_creates_nothing(tmp_path: Path) -> None:
    assert _run(["delete", A], tmp_path) == (1, "", f"Session not found: {A}\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.req("ACP-STORE-17")
@pytest.mark.parametrize("argv", [["list"], ["delete", A]])
def test_an_unopenable_store_prints_the_error_line_and_exits_1(
    tmp_path: Path, argv: list[str]
) -> None:
    path = store_path(tmp_path)
    path.parent.mkdir()
    path.write_bytes(b"this is not a database, not even close" * 10)
    status, out, err = _run(argv, tmp_path)
    assert (status, out) == (1, "")
    assert err.startswith("ERROR: Failed to open ACP session store: ")
    assert err.endswith("file is not a database\n")
    assert err.count("\n") == 1


@pytest.mark.req("ACP-TR-04")
@pytest.mark.parametrize("argv", [[], ["show"], ["delete"], ["delete", A, B], ["list", "x"]])
def test_bad_arguments_print_usage_and_exit_2(tmp_path: Path, argv: list[str]) -> None:
    status, out, err = _run(argv, tmp_path)
    assert (status, out) == (2, "")
    assert err.startswith("usage: ")
    assert list(tmp_path.iterdir()) == []
