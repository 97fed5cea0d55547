"""Race-resistant file access for the file, search and delivery tools (policy.md §4.2,
acp.md ACP-SEC-09).

Goals: a path that passed `SecurityPolicy.check_path` cannot be swapped for a symbolic link
between the check and the use. Plan: every operation starts from the canonical path the check
returned and walks it from the filesystem root one component at a time with
`O_NOFOLLOW | O_DIRECTORY` relative to the previous directory descriptor; the final component is
opened with `O_NOFOLLOW` (reads) or written through an exclusive temporary file renamed into
place relative to the same descriptor (writes), so a link that appears anywhere after the check
makes the operation fail instead of escaping. The canonical path contains no link by
construction, so a legitimate path always walks cleanly.
Caveats: walking needs only search permission on ancestors (`O_PATH` where available). Bind
mounts and hard links are outside this check, as they are for the path policy itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from zeroclaw_ref.policy.security import PathRefusal, SecurityPolicy

DEV_NULL = Path("/dev/null")

# Design: O_PATH lets the walk cross directories the process may search but not list.
_WALK = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
_LIST = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO planted in the workspace must not hang the turn.
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_CHUNK = 1 << 16


class FsError(Exception):
    """An operating-system failure; `detail` is the text tools put after their prefix."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class OpenFailed(FsError):
    """The final component could not be opened (missing, a link, a permission error)."""


class NotRegular(FsError):
    """The opened object is a directory, a device, a FIFO or a socket."""


class TooLarge(FsError):
    """The file is larger than the caller's limit; `size` is its size in bytes."""

    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


def os_detail(exc: OSError) -> str:
    """The stable text of an OS error: its strerror, without the path Python appends."""
    return exc.strerror or str(exc)


@dataclass(frozen=True, slots=True)
class Located:
    """A directory descriptor and the name of the final component inside it."""

    dir_fd: int
    name: str


def check(security: SecurityPolicy, raw: str) -> Path | PathRefusal:
    """[POL-FS-01..07] the one path check; every tool starts here, fsio never bypasses it."""
    return security.check_path(raw)


@contextlib.contextmanager
def walk_dir(canonical: Path, *, create: bool = False) -> Iterator[int]:
    """Yield a descriptor for the directory `canonical`, reached without following links.

    With `create`, missing components are created (mode 0o777 less the umask) on the way.

    Raises:
        FsError: a component is missing, is a symbolic link or cannot be opened; the caller
            reports it as its own failure text.
    """
    if not canonical.is_absolute():
        raise FsError(f"not an absolute path: {canonical}")
    fd = _open_or_fail("/", _WALK, None)
    try:
        for part in canonical.parts[1:]:
            next_fd = _step(fd, part, create)
            os.close(fd)
            fd = next_fd
        yield fd
    finally:
        os.close(fd)


def _step(parent: int, part: str, create: bool) -> int:
    try:
        return os.open(part, _WALK, dir_fd=parent)
    except FileNotFoundError as exc:
        if not create:
            raise FsError(os_detail(exc)) from exc
    except OSError as exc:
        raise FsError(os_detail(exc)) from exc
    try:
        os.mkdir(part, 0o777, dir_fd=parent)
    except FileExistsError:
        pass  # created concurrently: the open below still refuses to follow a link
    except OSError as exc:
        raise FsError(os_detail(exc)) from exc
    return _open_or_fail(part, _WALK, parent)


def _open_or_fail(name: str, flags: int, dir_fd: int | None, mode: int = 0o777) -> int:
    try:
        return os.open(name, flags, mode, dir_fd=dir_fd)
    except OSError as exc:
        raise FsError(os_detail(exc)) from exc


@contextlib.contextmanager
def locate(canonical: Path, *, create_parents: bool = False) -> Iterator[Located]:
    """Yield the parent directory descriptor of `canonical` and its final name.

    Raises:
        FsError: as `walk_dir` for the parent directory.
    """
    if canonical.parent == canonical:
        raise FsError(os.strerror(errno.EISDIR))
    with walk_dir(canonical.parent, create=create_parents) as dir_fd:
        yield Located(dir_fd, canonical.name)


def read_at(where: Located, max_bytes: int) -> bytes:
    """Read the regular file `where.name` without following a final link.

    Raises:
        OpenFailed: the open failed (including a link at the final component).
        NotRegular: the object is not a regular file.
        TooLarge: the file is larger than `max_bytes`.
        FsError: reading failed.
    """
    try:
        fd = os.open(where.name, _READ, dir_fd=where.dir_fd)
    except OSError as exc:
        raise OpenFailed(os_detail(exc)) from exc
    try:
        return _read_fd(fd, max_bytes)
    finally:
        os.close(fd)


def _read_fd(fd: int, max_bytes: int) -> bytes:
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise NotRegular(os.strerror(errno.EISDIR))
    if not stat.S_ISREG(info.st_mode):
        raise NotRegular("not a regular file")
    if info.st_size > max_bytes:
        raise TooLarge(info.st_size)
    chunks: list[bytes] = []
    total = 0
    try:
        os.set_blocking(fd, True)
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            total += len(chunk)
            # Design: a file that grows past the limit while being read is refused as well.
            if total > max_bytes:
                raise TooLarge(total)
            chunks.append(chunk)
    except OSError as exc:
        raise FsError(os_detail(exc)) from exc
    return b"".join(chunks)


def read_regular(canonical: Path, max_bytes: int) -> bytes:
    """Read the checked path `canonical` (a regular file, or `/dev/null`).

    Raises:
        OpenFailed, NotRegular, TooLarge, FsError: as `read_at`; the walk's failures are
            `OpenFailed`.
    """
    if canonical == DEV_NULL:
        return b""  # [POL-FS-05] the one device a tool may name; it always reads empty
    try:
        with locate(canonical) as where:
            return read_at(where, max_bytes)
    except (OpenFailed, NotRegular, TooLarge):
        raise
    except FsError as exc:
        raise OpenFailed(exc.detail) from exc


def replace_at(where: Located, data: bytes) -> None:
    """Atomically replace `where.name` with `data`; a link there is replaced, never followed.

    An existing regular file keeps its permission bits.

    Raises:
        FsError: the temporary file could not be written or renamed; nothing is left behind.
    """
    keep_mode: int | None = None
    with contextlib.suppress(OSError):
        info = os.stat(where.name, dir_fd=where.dir_fd, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            raise FsError(os.strerror(errno.EISDIR))
        if stat.S_ISREG(info.st_mode):
            keep_mode = stat.S_IMODE(info.st_mode)
    temp = f".{where.name[:64]}.{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        # A new file gets 0o666 less the umask, as an ordinary create would.
        fd = os.open(temp, flags, 0o666, dir_fd=where.dir_fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if keep_mode is not None:
                os.fchmod(fd, keep_mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, where.name, src_dir_fd=where.dir_fd, dst_dir_fd=where.dir_fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=where.dir_fd)
        raise FsError(os_detail(exc)) from exc


def write_regular(canonical: Path, data: bytes, *, create_parents: bool) -> None:
    """Write `data` to the checked path `canonical` atomically (`/dev/null` written directly).

    Raises:
        FsError: the parent could not be reached or created, or the write failed.
    """
    if canonical == DEV_NULL:
        fd = _open_or_fail(str(DEV_NULL), os.O_WRONLY | os.O_CLOEXEC, None)
        try:
            os.write(fd, data)
        except OSError as exc:
            raise FsError(os_detail(exc)) from exc
        finally:
            os.close(fd)
        return
    with locate(canonical, create_parents=create_parents) as where:
        replace_at(where, data)


def open_listing(dir_fd: int, name: str) -> int:
    """Open the child directory `name` for listing without following a link.

    Raises:
        FsError: it is missing, a link, not a directory or unreadable.
    """
    return _open_or_fail(name, _LIST, dir_fd)


def reopen_for_listing(dir_fd: int) -> int:
    """A listable descriptor for the directory `dir_fd` (which may be an `O_PATH` one).

    Raises:
        FsError: the directory cannot be listed.
    """
    return _open_or_fail(".", _LIST, dir_fd)
