"""The `deliver_file` tool and the check of its copy (acp.md §9; policy.md POL-FILE-09).

Goals: deliver only a regular workspace-readable file, read without following a link, as a
content-addressed copy whose identity is its hash, never a caller-supplied name (ACP-DELIV-05).
Plan: the refusals of ACP-DELIV-03 in their order, one bounded read through `fsio`, the copy
through the shared materialiser, then the artifact the ACP projection re-verifies with
`verify_delivery` before embedding (ACP-DELIV-09, ACP-LOAD-11).
Design: the display filename and the extension come from the canonical path actually read, so
a link inside the workspace is delivered under its target's name.
"""

from __future__ import annotations

import mimetypes
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.core.limits import MAX_BLOB_BYTES
from zeroclaw_ref.policy.security import NUL_REFUSAL, PathRefusal, SecurityPolicy
from zeroclaw_ref.tools import fsio, uploads
from zeroclaw_ref.tools.base import ARTIFACT_KEY, Tool, ToolContext, ToolResult, argument, missing
from zeroclaw_ref.tools.files import too_large

if TYPE_CHECKING:  # catalogue imports this module to build the universe
    from zeroclaw_ref.tools.catalogue import ToolSettings

# [ACP-DELIV-15] the model receives exactly the text of policy.md §4.1.
DESCRIPTION = (
    "Deliver a file from the workspace to the user's client for download or preview. path "
    "names the file; mimeType and title are optional, and title is only a display label. The "
    "result ends with a line uri=attachment://deliver/...: that uri is the delivered file's "
    "identity. Copy it verbatim into every citation or <widget:document-result "
    'fileId="..."> reference to the file, and never invent a prefix or any other identifier '
    "for it."
)
URI_PREFIX = "attachment://deliver/"  # [ACP-DELIV-05]
OCTET_STREAM = "application/octet-stream"

# [ACP-DELIV-06] acp.md Table 9-1, consulted together with Table 4-2 (uploads.EXTENSION_MIME).
DELIVERY_MIME: dict[str, str] = {
    **uploads.EXTENSION_MIME,
    "csv": "text/csv",
    "html": "text/html",
    "htm": "text/html",
    "svg": "image/svg+xml",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "zip": "application/zip",
}


def _without_controls(text: str) -> str:
    # Cc covers C0, DEL and C1: none of them belongs in a label shown by a client.
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cc").strip()


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in text)


def mime_type(declared: JSON, name: str) -> str:
    """[ACP-DELIV-06] the declared type, the two tables, the system database, octet-stream."""
    if isinstance(declared, str) and declared.strip() and not _has_control(declared.strip()):
        return declared.strip()
    ext = uploads.extension(name)
    if ext is not None and ext in DELIVERY_MIME:
        return DELIVERY_MIME[ext]
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed or OCTET_STREAM


def display_filename(name: str) -> str:
    """[ACP-DELIV-07] the base name without control characters, `file` when nothing is left."""
    return _without_controls(name) or "file"


def display_title(title: JSON, filename: str) -> str:
    """[ACP-DELIV-07] a display label only; it never names a file."""
    cleaned = _without_controls(title) if isinstance(title, str) else ""
    return cleaned or filename


def delivery_uri(data: bytes, ext: str | None) -> str:
    """[ACP-DELIV-05] the uri from the full SHA-256 of the bytes and the copy's extension."""
    return URI_PREFIX + uploads.content_name(data, ext)


def _resolve_failure(security: SecurityPolicy, raw: str) -> str | None:
    """[ACP-DELIV-03] a missing or unresolvable file is reported before the policy decision."""
    candidate = Path(raw).expanduser() if raw.startswith("~") else Path(raw)
    if not candidate.is_absolute():
        candidate = security.workspace_dir / candidate
    try:
        os.path.realpath(candidate, strict=True)
    except OSError as exc:
        return f"Failed to resolve file path: {fsio.os_detail(exc)}"
    return None


def _checked(security: SecurityPolicy, raw: str) -> Path | str:
    """The canonical path to deliver, or the first ACP-DELIV-03 reason that applies."""
    if "\x00" in raw:
        return NUL_REFUSAL
    checked = security.check_path(raw)
    if isinstance(checked, PathRefusal) and not checked.reason.startswith(
        ("Path escapes workspace directory: ", "Path blocked by security policy: ")
    ):
        return checked.reason  # lexical refusals and canonicalisation failures come first
    unresolved = _resolve_failure(security, raw)
    if unresolved is not None:
        return unresolved
    return checked.reason if isinstance(checked, PathRefusal) else checked


def _read_source(canonical: Path) -> bytes | str:
    """[ACP-DELIV-03] open without following a final link, then type and size checks."""
    if canonical == fsio.DEV_NULL:
        return "Not a file"
    try:
        return fsio.read_regular(canonical, MAX_BLOB_BYTES)
    except fsio.OpenFailed as exc:
        return f"Failed to open file: {exc.detail}"
    except fsio.NotRegular:
        return "Not a file"
    except fsio.TooLarge as exc:
        return too_large(exc.size)
    except fsio.FsError as exc:
        # Design: the spec names no text for a read error after a successful open.
        return f"Failed to read file: {exc.detail}"


@dataclass(frozen=True, slots=True)
class DeliverFile:
    """`deliver_file`: a read tool by class (POL-FILE-09) that copies a file into uploads/."""

    security: SecurityPolicy

    name: ClassVar[str] = "deliver_file"
    description: ClassVar[str] = DESCRIPTION
    parameters: ClassVar[JSONObject] = {  # [ACP-DELIV-01]
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to deliver."},
            "mimeType": {"type": "string", "description": "Optional MIME type."},
            "title": {"type": "string", "description": "Optional display label."},
        },
        "required": ["path"],
    }
    act: ClassVar[bool] = False

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        raw = argument(arguments, "path")
        if not isinstance(raw, str):
            return missing("path")  # [ACP-DELIV-02]
        canonical = _checked(self.security, raw)
        if isinstance(canonical, str):
            return ToolResult.fail(canonical)
        data = _read_source(canonical)
        if isinstance(data, str):
            return ToolResult.fail(data)
        filename = display_filename(canonical.name)
        mime = mime_type(argument(arguments, "mimeType"), canonical.name)
        try:
            # [ACP-DELIV-04] the extension comes from the source name, never from the title.
            copy = uploads.materialise(self._workspace(), data, canonical.name, mime)
        except uploads.UploadError as exc:
            return ToolResult.fail(f"Failed to materialize delivery: {exc}")
        except OSError as exc:
            return ToolResult.fail(f"Failed to materialize delivery: {fsio.os_detail(exc)}")
        uri = delivery_uri(data, uploads.extension(canonical.name))
        artifact: JSONObject = {
            "uri": uri,
            "path": str(copy.path),
            "filename": filename,
            "title": display_title(argument(arguments, "title"), filename),
            "mimeType": mime,
            "bytes": len(data),
        }
        output = f"Delivered {filename} ({len(data)} bytes)\nuri={uri}"  # [ACP-DELIV-08]
        return ToolResult.ok(output, data={ARTIFACT_KEY: artifact})

    def _workspace(self) -> Path:
        # The canonical session workspace, so the artifact path walks without links.
        workspace = self.security.check_path(".")
        return workspace if isinstance(workspace, Path) else self.security.workspace_dir


def verify_delivery(artifact: JSON) -> bytes | None:
    """[ACP-DELIV-09] [ACP-LOAD-11] the copy's bytes when they still match the artifact's uri.

    The copy is re-read without following a link at its name (at most 10 MiB) and the uri is
    recomputed from those bytes and the copy's own name; any mismatch, absence or error gives
    None and the caller sends the failed, text-only update.
    """
    if not isinstance(artifact, dict):
        return None
    uri, path = artifact.get("uri"), artifact.get("path")
    if not isinstance(uri, str) or not isinstance(path, str) or not path:
        return None
    copy = Path(path)
    if not copy.is_absolute() or uri != URI_PREFIX + copy.name:
        return None  # only a content-addressed name can ever verify
    try:
        # The directory part may legitimately pass through links (a linked home); the copy
        # itself is opened by a no-follow walk of the resolved directory.
        parent = Path(os.path.realpath(copy.parent, strict=True))
        data = fsio.read_regular(parent / copy.name, MAX_BLOB_BYTES)
    except (OSError, fsio.FsError):
        return None
    if delivery_uri(data, uploads.extension(copy.name)) != uri:
        return None
    return data


def tools(security: SecurityPolicy, settings: ToolSettings) -> list[Tool]:
    """The delivery tool bound to `security` (ACP-DELIV-01: the assembly keeps it for ACP)."""
    return [DeliverFile(security)]
