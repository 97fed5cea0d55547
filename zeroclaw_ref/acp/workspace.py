"""Choosing a session's workspace from the requested `cwd` (acp.md §3.3)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.wire.errors import RpcError

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
    path = Path(given) if Path(given).is_absolute() else Path.cwd() / given
    try:
        canonical = Path(os.path.realpath(path, strict=True))
        info = canonical.stat()
    except OSError as exc:
        code = exc.errno if exc.errno is not None else -1
        raise _unusable(given, _REASONS.get(code, exc.strerror or str(exc))) from exc
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
    except OSError as exc:
        reason = _REASONS.get(exc.errno or -1, exc.strerror or str(exc))
        raise RpcError.internal_error(
            f"Failed to create agent: cannot create agent workspace {path}: {reason}"
        ) from exc
    return path.resolve()
