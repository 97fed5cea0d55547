"""Turning a `tools/call` result into model text and declared attachments (mcp.md §11).

Goals: no base64 payload ever reaches the model (MCP-RESULT-08), and which items change depends
only on their shape (MCP-RESULT-09). Plan: count and size the materialisable items first and
decide the budget before anything is decoded (MCP-RESULT-11..15); then rewrite each binary item
on its own, so one failure never touches a sibling (MCP-RESULT-21). Files are written by the
shared materialiser (`tools/uploads.py`, §11.4).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.core.limits import MAX_BLOB_BYTES
from zeroclaw_ref.tools.uploads import (
    UploadError,
    check_size,
    decode_base64,
    display_name,
    materialise,
    mime_for,
)

MAX_ITEMS: Final = 64  # [MCP-RESULT-13]
TOO_MANY: Final = "[attachment unavailable: too many embedded blobs in one result]"
TOO_LARGE: Final = "[attachment unavailable: aggregate blob size exceeds limit]"
MALFORMED_IMAGE: Final = "[attachment unavailable: malformed image item]"
UNSUPPORTED_IMAGE: Final = (
    "[attachment unavailable: unsupported image media type: no PNG/JPEG/WebP/GIF identified]"
)
NO_WORKSPACE: Final = "[attachment unavailable: no session workspace]"
OCTET: Final = "application/octet-stream"

# [MCP-RESULT-23] [MCP-RESULT-25] supported image types and their file extensions
IMAGE_EXT: Final = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/webp": "webp",
    "image/gif": "gif",
}

Attachment = dict[str, str]


def pretty(value: JSON) -> str:
    """[MCP-RES-16] `json.dumps(value, indent=2, ensure_ascii=False)`, key order kept."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def unavailable(error: str) -> str:
    """[MCP-ERR-81]"""
    return f"[attachment unavailable: {error}]"


def estimate(data: str) -> int:
    """[MCP-RESULT-12] decoded size of base64 text, never below zero."""
    padding = min(2, len(data) - len(data.rstrip("=")))
    return max(0, (len(data) // 4) * 3 - padding)


def _blob(item: JSON) -> str | None:
    if isinstance(item, dict) and item.get("type") == "resource":
        resource = item.get("resource")
        if isinstance(resource, dict) and isinstance(resource.get("blob"), str):
            blob = resource["blob"]
            assert isinstance(blob, str)
            return blob
    return None


def _image_data(item: JSON) -> str | None:
    if isinstance(item, dict) and item.get("type") == "image":
        data = item.get("data")
        if isinstance(data, str) and data:
            return data
    return None


def _payload(item: JSON) -> str | None:
    """[MCP-RESULT-11] the base64 text of a materialisable item."""
    blob = _blob(item)
    return blob if blob is not None else _image_data(item)


def _is_binary(item: JSON) -> bool:
    """[MCP-RESULT-07] a resource with a string blob, or any image or audio item."""
    if _blob(item) is not None:
        return True
    return isinstance(item, dict) and item.get("type") in ("image", "audio")


def sniff(data: bytes) -> str | None:
    """[MCP-RESULT-23] the image type from its signature."""
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(data) >= 12 and data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _display(path: Path) -> str:
    """[MCP-RESULT-34] the absolute path, without a Windows `\\\\?\\` prefix."""
    return str(path).removeprefix("\\\\?\\")


class _Rewriter:
    """Rewrites the binary items of one result against one workspace and budget verdict."""

    def __init__(self, workspace: Path | None, marker: str | None) -> None:
        self.workspace = workspace.resolve() if workspace is not None else None
        self.marker = marker or (NO_WORKSPACE if workspace is None else None)
        self.attachments: list[Attachment] = []

    def item(self, item: JSON) -> JSON:
        if not isinstance(item, dict):
            return item
        kind = item.get("type")
        if kind == "resource" and _blob(item) is not None:
            return self._resource(item)
        if kind == "image":
            return self._image(item)
        if kind == "audio":
            return self._audio(item)
        return item

    def _resource(self, item: JSONObject) -> JSONObject:
        """[MCP-RESULT-16] `blob` out, `materialized` in as the last key of `resource`."""
        resource = item["resource"]
        assert isinstance(resource, dict)
        blob = resource["blob"]
        assert isinstance(blob, str)
        kept: JSONObject = {k: v for k, v in resource.items() if k != "blob"}
        uri = resource.get("uri")
        name = display_name(uri if isinstance(uri, str) else None)
        mime = mime_for(resource.get("mimeType"), name)
        kept["materialized"] = self.marker or self._save_resource(blob, name, mime)
        return {k: (kept if k == "resource" else v) for k, v in item.items()}

    def _save_resource(self, blob: str, name: str, mime: str) -> str:
        assert self.workspace is not None
        try:
            data = decode_base64(blob)
            saved = materialise(self.workspace, data, name, mime)
        except (UploadError, OSError) as exc:
            return unavailable(str(exc))
        path = _display(saved.path)
        if mime.lower().startswith("image/"):
            self.attachments.append({"path": path, "mime_type": mime})
            return path
        return f"[Document: {name}] {path}"

    def _image(self, item: JSONObject) -> JSONObject:
        """[MCP-RESULT-17] becomes a text item; other keys follow in their order."""
        data = _image_data(item)
        if data is None:
            text = MALFORMED_IMAGE
        else:
            text = self.marker or self._save_image(data, item.get("mimeType"))
        out: JSONObject = {"type": "text", "text": text}
        out.update({k: v for k, v in item.items() if k not in ("type", "data", "mimeType")})
        return out

    def _save_image(self, data_text: str, declared: JSON) -> str:
        assert self.workspace is not None
        try:
            data = decode_base64(data_text)
            check_size(data)
        except UploadError as exc:
            return unavailable(str(exc))
        mime = declared.split(";")[0].strip().lower() if isinstance(declared, str) else ""
        if mime not in IMAGE_EXT:
            sniffed = sniff(data)
            if sniffed is None:
                return UNSUPPORTED_IMAGE  # [MCP-RESULT-24]
            mime = sniffed
        try:
            saved = materialise(self.workspace, data, f"upload.{IMAGE_EXT[mime]}", mime)
        except (UploadError, OSError) as exc:
            return unavailable(str(exc))
        path = _display(saved.path)
        self.attachments.append({"path": path, "mime_type": mime})  # [MCP-RESULT-19]
        return path

    @staticmethod
    def _audio(item: JSONObject) -> JSONObject:
        """[MCP-RESULT-18] placeholder only; nothing written, no budget."""
        mime = item.get("mimeType")
        label = mime if isinstance(mime, str) and mime else OCTET
        out: JSONObject = {k: v for k, v in item.items() if k != "data"}
        out.pop("materialized", None)
        out["materialized"] = f"[audio attachment: {label}]"
        return out


def format_result_for_model(
    result: JSONObject, workspace: Path | None
) -> tuple[str, list[Attachment]]:
    """[MCP-RESULT-07..22] the model-facing text and the images declared as attachments."""
    content = result.get("content")
    items = content if isinstance(content, list) else []
    if not any(_is_binary(item) for item in items):
        return pretty(result), []
    payloads = [p for p in map(_payload, items) if p is not None]
    marker: str | None = None
    if len(payloads) > MAX_ITEMS:
        marker = TOO_MANY
    elif sum(estimate(p) for p in payloads) > MAX_BLOB_BYTES:
        marker = TOO_LARGE
    rewriter = _Rewriter(workspace, marker)
    out: JSONObject = dict(result)
    out["content"] = [rewriter.item(item) for item in items]
    return pretty(out), rewriter.attachments
