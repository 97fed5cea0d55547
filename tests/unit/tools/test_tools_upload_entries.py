"""Entries an attacker can plant under an upload's final name (MCP-RESULT-33, ACP-PROMPT-15).

The shell tool can create any entry inside the workspace, including under `uploads/`, and the
final name of a blob is predictable (its SHA-256). Whatever sits there must be replaced by the
upload, never followed, and never able to stall the server.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from zeroclaw_ref.tools import uploads

DATA = b"the upload's bytes"
FINAL = hashlib.sha256(DATA).hexdigest() + ".txt"


def _materialise_within(workspace: Path, seconds: float) -> uploads.Materialised:
    """Run materialise on a helper thread; fail instead of hanging the test run."""
    box: list[uploads.Materialised | BaseException] = []

    def run() -> None:
        try:
            box.append(uploads.materialise(workspace, DATA, "a.txt", "text/plain"))
        except BaseException as exc:  # relayed to the test thread
            box.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert box, f"materialise still blocked after {seconds} s"
    result = box[0]
    if isinstance(result, BaseException):
        raise result
    return result


@pytest.mark.req("MCP-RESULT-33")
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_fifo_under_the_final_name_is_replaced_without_blocking(tmp_path: Path) -> None:
    (tmp_path / "uploads").mkdir()
    fifo = tmp_path / "uploads" / FINAL
    os.mkfifo(fifo)
    saved = _materialise_within(tmp_path, 5)
    assert saved.path == fifo
    assert fifo.is_file() and fifo.read_bytes() == DATA


@pytest.mark.req("MCP-RESULT-33")
def test_a_directory_under_the_final_name_is_replaced_and_links_in_it_are_not_followed(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep me")
    planted = tmp_path / "uploads" / FINAL
    (planted / "nested").mkdir(parents=True)
    (planted / "nested" / "file").write_text("junk")
    (planted / "link").symlink_to(outside, target_is_directory=True)
    saved = _materialise_within(tmp_path, 5)
    assert saved.path == planted
    assert planted.is_file() and planted.read_bytes() == DATA
    assert (outside / "keep.txt").read_text() == "keep me"  # the link was not followed
    # The directory is moved aside whole, never deleted: nothing of it is lost.
    [aside] = [p for p in (tmp_path / "uploads").iterdir() if p.name != FINAL]
    assert aside.name.startswith(f".{FINAL}.") and aside.name.endswith(".old")
    assert (aside / "nested" / "file").read_text() == "junk"
    assert (aside / "link").is_symlink()


@pytest.mark.req("MCP-RESULT-33")
def test_a_directory_of_any_depth_under_the_final_name_is_replaced_at_once(
    tmp_path: Path,
) -> None:
    """Deeper than the interpreter's recursion limit: a recursive delete would fail here."""
    planted = tmp_path / "uploads" / FINAL
    planted.mkdir(parents=True)
    fd = os.open(planted, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(1200):  # relative mkdir/openat, so no path grows past PATH_MAX
            os.mkdir("d", dir_fd=fd)
            deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = deeper
    finally:
        os.close(fd)
    saved = _materialise_within(tmp_path, 5)
    assert saved.path.read_bytes() == DATA
    for aside in (tmp_path / "uploads").glob(f".{FINAL}.*.old"):
        _remove_chain(aside)  # pytest's own clean-up would recurse too deep


def _remove_chain(top: Path) -> None:
    """Remove top/d/d/…/d one level per step, lifting the grandchild each time."""
    child = top / "d"
    while child.exists():
        grandchild = child / "d"
        if grandchild.exists():
            grandchild.rename(top / "lifted")
            child.rmdir()
            (top / "lifted").rename(child)
        else:
            child.rmdir()
    top.rmdir()
