"""Tool results to model text and attachments (mcp.md §11)."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from tests.unit.mcp.conftest import Connect, stdio_config
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.mcp import format_result_for_model
from zeroclaw_ref.mcp.results import estimate

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
PNG64 = base64.b64encode(PNG).decode()
PDF64 = base64.b64encode(b"%PDF-1.7 hello").decode()


def _out(result: JSONObject, ws: Path | None) -> tuple[JSONObject, list[dict[str, str]]]:
    text, attachments = format_result_for_model(result, ws)
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
    out, attachments = _out({"content": items}, tmp_path)  # type: ignore[dict-item]
    marker = "[attachment unavailable: too many embedded blobs in one result]"
    assert all(i == {"type": "text", "text": marker} for i in out["content"])  # type: ignore[union-attr]
    assert attachments == [] and not (tmp_path / "uploads").exists()


@pytest.mark.req("MCP-RESULT-14", "MCP-RESULT-15", "MCP-ERR-77")
def test_the_aggregate_budget_is_checked_before_decoding(tmp_path: Path) -> None:
    half = "A" * (4 * 1_747_627)  # 5_242_881 estimated bytes each: the pair exceeds 10 MiB
    items = [
        {"type": "resource", "resource": {"uri": "a.bin", "blob": half}},
        {"type": "resource", "resource": {"uri": "b.bin", "blob": half}},
    ]
    out, _ = _out({"content": items}, tmp_path)  # type: ignore[dict-item]
    marker = "[attachment unavailable: aggregate blob size exceeds limit]"
    assert [i["resource"]["materialized"] for i in out["content"]] == [marker, marker]  # type: ignore[index]
    assert not (tmp_path / "uploads").exists()
    # a total exactly at the limit passes the budget
    edge = "A" * (4 * 1_747_627 - 1) + "="
    assert estimate(edge) * 2 == 10_485_760
    items = [{"type": "resource", "resource": {"uri": "a.bin", "blob": edge}} for _ in range(2)]
    out, _ = _out({"content": items}, tmp_path)  # type: ignore[dict-item]
    assert all(
        i["resource"]["materialized"].startswith("[Document: a.bin] ")  # type: ignore[index]
        for i in out["content"]  # type: ignore[union-attr]
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
    out, attachments = _out({"content": items}, tmp_path)  # type: ignore[dict-item]
    texts = [i["text"] for i in out["content"]]  # type: ignore[index]
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
    out, attachments = _out({"content": items}, None)  # type: ignore[dict-item]
    marker = "[attachment unavailable: no session workspace]"
    assert out["content"][0] == {"type": "text", "text": marker}  # type: ignore[index]
    assert out["content"][1]["resource"]["materialized"] == marker  # type: ignore[index]
    assert attachments == []


@pytest.mark.req("MCP-RESULT-16", "MCP-RESULT-19", "MCP-RESULT-29")
def test_an_image_resource_blob_is_a_plain_path_and_an_attachment(tmp_path: Path) -> None:
    items = [{"type": "resource", "resource": {"uri": "file:///pics/a.png", "blob": PNG64}}]
    out, attachments = _out({"content": items}, tmp_path)  # type: ignore[dict-item]
    path = out["content"][0]["resource"]["materialized"]  # type: ignore[index]
    assert attachments == [{"path": path, "mime_type": "image/png"}]
    assert Path(path).read_bytes() == PNG


@pytest.mark.req("MCP-RESULT-31", "MCP-ERR-84")
def test_a_symlinked_uploads_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "uploads").symlink_to(tmp_path / "elsewhere")
    items = [{"type": "resource", "resource": {"uri": "x.pdf", "blob": PDF64}}]
    out, _ = _out({"content": items}, tmp_path)  # type: ignore[dict-item]
    assert out["content"][0]["resource"]["materialized"] == (  # type: ignore[index]
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
