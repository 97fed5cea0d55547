"""Tool results to model text and attachments: the budget count before decoding, image types,
resource markers and the ACP prompt form beside them (mcp.md §11)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.json_at import at
from tests.unit.mcp.conftest import Connect, stdio_config
from zeroclaw_ref.acp.intake import render_prompt
from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps, loads
from zeroclaw_ref.mcp import format_result_for_model
from zeroclaw_ref.mcp import results as results_module
from zeroclaw_ref.mcp.results import estimate
from zeroclaw_ref.tools.uploads import Materialised, materialise

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
PNG64 = base64.b64encode(PNG).decode()
PDF64 = base64.b64encode(b"%PDF-1.7 hello").decode()


def _out(result: Mapping[str, object], ws: Path | None) -> tuple[Any, list[dict[str, str]]]:
    """The model's view of `result` decoded (`Any`: tests index into it freely). `result` goes
    through the project's codec first, so the client is handed checked JSON, as from a wire."""
    wire = loads(dumps(result))
    assert isinstance(wire, dict)
    text, attachments = format_result_for_model(wire, ws)
    value = json.loads(text)
    assert isinstance(value, dict)
    return value, attachments


@pytest.mark.req("MCP-RESULT-07", "MCP-RES-16")
def test_results_without_binary_items_are_pretty_printed_unchanged(tmp_path: Path) -> None:
    result: JSONObject = {
        "content": [
            {"type": "text", "text": "ü"},
            {"type": "resource_link", "uri": "file:///x", "name": "x"},
        ],
        "structuredContent": {"b": 1, "a": 2},
        "_meta": {"k": "v"},
    }
    text, attachments = format_result_for_model(result, tmp_path)
    assert text == json.dumps(result, indent=2, ensure_ascii=False)
    assert attachments == []


@pytest.mark.req(
    "MCP-RESULT-08", "MCP-RESULT-16", "MCP-RESULT-17", "MCP-RESULT-18", "MCP-RESULT-19",
    "MCP-RESULT-30", "MCP-ERR-86", "MCP-ERR-87",
)  # fmt: skip
def test_the_example_of_section_11_5(tmp_path: Path) -> None:
    result: JSONObject = {
        "content": [
            {"type": "text", "text": "Chart and report attached"},
            {
                "type": "image",
                "data": PNG64,
                "mimeType": "image/png",
                "annotations": {"audience": ["user"]},
            },
            {
                "type": "resource",
                "resource": {
                    "uri": "file:///reports/q3.pdf",
                    "mimeType": "application/pdf",
                    "blob": PDF64,
                },
            },
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///reports/q2.pdf", "name": "q2.pdf"},
        ],
        "structuredContent": {"pages": 12},
    }
    out, attachments = _out(result, tmp_path)
    ws = tmp_path.resolve()
    png_path = ws / "uploads" / (hashlib.sha256(PNG).hexdigest() + ".png")
    pdf_path = ws / "uploads" / (hashlib.sha256(b"%PDF-1.7 hello").hexdigest() + ".pdf")
    assert out["content"] == [
        {"type": "text", "text": "Chart and report attached"},
        {"type": "text", "text": str(png_path), "annotations": {"audience": ["user"]}},
        {
            "type": "resource",
            "resource": {
                "uri": "file:///reports/q3.pdf",
                "mimeType": "application/pdf",
                "materialized": f"[Document: q3.pdf] {pdf_path}",
            },
        },
        {"type": "audio", "mimeType": "audio/wav", "materialized": "[audio attachment: audio/wav]"},
        {"type": "resource_link", "uri": "file:///reports/q2.pdf", "name": "q2.pdf"},
    ]
    assert out["structuredContent"] == {"pages": 12}
    assert attachments == [{"path": str(png_path), "mime_type": "image/png"}]
    assert png_path.read_bytes() == PNG and pdf_path.exists()


@pytest.mark.req("MCP-RESULT-12")
def test_estimated_sizes() -> None:
    assert estimate("QUJD") == 3
    assert estimate("QUI=") == 2
    assert estimate("QQ==") == 1
    assert estimate("====") == 1
    assert estimate("") == 0


@pytest.mark.req("MCP-RESULT-13", "MCP-RESULT-15", "MCP-ERR-76")
def test_more_than_64_items_are_all_marked(tmp_path: Path) -> None:
    items = [{"type": "image", "data": PNG64, "mimeType": "image/png"} for _ in range(65)]
    out, attachments = _out({"content": items}, tmp_path)
    marker = "[attachment unavailable: too many embedded blobs in one result]"
    assert all(i == {"type": "text", "text": marker} for i in out["content"])
    assert attachments == [] and not (tmp_path / "uploads").exists()


@pytest.mark.req("MCP-RESULT-14", "MCP-RESULT-15", "MCP-ERR-77")
def test_the_aggregate_budget_is_checked_before_decoding(tmp_path: Path) -> None:
    half = "A" * (4 * 1_747_627)  # 5_242_881 estimated bytes each: the pair exceeds 10 MiB
    items = [
        {"type": "resource", "resource": {"uri": "a.bin", "blob": half}},
        {"type": "resource", "resource": {"uri": "b.bin", "blob": half}},
    ]
    out, _ = _out({"content": items}, tmp_path)
    marker = "[attachment unavailable: aggregate blob size exceeds limit]"
    assert [i["resource"]["materialized"] for i in out["content"]] == [marker, marker]
    assert not (tmp_path / "uploads").exists()
    # a total exactly at the limit passes the budget
    edge = "A" * (4 * 1_747_627 - 1) + "="
    assert estimate(edge) * 2 == 10_485_760
    items = [{"type": "resource", "resource": {"uri": "a.bin", "blob": edge}} for _ in range(2)]
    out, _ = _out({"content": items}, tmp_path)
    assert all(
        i["resource"]["materialized"].startswith("[Document: a.bin] ") for i in out["content"]
    )


@pytest.mark.req(
    "MCP-RESULT-17", "MCP-RESULT-21", "MCP-RESULT-24", "MCP-RESULT-26", "MCP-ERR-78", "MCP-ERR-79"
)
def test_bad_items_get_markers_without_affecting_siblings(tmp_path: Path) -> None:
    items = [
        {"type": "image", "mimeType": "image/png"},
        {"type": "image", "data": base64.b64encode(b"plain").decode(), "mimeType": "image/bmp"},
        {"type": "image", "data": "***", "mimeType": "image/png"},
        {"type": "image", "data": PNG64, "mimeType": "application/x-unknown"},
    ]
    out, attachments = _out({"content": items}, tmp_path)
    texts = [i["text"] for i in out["content"]]
    assert texts[0] == "[attachment unavailable: malformed image item]"
    assert texts[1] == (
        "[attachment unavailable: unsupported image media type: no PNG/JPEG/WebP/GIF identified]"
    )
    assert texts[2].startswith("[attachment unavailable: Invalid base64: ")
    assert texts[3].endswith(".png")  # sniffed from the bytes
    assert attachments == [{"path": texts[3], "mime_type": "image/png"}]


@pytest.mark.req("MCP-RESULT-22", "MCP-ERR-80")
def test_without_a_workspace_nothing_is_written() -> None:
    items = [
        {"type": "image", "data": PNG64, "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "x.pdf", "blob": PDF64}},
    ]
    out, attachments = _out({"content": items}, None)
    marker = "[attachment unavailable: no session workspace]"
    assert out["content"][0] == {"type": "text", "text": marker}
    assert out["content"][1]["resource"]["materialized"] == marker
    assert attachments == []


@pytest.mark.req("MCP-RESULT-16", "MCP-RESULT-19", "MCP-RESULT-29")
def test_an_image_resource_blob_is_a_plain_path_and_an_attachment(tmp_path: Path) -> None:
    items = [{"type": "resource", "resource": {"uri": "file:///pics/a.png", "blob": PNG64}}]
    out, attachments = _out({"content": items}, tmp_path)
    path = out["content"][0]["resource"]["materialized"]
    assert attachments == [{"path": path, "mime_type": "image/png"}]
    assert Path(path).read_bytes() == PNG


@pytest.mark.req("MCP-RESULT-31", "MCP-ERR-84")
def test_a_symlinked_uploads_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "uploads").symlink_to(tmp_path / "elsewhere")
    items = [{"type": "resource", "resource": {"uri": "x.pdf", "blob": PDF64}}]
    out, _ = _out({"content": items}, tmp_path)
    assert out["content"][0]["resource"]["materialized"] == (
        "[attachment unavailable: uploads path is a symlink; refusing to materialize blob]"
    )


@pytest.mark.req("MCP-PEER-06", "MCP-RESULT-09")
def test_results_from_the_scripted_server(connect: Connect, tmp_path: Path) -> None:
    reg = connect(stdio_config())
    text, attachments = format_result_for_model(reg.call_tool("peer__image", {}), tmp_path)
    assert len(attachments) == 1 and attachments[0]["mime_type"] == "image/png"
    text, _ = format_result_for_model(reg.call_tool("peer__audio", {}), tmp_path)
    assert "[audio attachment: audio/wav]" in text and "UklGRg" not in text
    text, _ = format_result_for_model(reg.call_tool("peer__blob", {}), tmp_path)
    assert "[Document: q3.pdf]" in text
    text, _ = format_result_for_model(reg.call_tool("peer__structured", {}), tmp_path)
    assert json.loads(text)["structuredContent"] == {"n": 1}


JPEG = b"\xff\xd8\xff\xe0" + b"j" * 20
GIF = b"GIF89a" + b"g" * 20
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"w" * 12
TOO_MANY = "[attachment unavailable: too many embedded blobs in one result]"
TOO_LARGE = "[attachment unavailable: aggregate blob size exceeds limit]"
MALFORMED = "[attachment unavailable: malformed image item]"


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
    out, attachments = _out({"content": items}, tmp_path)
    texts = [item.get("text") for item in out["content"][:66]]
    assert TOO_MANY not in texts and len(attachments) == 64
    assert texts[64] == texts[65] == MALFORMED
    # one resource blob more makes 65: every counted item is marked, nothing is decoded
    items.append(_blob("!!!! not base64 !!!!"))
    out, attachments = _out({"content": items}, tmp_path)
    assert [item["text"] for item in out["content"][:64]] == [TOO_MANY] * 64
    assert out["content"][-1]["resource"]["materialized"] == TOO_MANY  # never decoded
    assert [item["text"] for item in out["content"][64:66]] == [MALFORMED, MALFORMED]
    assert out["content"][66]["materialized"] == "[audio attachment: audio/wav]"
    assert attachments == []


@pytest.mark.req("MCP-RESULT-11", "MCP-RESULT-14")
def test_image_and_blob_sizes_are_summed_but_audio_is_not(tmp_path: Path) -> None:
    six_mib = "A" * (4 * 2 * 1024 * 1024)  # 8 MiB of base64: an estimated 6 MiB
    out, _ = _out({"content": [_image(six_mib), _blob(six_mib)]}, tmp_path)
    assert out["content"][0]["text"] == TOO_LARGE
    assert out["content"][1]["resource"]["materialized"] == TOO_LARGE
    assert not (tmp_path / "uploads").exists()
    huge_audio = {"type": "audio", "data": "A" * (4 * 4 * 1024 * 1024), "mimeType": "audio/wav"}
    out, _ = _out({"content": [_blob(six_mib), huge_audio]}, tmp_path)
    assert out["content"][0]["resource"]["materialized"].startswith("[Document: a.bin] ")


# --- image types -------------------------------------------------------------------------


@pytest.mark.req("MCP-RESULT-25", "MCP-RESULT-23")
def test_the_extension_and_display_name_follow_the_chosen_image_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names: list[str] = []
    real = materialise  # what results.py calls

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
    out, attachments = _out({"content": items}, tmp_path)
    assert names == ["upload.jpg", "upload.webp", "upload.gif", "upload.png"]
    paths = [item["text"] for item in out["content"]]
    assert [Path(p).suffix for p in paths] == [".jpg", ".webp", ".gif", ".png"]
    assert [a["mime_type"] for a in attachments] == [
        "image/jpeg", "image/webp", "image/gif", "image/png",
    ]  # fmt: skip
    assert Path(paths[3]).read_bytes() == GIF


@pytest.mark.req("MCP-RESULT-28")
def test_a_resource_marker_shows_the_derived_name(tmp_path: Path) -> None:
    out, _ = _out({"content": [_blob(PDF64, "file:///r/q..3.pdf")]}, tmp_path)
    assert out["content"][0]["resource"]["materialized"].startswith("[Document: q_3.pdf] /")


@pytest.mark.req("MCP-RESULT-34")
def test_paths_are_absolute_even_for_a_relative_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    items = [_image(PNG64), _blob(PDF64, "file:///r/q3.pdf")]
    out, attachments = _out({"content": items}, Path())
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
    out, attachments = _out({"content": items}, Path("/ws"))
    assert out["content"][0]["text"] == "C:\\ws\\uploads\\abc.png"
    assert attachments == [{"path": "C:\\ws\\uploads\\abc.png", "mime_type": "image/png"}]
    assert out["content"][1]["resource"]["materialized"] == (
        "[Document: q3.pdf] C:\\ws\\uploads\\abc.pdf"
    )


@pytest.mark.req("MCP-RESULT-35")
def test_acp_markers_differ_from_the_mcp_result_form(tmp_path: Path) -> None:
    ws = tmp_path.resolve()
    prompt: list[JSON] = [
        {"type": "resource",
         "resource": {"uri": "file:///pics/cat.png", "mimeType": "image/png", "blob": PNG64}},
        {"type": "resource",
         "resource": {"uri": "file:///docs/q3.pdf", "mimeType": "application/pdf",
                      "blob": PDF64}},
        {"type": "text", "text": "look"},
    ]  # fmt: skip
    png = ws / "uploads" / (hashlib.sha256(PNG).hexdigest() + ".png")
    pdf = ws / "uploads" / (hashlib.sha256(b"%PDF-1.7 hello").hexdigest() + ".pdf")
    text = render_prompt(prompt, ws)
    assert text == f"[IMAGE:{png}]\n\n[Document: q3.pdf] {pdf}\n\nlook"
    # the same image blob in an MCP result: the plain path plus a declared attachment
    mcp = [{"type": "resource", "resource": at(prompt, 0, "resource")}]
    out, attachments = _out({"content": mcp}, ws)
    assert out["content"][0]["resource"]["materialized"] == str(png)
    assert attachments == [{"path": str(png), "mime_type": "image/png"}]
