"""Which sandbox backend is in force (ZC-SBX-01, ZC-SBX-06).

Goals: `auto` picks the strongest backend this machine offers; when none is, one warning is
logged and commands run unconfined, unless `required`, when every command is refused with
an error naming the missing kernel feature. Plan: cheap checks (one Landlock syscall, the
user-namespace sysctls, `bwrap` on PATH) decide at first use and are cached; the fork server
of the `landlock` backend then proves the choice with a real confinement before the first
command (`demote()` records a failure there). Caveat: until that first command, what
`initialize` reports rests on the cheap checks.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

from zeroclaw_ref.config.model import SandboxConfig
from zeroclaw_ref.core.jsontypes import JSONObject

log = logging.getLogger(__name__)

SYS_LANDLOCK_CREATE_RULESET = 444
STRENGTH = ("landlock", "bwrap")  # strongest first: Landlock adds signal and socket scopes


@dataclass(frozen=True, slots=True)
class Choice:
    """The backend in force for one configuration; `refusal` refuses every command."""

    backend: str  # "landlock", "bwrap" or "none"
    problem: str | None = None  # why a stronger backend is not in force
    refusal: str | None = None


_lock = threading.Lock()
_cache: dict[SandboxConfig, Choice] = {}
_broken: dict[str, str] = {}  # backend -> the problem a real confinement reported
_warned: set[str] = set()


def landlock_problem() -> str | None:
    """Why the `landlock` backend cannot run here, or None."""
    if "landlock" in _broken:
        return _broken["landlock"]
    import ctypes  # only on first use: the server's start-up never pays for it

    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0), 1)
    if abi < 1:
        return f"the kernel offers no Landlock ({os.strerror(ctypes.get_errno())})"
    if _sysctl("/proc/sys/user/max_user_namespaces") == "0":
        return "user namespaces are disabled (user.max_user_namespaces = 0)"
    if os.geteuid() != 0 and _sysctl("/proc/sys/kernel/unprivileged_userns_clone") == "0":
        return "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)"
    return None


def bwrap_problem() -> str | None:
    """Why the `bwrap` backend cannot run here, or None."""
    if "bwrap" in _broken:
        return _broken["bwrap"]
    return None if shutil.which("bwrap") else "bwrap (Bubblewrap) is not installed"


_PROBES = {"landlock": landlock_problem, "bwrap": bwrap_problem}


def _sysctl(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="ascii").strip()
    except OSError:
        return None


def choose(config: SandboxConfig) -> Choice:
    """The backend in force for `config` (cached; thread-safe)."""
    with _lock:
        cached = _cache.get(config)
        if cached is None:
            cached = _cache[config] = _decide(config)
            _warn_once(config, cached)
        return cached


def _decide(config: SandboxConfig) -> Choice:
    if config.backend == "none":
        return Choice("none")
    wanted = STRENGTH if config.backend == "auto" else (config.backend,)
    problems: list[str] = []
    for backend in wanted:
        problem = _PROBES[backend]()
        if problem is None:
            return Choice(backend, "; ".join(problems) or None)
        problems.append(f"{backend}: {problem}")
    text = "; ".join(problems)
    if config.required:
        return Choice("none", text, f"Command refused: no OS sandbox is available ({text})")
    return Choice("none", text)


def _warn_once(config: SandboxConfig, choice: Choice) -> None:
    if choice.backend != "none" or choice.problem is None or choice.problem in _warned:
        return
    _warned.add(choice.problem)
    if choice.refusal:
        log.warning("sandbox required but unavailable (%s): commands refused", choice.problem)
    else:
        log.warning("no OS sandbox available (%s): commands run unconfined", choice.problem)


def demote(backend: str, problem: str) -> None:
    """A real confinement with `backend` failed: never choose it again in this process."""
    with _lock:
        _broken[backend] = problem
        _cache.clear()


def describe(config: SandboxConfig) -> JSONObject:
    """[ZC-SBX-06] what `initialize` reports in `_meta.zeroclaw.sandbox`."""
    choice = choose(config)
    out: JSONObject = {"backend": choice.backend, "required": config.required}
    if choice.backend != "none":
        out["network"] = config.network
    if choice.problem is not None:
        out["unavailable"] = choice.problem
    return out


def reset_for_tests() -> None:
    """Forget every cached decision (tests only)."""
    with _lock:
        _cache.clear()
        _broken.clear()
        _warned.clear()
