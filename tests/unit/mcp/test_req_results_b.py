"""Binary materialisation: the budget count, image types, the shared materialiser and its
markers (mcp.md §11.2-§11.4)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from zeroclaw_ref.acp.intake import render_prompt
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.mcp import format_result_for_model
from zeroclaw_ref.mcp import results as results_module
from zeroclaw_ref.tools import uploads
from zeroclaw_ref.tools.uploads import Materialised, UploadError, check_size, display_name
from zeroclaw_ref.wire.errors import RpcError

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
PNG64 = base64.b64encode(PNG).decode()
PDF64 = base64.b64encode(b"%PDF-1.7 hello").decode()
JPEG = b"\xff\xd8\xff\xe0" + b"j" * 20
GIF = b"GIF89a" + b"g" * 20
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"w" * 12
TOO_MANY = "[attachment unavailable: too many embedded blobs in one result]"
TOO_LARGE = "[attachment unavailable: aggregate blob size exceeds limit]"
MALFORMED = "[attachment unavailable: malformed image item]"


def _out(result: JSONObject, ws: Path | None) -> tuple[Any, list[dict[str, str]]]:
    text, attachments = format_result_for_model(result, ws)
    return json.loads(text), attachments


def _image(data: object, mime: str = "image/png") -> dict[str, object]:
    return {"type": "image", "data": data, "mimeType": mime}


def _blob(blob: str, uri: str = "file:///r/a.bin") -> dict[str, object]:
    return {"type": "resource", "resource": {"uri": uri, "blob": blob}}


# --- counting before decoding ------------------------------------------------------------


@pytest.mark.req("MCP-RESULT-11", "MCP-RESULT-13")
def test_only_materialisable_items_count_towards_the_item_limit(tmp_path: Path) -> None:
    # 64 images plus items that do not count: an empty or non-string image, audio, a text blob
    items = [_image(PNG64) for _ in range(64)] + [
        _image(""),
        _image(7),
        {"type": "audio", "data": PNG64, "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "file:///t.txt", "text": "plain"}},
    ]
    out, attachments = _out({"content": items}, tmp_path)  # type: ignore[dict-item]
    texts = [item.get("text") for item in out["content"][:66]]
    assert TOO_MANY not in texts and len(attachments) == 64
    assert texts[64] == texts[65] == MALFORMED
    # one resource blob more makes 65: every counted item is marked, nothing is decoded
    items.append(_blob("!!!! not base64 !!!!"))
    out, attachments = _out({"content": items}, tmp_path)  # type: ignore[dict-item]
    assert [item["text"] for item in out["content"][:64]] == [TOO_MANY] * 64
    assert out["content"][-1]["resource"]["materialized"] == TOO_MANY  # never decoded
    assert [item["text"] for item in out["content"][64:66]] == [MALFORMED, MALFORMED]
    assert out["content"][66]["materialized"] == "[audio attachment: audio/wav]"
    assert attachments == []


@pytest.mark.req("MCP-RESULT-11", "MCP-RESULT-14")
def test_image_and_blob_sizes_are_summed_but_audio_is_not(tmp_path: Path) -> None:
    six_mib = "A" * (4 * 2 * 1024 * 1024)  # 8 MiB of base64: an estimated 6 MiB
    out, _ = _out({"content": [_image(six_mib), _blob(six_mib)]}, tmp_path)  # type: ignore[dict-item]
    assert out["content"][0]["text"] == TOO_LARGE
    assert out["content"][1]["resource"]["materialized"] == TOO_LARGE
    assert not (tmp_path / "uploads").exists()
    huge_audio = {"type": "audio", "data": "A" * (4 * 4 * 1024 * 1024), "mimeType": "audio/wav"}
    out, _ = _out({"content": [_blob(six_mib), huge_audio]}, tmp_path)  # type: ignore[dict-item]
    assert out["content"][0]["resource"]["materialized"].startswith("[Document: a.bin] ")


# --- image types -------------------------------------------------------------------------


@pytest.mark.req("MCP-RESULT-25", "MCP-RESULT-23")
def test_the_extension_and_display_name_follow_the_chosen_image_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names: list[str] = []
    real = results_module.materialise

    def spy(workspace: Path, data: bytes, name: str, mime: str) -> Materialised:
        names.append(name)
        return real(workspace, data, name, mime)

    monkeypatch.setattr(results_module, "materialise", spy)
    items = [
        _image(base64.b64encode(JPEG).decode(), "image/jpeg"),
        _image(base64.b64encode(WEBP).decode(), " IMAGE/WEBP; q=1 "),
        _image(base64.b64encode(GIF).decode(), "application/x-unknown"),  # sniffed
        _image(base64.b64encode(GIF).decode(), "image/png"),  # the declared type wins
    ]
    out, attachments = _out({"content": items}, tmp_path)  # type: ignore[dict-item]
    assert names == ["upload.jpg", "upload.webp", "upload.gif", "upload.png"]
    paths = [item["text"] for item in out["content"]]
    assert [Path(p).suffix for p in paths] == [".jpg", ".webp", ".gif", ".png"]
    assert [a["mime_type"] for a in attachments] == [
        "image/jpeg", "image/webp", "image/gif", "image/png",
    ]  # fmt: skip
    assert Path(paths[3]).read_bytes() == GIF


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


@pytest.mark.req("MCP-RESULT-28")
def test_a_resource_marker_shows_the_derived_name(tmp_path: Path) -> None:
    out, _ = _out({"content": [_blob(PDF64, "file:///r/q..3.pdf")]}, tmp_path)  # type: ignore[dict-item]
    assert out["content"][0]["resource"]["materialized"].startswith("[Document: q_3.pdf] /")


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


@pytest.mark.req("MCP-RESULT-34")
def test_paths_are_absolute_even_for_a_relative_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    items = [_image(PNG64), _blob(PDF64, "file:///r/q3.pdf")]
    out, attachments = _out({"content": items}, Path())  # type: ignore[dict-item]
    png = out["content"][0]["text"]
    assert Path(png).is_absolute() and Path(png).parent == tmp_path.resolve() / "uploads"
    assert attachments == [{"path": png, "mime_type": "image/png"}]
    pdf = out["content"][1]["resource"]["materialized"].removeprefix("[Document: q3.pdf] ")
    assert Path(pdf).is_absolute() and Path(pdf).exists()


@pytest.mark.req("MCP-RESULT-34")
def test_a_windows_extended_length_prefix_is_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake(workspace: Path, data: bytes, name: str, mime: str) -> Materialised:
        ext = name.rsplit(".", 1)[1]
        return Materialised(Path(f"\\\\?\\C:\\ws\\uploads\\abc.{ext}"), name, mime, len(data))

    monkeypatch.setattr(results_module, "materialise", fake)
    items = [_image(PNG64), _blob(PDF64, "file:///r/q3.pdf")]
    out, attachments = _out({"content": items}, Path("/ws"))  # type: ignore[dict-item]
    assert out["content"][0]["text"] == "C:\\ws\\uploads\\abc.png"
    assert attachments == [{"path": "C:\\ws\\uploads\\abc.png", "mime_type": "image/png"}]
    assert out["content"][1]["resource"]["materialized"] == (
        "[Document: q3.pdf] C:\\ws\\uploads\\abc.pdf"
    )


@pytest.mark.req("MCP-RESULT-35")
def test_acp_markers_differ_from_the_mcp_result_form(tmp_path: Path) -> None:
    ws = tmp_path.resolve()
    prompt = [
        {"type": "resource",
         "resource": {"uri": "file:///pics/cat.png", "mimeType": "image/png", "blob": PNG64}},
        {"type": "resource",
         "resource": {"uri": "file:///docs/q3.pdf", "mimeType": "application/pdf",
                      "blob": PDF64}},
        {"type": "text", "text": "look"},
    ]  # fmt: skip
    png = ws / "uploads" / (hashlib.sha256(PNG).hexdigest() + ".png")
    pdf = ws / "uploads" / (hashlib.sha256(b"%PDF-1.7 hello").hexdigest() + ".pdf")
    text = render_prompt(prompt, ws)  # type: ignore[arg-type]
    assert text == f"[IMAGE:{png}]\n\n[Document: q3.pdf] {pdf}\n\nlook"
    # the same image blob in an MCP result: the plain path plus a declared attachment
    mcp = [{"type": "resource", "resource": prompt[0]["resource"]}]
    out, attachments = _out({"content": mcp}, ws)  # type: ignore[dict-item]
    assert out["content"][0]["resource"]["materialized"] == str(png)
    assert attachments == [{"path": str(png), "mime_type": "image/png"}]
