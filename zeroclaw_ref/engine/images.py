"""Image parts for a model request, rebuilt before each request (policy.md POL-ENGINE-12).

Tool results declare their images in `attachments` (mcp.md MCP-RESULT-19) and user messages
carry `[IMAGE:<absolute path>]` markers (acp.md ACP-PROMPT-17); both become
`{"type": "image", "path", "mime_type", "data"}` parts in the message's `images`.

Design notes:
- Only regular files directly inside `<workspace>/uploads/` are read, through a descriptor of
  `uploads` opened without following links and a file opened relative to it with `O_NOFOLLOW`,
  so neither a symbolic link nor a rename between the check and the read can smuggle another
  file to the provider. The type comes from the bytes alone (MCP-RESULT-23's signatures): the
  declared `mimeType` and the extension are not trusted.
- Markers in assistant or tool text are never used (MCP-RESULT-20): a hostile tool could
  otherwise name a local file and have it uploaded.
- Messages that gain images are new dicts; the others are passed through unchanged, and the
  inputs are never mutated (ACP-RT-05: the parts are never stored).
"""

from __future__ import annotations

import base64
import logging
import os
import re
import stat
from pathlib import Path

from zeroclaw_ref.core.jsontypes import JSON, JSONObject, as_object
from zeroclaw_ref.core.limits import MAX_BLOB_BYTES

log = logging.getLogger(__name__)

# [ACP-PROMPT-17] `[IMAGE:<absolute path>]`, no space after the colon.
IMAGE_MARKER = re.compile(r"\[IMAGE:([^\]\n]+)\]")

# [MCP-RESULT-23] signature -> MIME type (WebP is checked apart: `RIFF`, then `WEBP` at 8).
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff_image(data: bytes) -> str | None:
    """[MCP-RESULT-23] the MIME type the bytes' signature identifies, or None."""
    for signature, mime in _SIGNATURES:
        if data.startswith(signature):
            return mime
    if len(data) >= 12 and data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def attach_images(messages: list[JSONObject], workspace: Path) -> list[JSONObject]:
    """[POL-ENGINE-12] the messages with `images` rebuilt from attachments and markers.

    Returns `messages` itself when no message can carry an image (the caller owns that list).

    A path that cannot be used (outside `uploads/`, a link, not a regular file, too large,
    unreadable, not PNG/JPEG/WebP/GIF) adds no part and logs one WARN line naming it.
    """
    # Design: this runs before every model request over the whole kept window, and almost no
    # message carries an image, so the list is copied only from the first one that does.
    out: list[JSONObject] | None = None
    for index, message in enumerate(messages):
        paths = _image_paths(message)
        if paths is None:
            if out is not None:
                out.append(message)
            continue
        if out is None:
            out = messages[:index]
        uploads = workspace / "uploads"
        parts: list[JSON] = []
        for path in paths:
            part = _image_part(path, uploads)
            if part is not None:
                parts.append(part)
        updated = {k: v for k, v in message.items() if k != "images"}
        if parts:
            updated["images"] = parts
        out.append(updated)
    return messages if out is None else out


def _image_paths(message: JSONObject) -> list[str] | None:
    """The image paths a message declares, in order; None when it can carry none."""
    role = message.get("role")
    if role == "user":
        content = message.get("content")
        if not isinstance(content, str) or "[IMAGE:" not in content:
            return None
        return [m.group(1) for m in IMAGE_MARKER.finditer(content)]
    if role == "tool":
        attachments = message.get("attachments")
        if not isinstance(attachments, list) or not attachments:
            return None
        paths: list[str] = []
        for attachment in attachments:
            path = (as_object(attachment) or {}).get("path")
            if isinstance(path, str):
                paths.append(path)
        return paths
    return None


def _image_part(path: str, uploads: Path) -> JSON:
    try:
        problem, data = _read_upload(path, uploads)
    except ValueError:
        # A NUL or a lone surrogate in a prompt's marker: no file has such a name, and the
        # operating-system calls raise instead of failing; like any unusable path it adds no
        # part (POL-ENGINE-12) rather than failing the turn.
        problem, data = "not a usable file name", None
    if data is None:
        log.warning("image %s not sent to the model: %s", path, problem)
        return None
    mime = sniff_image(data)
    if mime is None:
        log.warning("image %s not sent to the model: not a PNG, JPEG, WebP or GIF file", path)
        return None
    return {
        "type": "image",
        "path": path,
        "mime_type": mime,
        "data": base64.b64encode(data).decode("ascii"),
    }


def _read_upload(path: str, uploads: Path) -> tuple[str, bytes | None]:
    """The file's bytes, or a reason it may not be read (module note)."""
    candidate = Path(path)
    if not candidate.is_absolute() or ".." in candidate.parts or candidate.name in ("", "."):
        return "not an absolute path inside uploads/", None
    if not _same_dir(candidate.parent, uploads):
        return "not directly inside the workspace's uploads/", None
    try:
        dir_fd = os.open(uploads, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        return f"uploads/ cannot be opened: {exc.strerror}", None
    try:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(candidate.name, flags, dir_fd=dir_fd)
    except OSError as exc:
        return f"cannot be opened: {exc.strerror}", None
    finally:
        os.close(dir_fd)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BLOB_BYTES:
        os.close(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file", None
        return f"larger than {MAX_BLOB_BYTES} bytes", None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_BLOB_BYTES + 1)
    if len(data) > MAX_BLOB_BYTES:  # grew after the check
        return f"larger than {MAX_BLOB_BYTES} bytes", None
    return "", data


def _same_dir(parent: Path, uploads: Path) -> bool:
    # Markers name the canonical workspace (MCP-RESULT-34) while the execution may hold another
    # spelling of it, so the directories are compared by identity, not by text.
    try:
        return os.path.samestat(parent.stat(), uploads.stat())
    except OSError:
        return False
