"""`file_read`, `file_write` and `file_edit` (policy.md §4.4 POL-FILE-01..05, POL-FS-08)."""

from __future__ import annotations

import base64
import binascii
import os

import pytest
from fs_world import World, run

from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.tools.files import FileEdit, FileRead, FileWrite, split_lines

BIG = 10_485_761
TOO_LARGE = f"File too large: {BIG} bytes (limit: 10485760 bytes)"

READS: list[tuple[bytes, dict[str, JSON], bool, str]] = [
    (b"a\nb\nc\n", {}, True, "1: a\n2: b\n3: c\n[3 lines total]"),
    (b"a\nb\nc", {}, True, "1: a\n2: b\n3: c\n[3 lines total]"),
    (b"a\r\nb\r\n", {}, True, "1: a\n2: b\n[2 lines total]"),
    (b"a\nb\nc\n", {"offset": 2}, True, "2: b\n3: c\n[Lines 2-3 of 3]"),
    (b"a\nb\nc\n", {"offset": 2, "limit": 1}, True, "2: b\n[Lines 2-2 of 3]"),
    (b"a\nb\nc\n", {"limit": 2}, True, "1: a\n2: b\n[Lines 1-2 of 3]"),
    (b"a\nb\nc\n", {"offset": 1, "limit": 3}, True, "1: a\n2: b\n3: c\n[3 lines total]"),
    (b"a\nb\nc\n", {"offset": 0}, True, "1: a\n2: b\n3: c\n[3 lines total]"),
    (b"a\nb\nc\n", {"offset": 4}, True, "[No lines in range, file has 3 lines]"),
    (b"a\nb\nc\n", {"limit": 0}, True, "[No lines in range, file has 3 lines]"),
    (b"a\nb\nc\n", {"offset": "2", "limit": -1}, True, "1: a\n2: b\n3: c\n[3 lines total]"),
    (b"", {}, True, ""),
    (b"\n\n", {}, True, "1: \n2: \n[2 lines total]"),
    ("é\n".encode(), {}, True, "1: é\n[1 lines total]"),
    (b"\xff\x00", {"encoding": "base64"}, True, "/wA="),
    (b"", {"encoding": "base64"}, True, ""),
    (b"\xff\xfe", {}, False, 'Failed to read file: file is not valid UTF-8; use encoding "base64"'),
    (
        b"x",
        {"encoding": "latin1"},
        False,
        "Unsupported encoding 'latin1' (expected 'utf8' or 'base64')",
    ),
    (
        b"x",
        {"encoding": "UTF8"},
        False,
        "Unsupported encoding 'UTF8' (expected 'utf8' or 'base64')",
    ),
]


@pytest.mark.req("POL-FILE-01", "POL-FILE-02", "POL-FILE-03")
@pytest.mark.parametrize(("content", "extra", "success", "text"), READS)
def test_file_read_texts(
    ws_world: World, content: bytes, extra: dict[str, JSON], success: bool, text: str
) -> None:
    (ws_world.ws / "f.txt").write_bytes(content)
    result = run(FileRead(ws_world.security), {"path": "f.txt", **extra})
    assert result.success is success
    assert (result.output if success else result.error) == text


@pytest.mark.req("POL-TOOL-03", "POL-FILE-02")
def test_an_empty_file_reads_as_no_output(ws_world: World) -> None:
    (ws_world.ws / "empty").write_bytes(b"")
    assert run(FileRead(ws_world.security), {"path": "empty"}).model_text() == "(no output)"


@pytest.mark.req("POL-FS-08", "POL-TOOL-04")
def test_file_read_failures(ws_world: World) -> None:
    ws = ws_world.ws
    tool = FileRead(ws_world.security)
    with (ws / "big").open("wb") as handle:
        handle.truncate(BIG)
    (ws / "dir").mkdir()
    os.mkfifo(ws / "fifo")
    cases: dict[str, JSON] = {
        TOO_LARGE: {"path": "big"},
        "Failed to read file: Is a directory": {"path": "dir"},
        "Failed to read file: not a regular file": {"path": "fifo"},
        "Failed to read file: No such file or directory": {"path": "missing"},
        "Missing 'path' parameter": {"path": 5},
    }
    for text, arguments in cases.items():
        assert run(tool, arguments).error == text
    assert run(tool, None).error == "Missing 'path' parameter"
    assert run(tool, {"path": "/dev/null"}).output == ""


def test_split_lines_matches_rust_lines() -> None:
    assert split_lines("a\r\nb\rc\n\n") == ["a", "b\rc", ""]
    assert split_lines("") == []


# --------------------------------------------------------------------------------- file_write


def _bad_base64_detail(text: str) -> str:
    try:
        base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        return str(exc)
    raise AssertionError("decoded")


WRITES: list[tuple[dict[str, JSON], bool, str]] = [
    ({"path": "out.txt", "content": "hello"}, True, "Written 5 bytes to out.txt"),
    ({"path": "out.txt", "content": "é"}, True, "Written 2 bytes to out.txt"),
    ({"path": "out.txt", "content": ""}, True, "Written 0 bytes to out.txt"),
    ({"path": "a/b/c.txt", "content": "xy"}, True, "Written 2 bytes to a/b/c.txt"),
    ({"path": "./d.txt", "content": "xy"}, True, "Written 2 bytes to ./d.txt"),
    (
        {"path": "out.txt", "content": "aGVsbG8=", "encoding": "base64"},
        True,
        "Written 5 bytes to out.txt",
    ),
    (
        {"path": "out.txt", "content": "x", "encoding": "hex"},
        False,
        "Unsupported encoding 'hex' (expected 'utf8' or 'base64')",
    ),
    (
        {"path": "out.txt", "content": "@@@", "encoding": "base64"},
        False,
        f"Invalid base64 content: {_bad_base64_detail('@@@')}",
    ),
    (
        {"path": "out.txt", "content": "aGVsbG8", "encoding": "base64"},
        False,
        f"Invalid base64 content: {_bad_base64_detail('aGVsbG8')}",
    ),
    ({"path": "out.txt"}, False, "Missing 'content' parameter"),
    ({"content": "x"}, False, "Missing 'path' parameter"),
    ({"path": "out.txt", "content": 3}, False, "Missing 'content' parameter"),
    ({"path": "dir", "content": "x"}, False, "Failed to write file: Is a directory"),
    ({"path": "file/child", "content": "x"}, False, "Failed to resolve file path: Not a directory"),
    ({"path": "/dev/null", "content": "abc"}, True, "Written 3 bytes to /dev/null"),
]


@pytest.mark.req("POL-FILE-04", "POL-TOOL-04")
@pytest.mark.parametrize(("arguments", "success", "text"), WRITES)
def test_file_write_texts(
    ws_world: World, arguments: dict[str, JSON], success: bool, text: str
) -> None:
    (ws_world.ws / "dir").mkdir()
    (ws_world.ws / "file").write_text("x")
    result = run(FileWrite(ws_world.security), arguments)
    assert result.success is success
    assert (result.output if success else result.error) == text


@pytest.mark.req("POL-FILE-04")
def test_file_write_replaces_atomically_and_keeps_the_mode(ws_world: World) -> None:
    target = ws_world.ws / "keep.txt"
    target.write_text("old")
    target.chmod(0o640)
    inode = target.stat().st_ino
    result = run(FileWrite(ws_world.security), {"path": "keep.txt", "content": "new"})
    assert result.output == "Written 3 bytes to keep.txt"
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o640
    assert target.stat().st_ino != inode  # a new file renamed into place
    assert sorted(p.name for p in ws_world.ws.iterdir()) == ["keep.txt"]


@pytest.mark.req("POL-FILE-04", "POL-FS-05")
def test_file_write_through_an_inner_link_lands_on_its_checked_target(ws_world: World) -> None:
    ws = ws_world.ws
    (ws / "real.txt").write_text("old")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    result = run(FileWrite(ws_world.security), {"path": "alias.txt", "content": "new"})
    assert result.output == "Written 3 bytes to alias.txt"
    assert (ws / "real.txt").read_text() == "new"
    assert (ws / "alias.txt").is_symlink()


# ---------------------------------------------------------------------------------- file_edit

EDITS: list[tuple[bytes, dict[str, JSON], bool, str, bytes]] = [
    (
        b"hello world",
        {"old_string": "world", "new_string": "there"},
        True,
        "Edited f.txt: replaced 1 occurrence (11 bytes)",
        b"hello there",
    ),
    (
        b"hello world",
        {"old_string": "world", "new_string": ""},
        True,
        "Edited f.txt: replaced 1 occurrence (6 bytes)",
        b"hello ",
    ),
    (
        b"a\xc3\xa9b",
        {"old_string": "\u00e9", "new_string": "ee"},
        True,
        "Edited f.txt: replaced 1 occurrence (4 bytes)",
        b"aeeb",
    ),
    (
        b"hello",
        {"old_string": "", "new_string": "x"},
        False,
        "old_string must not be empty",
        b"hello",
    ),
    (
        b"hello",
        {"old_string": "bye", "new_string": "x"},
        False,
        "old_string not found in file",
        b"hello",
    ),
    (
        b"ab ab ab",
        {"old_string": "ab", "new_string": "x"},
        False,
        "old_string matches 3 times; must match exactly once",
        b"ab ab ab",
    ),
    (b"hello", {"new_string": "x"}, False, "Missing 'old_string' parameter", b"hello"),
    (b"hello", {"old_string": "h"}, False, "Missing 'new_string' parameter", b"hello"),
    (
        b"\xff",
        {"old_string": "a", "new_string": "b"},
        False,
        "Failed to read file: file is not valid UTF-8",
        b"\xff",
    ),
]


@pytest.mark.req("POL-FILE-05", "POL-TOOL-04")
@pytest.mark.parametrize(("content", "extra", "success", "text", "after"), EDITS)
def test_file_edit_texts(
    ws_world: World,
    content: bytes,
    extra: dict[str, JSON],
    success: bool,
    text: str,
    after: bytes,
) -> None:
    target = ws_world.ws / "f.txt"
    target.write_bytes(content)
    result = run(FileEdit(ws_world.security), {"path": "f.txt", **extra})
    assert result.success is success
    assert (result.output if success else result.error) == text
    assert target.read_bytes() == after
    assert sorted(p.name for p in ws_world.ws.iterdir()) == ["f.txt"]


@pytest.mark.req("POL-FS-08", "POL-FILE-05")
def test_file_edit_failures(ws_world: World) -> None:
    ws = ws_world.ws
    tool = FileEdit(ws_world.security)
    with (ws / "big").open("wb") as handle:
        handle.truncate(BIG)
    edit: dict[str, JSON] = {"old_string": "a", "new_string": "b"}
    assert run(tool, {"path": "big", **edit}).error == TOO_LARGE
    assert run(tool, edit).error == "Missing 'path' parameter"
    assert run(tool, {"path": "nope", **edit}).error == (
        "Failed to read file: No such file or directory"
    )
    assert run(tool, {"path": "/dev/null", **edit}).error == "old_string not found in file"


def test_file_tool_classes_and_specs(ws_world: World) -> None:
    tools = [FileRead(ws_world.security), FileWrite(ws_world.security), FileEdit(ws_world.security)]
    assert [(t.name, t.act) for t in tools] == [
        ("file_read", False),
        ("file_write", True),
        ("file_edit", True),
    ]
    required = [t.parameters["required"] for t in tools]
    assert required == [["path"], ["path", "content"], ["path", "old_string", "new_string"]]
