"""Choosing a session's workspace from the requested `cwd` (acp.md §3.3)."""

from __future__ import annotations

import errno
import logging
import os
import stat
from pathlib import Path

from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.wire.errors import RpcError

log = logging.getLogger(__name__)

CWD_KEYS = ("cwd", "workspaceDir", "workspace_dir")

# acp.md Table 3-2
_REASONS = {
    errno.ENOENT: "No such file or directory",
    errno.ENOTDIR: "Not a directory",
    errno.EACCES: "Permission denied",
    errno.EPERM: "Permission denied",
}


def requested_cwd(params: JSONObject) -> str | None:
    """[ACP-NEW-07] the first of the cwd keys with a non-null value; [ACP-NEW-08] a string."""
    for key in CWD_KEYS:
        value = params.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise RpcError.invalid_params("Invalid parameter: cwd must be a string")
        return value
    return None


def _unusable(given: str, reason: str) -> RpcError:
    return RpcError.invalid_params(f"cwd is not a usable directory ({given}): {reason}")


def canonical_cwd(given: str) -> Path:
    """[ACP-NEW-09] [ACP-NEW-10] a realpath that must name an existing, searchable directory.

    Raises:
        RpcError: −32602 with the reason of acp.md Table 3-2.
    """
    if given == "":
        raise _unusable(given, _REASONS[errno.ENOENT])
    try:
        path = Path(given) if Path(given).is_absolute() else Path.cwd() / given
        canonical = Path(os.path.realpath(path, strict=True))
        info = canonical.stat()
    except OSError as exc:
        code = exc.errno if exc.errno is not None else -1
        raise _unusable(given, _REASONS.get(code, exc.strerror or str(exc))) from exc
    except ValueError as exc:
        # A NUL, or a lone surrogate with no file-system encoding: no file can have such a
        # name, so, like the empty string, it names nothing (Table 3-2, first row) — a
        # −32602 the client can act on, never an internal error.
        raise _unusable(given, _REASONS[errno.ENOENT]) from exc
    if not stat.S_ISDIR(info.st_mode):
        raise _unusable(given, _REASONS[errno.ENOTDIR])
    if not os.access(canonical, os.R_OK | os.X_OK):
        raise _unusable(given, _REASONS[errno.EACCES])
    return canonical


def agent_workspace(path: Path) -> Path:
    """[ACP-NEW-14] create the agent workspace with its parents and canonicalise it.

    Raises:
        RpcError: −32603 `Failed to create agent: cannot create agent workspace <path>: …`.
    """
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not path.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory")
        return path.resolve()
    except OSError as exc:
        reason = _REASONS.get(exc.errno or -1, exc.strerror or str(exc))
    except ValueError as exc:
        # A configured path with a NUL names no directory: it fails like one that cannot be
        # created, not as an unexpected exception.
        reason = str(exc)
    raise RpcError.internal_error(
        f"Failed to create agent: cannot create agent workspace {path}: {reason}"
    )


def restored_workspace(stored: str) -> Path:
    """[ACP-LOAD-05] the stored workspace of a session being restored, when it still is the
    canonical directory it was at `session/new`.

    The stored path is the session's boundary (ACP-NEW-10, ACP-SEC-09). When it, or one of its
    parents, has since been replaced by a symbolic link, following the link would hand the
    session a boundary nobody chose, so the path then counts as gone, like a removed one.

    Raises:
        RpcError: −32603 `Failed to load session: workspace directory is not available: <path>`.
    """
    path = Path(stored)
    gone = RpcError.internal_error(
        f"Failed to load session: workspace directory is not available: {path}"
    )
    try:
        canonical = Path(os.path.realpath(path, strict=True))
    except (OSError, ValueError):  # missing, unreadable, or a name no file can have
        raise gone from None
    if not canonical.is_dir():
        raise gone
    if canonical != path:
        # Design: the error text stays the exact row of Table 14-1 (ACP-ERR-01); the
        # operator learns the reason here.
        log.warning(
            "not restoring into %s: the stored workspace now resolves to %s "
            "(a symbolic link replaced it or one of its parents)",
            path,
            canonical,
        )
        raise gone
    return path
