"""The shared blob materialiser: content-addressed files under `<workspace>/uploads/`
(mcp.md §11.4; acp.md ACP-PROMPT-13..19, ACP-DELIV-04).

Goals: decode strictly, check the size before writing, and never follow a symbolic link while
writing. Plan: the workspace and `uploads/` are opened as directory descriptors (`uploads` with
`O_NOFOLLOW`), the bytes go to an exclusive temporary file inside it and are published with a
rename relative to the same descriptor (MCP-RESULT-32); an identical regular file already in
place is reused (MCP-RESULT-33).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import logging
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from zeroclaw_ref.core.limits import MAX_BLOB_BYTES

log = logging.getLogger(__name__)

# [ACP-PROMPT-18] acp.md Table 4-2 (and mcp.md MCP-RESULT-29)
EXTENSION_MIME: dict[str, str] = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "doc": "application/msword",
    "txt": "text/plain",
    "md": "text/markdown",
    "json": "application/json",
}

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_EXT = re.compile(r"^[A-Za-z0-9]{1,16}$")


class UploadError(Exception):
    """A blob that cannot be materialised; `str(exc)` is the exact client-facing text."""


@dataclass(frozen=True, slots=True)
class Materialised:
    path: Path
    display_name: str
    mime_type: str
    size: int


def decode_base64(text: str) -> bytes:
    """[ACP-PROMPT-13] [MCP-RESULT-26] canonical, padded, standard-alphabet base64 only."""
    trimmed = text.strip()
    try:
        data = base64.b64decode(trimmed, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise UploadError(f"Invalid base64: {exc}") from exc
    if base64.b64encode(data).decode("ascii") != trimmed:
        raise UploadError("Invalid base64: not the canonical encoding of its bytes")
    return data


def check_size(data: bytes) -> None:
    """[ACP-PROMPT-14] [MCP-RESULT-27]"""
    if len(data) > MAX_BLOB_BYTES:
        raise UploadError(f"Embedded resource exceeds 10 MB limit ({len(data)} bytes)")


def display_name(uri: str | None) -> str:
    """[ACP-PROMPT-16] [MCP-RESULT-28] a safe label derived from the resource uri."""
    name = (uri or "").strip()
    for prefix in ("file://", "attachment://"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    name = re.split(r"[/\\]", name)[-1]
    if name in ("", ".", ".."):
        name = "upload.bin"
    name = _CONTROL.sub("_", name.replace("/", "_").replace("\\", "_"))
    return name.replace("..", "_")


def extension(name: str) -> str | None:
    """[ACP-PROMPT-15] the lower-cased extension, kept only when 1–16 ASCII alphanumerics."""
    if "." not in name:
        return None
    ext = name.rsplit(".", 1)[1]
    return ext.lower() if _EXT.match(ext) else None


def mime_for(declared: object, name: str) -> str:
    """[ACP-PROMPT-18] declared type, else the extension table, else octet-stream."""
    if isinstance(declared, str) and declared.strip():
        return declared.strip()
    ext = extension(name)
    return EXTENSION_MIME.get(ext or "", "application/octet-stream")


def content_name(data: bytes, ext: str | None) -> str:
    """`<sha256>[.<ext>]` of the bytes."""
    digest = hashlib.sha256(data).hexdigest()
    return f"{digest}.{ext}" if ext else digest


def materialise(workspace: Path, data: bytes, name: str, mime_type: str) -> Materialised:
    """Write `data` to `<workspace>/uploads/<sha256>[.<ext>]` without following links.

    Raises:
        UploadError: with the exact texts of ACP-PROMPT-19 / MCP-RESULT-31.
    """
    check_size(data)
    final = content_name(data, extension(name))
    ws_fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        up_fd = _open_uploads(ws_fd)
        try:
            if not _same_regular_file(up_fd, final, data):
                _write_atomically(up_fd, final, data)
        finally:
            os.close(up_fd)
    finally:
        os.close(ws_fd)
    return Materialised(workspace / "uploads" / final, name, mime_type, len(data))


def _open_uploads(ws_fd: int) -> int:
    try:
        info = os.stat("uploads", dir_fd=ws_fd, follow_symlinks=False)
    except FileNotFoundError:
        try:
            os.mkdir("uploads", 0o700, dir_fd=ws_fd)
        except FileExistsError:
            pass
        except OSError as exc:
            raise UploadError(f"Cannot create upload dir: {exc.strerror or exc}") from exc
        info = os.stat("uploads", dir_fd=ws_fd, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        raise UploadError("uploads path is a symlink; refusing to materialize blob")
    try:
        return os.open("uploads", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=ws_fd)
    except OSError as exc:
        if stat.S_ISLNK(os.stat("uploads", dir_fd=ws_fd, follow_symlinks=False).st_mode):
            # raced into a link between the check and the open
            raise UploadError("uploads path is a symlink; refusing to materialize blob") from exc
        raise UploadError(f"Cannot create upload dir: {exc.strerror or exc}") from exc


def _same_regular_file(dir_fd: int, name: str, data: bytes) -> bool:
    # O_NONBLOCK: a FIFO planted under the final name (the shell tool can make one) would
    # otherwise block this open for ever, on the reader thread when a prompt carries the blob.
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(data):
            return False
        with os.fdopen(os.dup(fd), "rb") as existing:
            return existing.read(len(data) + 1) == data
    finally:
        os.close(fd)


def _write_atomically(dir_fd: int, name: str, data: bytes) -> None:
    temp = f".{name}.{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        fd = os.open(temp, flags, 0o600, dir_fd=dir_fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        # A link or other entry at the final name is replaced, never followed (MCP-RESULT-33).
        try:
            os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except IsADirectoryError:
            _replace_directory(dir_fd, temp, name)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise UploadError(f"Cannot write upload: {exc.strerror or exc}") from exc


def _replace_directory(dir_fd: int, temp: str, name: str) -> None:
    """[MCP-RESULT-33] a directory under the final name: renamed aside, then the file renamed
    into place.

    Design: the directory is kept, not deleted. Deleting is unbounded work (any depth, any
    number of entries) on the reader thread, which must stay responsive (ACP-TR-31), and the
    directory is somebody's content: the upload only needs its name back.
    """
    aside = f".{name}.{secrets.token_hex(8)}.old"
    os.rename(name, aside, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    log.warning(
        "a directory stood under the upload name %s; it was moved to uploads/%s", name, aside
    )
