"""The shared materialiser of `tools/uploads.py` (mcp.md §11.4): the 10 MiB cap, display names
derived from a URI, writes bound to directory descriptors, and the entries an attacker can
plant under an upload's final name (MCP-RESULT-33, ACP-PROMPT-15).

The shell tool can create any entry inside the workspace, including under `uploads/`, and the
final name of a blob is predictable (its SHA-256). Whatever sits there must be replaced by the
upload, never followed, and never able to stall the server.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from zeroclaw_ref.acp.intake import render_prompt
from zeroclaw_ref.tools import uploads
from zeroclaw_ref.tools.uploads import UploadError, check_size, display_name
from zeroclaw_ref.wire.errors import RpcError

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


# --- the shared materialiser -------------------------------------------------------------


@pytest.mark.req("MCP-RESULT-27")
def test_a_payload_over_ten_mib_is_refused(tmp_path: Path) -> None:
    limit = 10_485_760
    check_size(bytes(limit))  # exactly the limit passes
    with pytest.raises(UploadError) as err:
        check_size(bytes(limit + 1))
    assert str(err.value) == "Embedded resource exceeds 10 MB limit (10485761 bytes)"
    with pytest.raises(UploadError, match=r"^Embedded resource exceeds 10 MB limit \(10485761"):
        uploads.materialise(tmp_path, bytes(limit + 1), "big.bin", "application/octet-stream")
    assert not (tmp_path / "uploads").exists()
    # the ACP user of the helper refuses it with the same text
    blob = base64.b64encode(bytes(limit + 1)).decode()
    prompt = [{"type": "resource", "resource": {"uri": "file:///b.bin", "blob": blob}}]
    with pytest.raises(RpcError, match=r"Embedded resource exceeds 10 MB limit \(10485761 bytes\)"):
        render_prompt(prompt, tmp_path)  # type: ignore[arg-type]


@pytest.mark.req("MCP-RESULT-28")
@pytest.mark.parametrize(
    ("uri", "name"),
    [
        ("  file:///reports/q3.pdf  ", "q3.pdf"),
        ("attachment://inbox\\mail\\note.txt", "note.txt"),
        ("https://host/a/b.png", "b.png"),
        ("file:///a/b%2Fc.txt", "b%2Fc.txt"),  # no percent-decoding
        ("file:///dir/", "upload.bin"),
        ("file:///dir/..", "upload.bin"),
        (".", "upload.bin"),
        ("", "upload.bin"),
        (None, "upload.bin"),
        ("file:///x/na\x00me\x1f\x7f.txt", "na_me__.txt"),
        ("file:///x/a..b.txt", "a_b.txt"),
        ("file:///x/...", "_."),
    ],
)
def test_display_names_are_derived_safely_from_the_uri(uri: str | None, name: str) -> None:
    assert display_name(uri) == name


class _OsSpy:
    """Stands in for `os` inside the materialiser, recording the calls that matter."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.fds: dict[int, str] = {}

    def open(self, path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        fd = os.open(path, flags, mode, dir_fd=dir_fd)
        self.calls.append(("open", (str(path), flags, mode), {"dir_fd": dir_fd, "fd": fd}))
        self.fds[fd] = str(path)
        return fd

    def fsync(self, fd: int) -> None:
        self.calls.append(("fsync", (fd,), {}))
        os.fsync(fd)

    def rename(self, src: str, dst: str, **kw: Any) -> None:
        self.calls.append(("rename", (src, dst), kw))
        os.rename(src, dst, **kw)  # noqa: PTH104 - descriptor-relative

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


@pytest.mark.req("MCP-RESULT-32")
def test_the_write_is_bound_to_directory_descriptors_and_never_follows_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = _OsSpy()
    monkeypatch.setattr(uploads, "os", spy)
    saved = uploads.materialise(tmp_path, b"payload", "a.txt", "text/plain")
    opens = [c for c in spy.calls if c[0] == "open"]
    ws, up, temp = opens[0], opens[1], opens[-1]
    assert ws[1][0] == str(tmp_path) and ws[1][1] & os.O_DIRECTORY
    assert up[1][0] == "uploads" and up[2]["dir_fd"] == ws[2]["fd"]
    assert up[1][1] & os.O_DIRECTORY and up[1][1] & os.O_NOFOLLOW
    want = os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    assert temp[1][1] & want == want and temp[1][2] == 0o600
    assert temp[2]["dir_fd"] == up[2]["fd"] and "/" not in temp[1][0]
    fsyncs = [c for c in spy.calls if c[0] == "fsync"]
    [rename] = [c for c in spy.calls if c[0] == "rename"]
    assert fsyncs == [("fsync", (temp[2]["fd"],), {})]
    assert spy.calls.index(fsyncs[0]) < spy.calls.index(rename)
    assert rename[1] == (temp[1][0], saved.path.name)
    assert rename[2] == {"src_dir_fd": up[2]["fd"], "dst_dir_fd": up[2]["fd"]}
    info = saved.path.lstat()
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    assert saved.path.read_bytes() == b"payload"
    assert [p.name for p in (tmp_path / "uploads").iterdir()] == [saved.path.name]  # no temp


@pytest.mark.req("MCP-RESULT-33")
def test_an_identical_file_is_reused_and_any_other_entry_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = b"same bytes"
    final = tmp_path / "uploads" / (hashlib.sha256(data).hexdigest() + ".txt")
    first = uploads.materialise(tmp_path, data, "a.txt", "text/plain")
    assert first.path == final
    inode = final.stat().st_ino
    spy = _OsSpy()
    monkeypatch.setattr(uploads, "os", spy)
    uploads.materialise(tmp_path, data, "b.txt", "text/plain")
    assert not [c for c in spy.calls if c[0] in ("rename", "fsync")]  # nothing written
    assert not [c for c in spy.calls if c[0] == "open" and c[1][1] & os.O_CREAT]
    assert final.stat().st_ino == inode
    monkeypatch.undo()
    # different bytes under the final name: replaced by a new file
    final.write_bytes(b"tampered!!")
    uploads.materialise(tmp_path, data, "a.txt", "text/plain")
    assert final.read_bytes() == data and final.stat().st_ino != inode
    # a symbolic link under the final name: replaced, its target untouched
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep me")
    final.unlink()
    final.symlink_to(outside)
    uploads.materialise(tmp_path, data, "a.txt", "text/plain")
    assert not final.is_symlink() and final.read_bytes() == data
    assert outside.read_bytes() == b"keep me"
