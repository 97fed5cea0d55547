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
    assert sorted(p.name for p in (tmp_path / "uploads").iterdir()) == [FINAL]  # no leftovers
