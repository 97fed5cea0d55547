"""What a confined command may touch: the plan both backends apply (ZC-SBX-02..05).

Goals: the command reads only the session's allowed roots and the system locations a
command needs, writes only the workspace and a private temporary directory, and never sees
`forbidden_paths`, the configuration directory or the data directory, whatever the autonomy
level. Plan: an allow-list of canonical paths (read-only and writable), plus masks: the
hidden paths that lie *inside* an allowed tree (an allow-list alone would show them), each
covered by an empty read-only file system, with any allowed root inside a mask bound back.
Caveat: the allow-list is computed when the command starts; a file created later in a
system directory is covered by its directory's rule, which is what a read-only tree wants.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from zeroclaw_ref.policy.security import SecurityPolicy

# Read-only system trees every command may need (missing ones are skipped).
SYSTEM_TREES: tuple[str, ...] = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Device files a command may read and write; nothing else of /dev is visible.
DEVICES: tuple[str, ...] = (
    "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
)  # fmt: skip
# /etc is readable minus these secrets (relative names; a trailing `*` is a prefix, and a
# public key `.pub` is never a secret). Each one that exists is masked.
ETC_SECRETS: tuple[str, ...] = (
    "shadow", "shadow-", "gshadow", "gshadow-", "sudoers", "sudoers.d", "krb5.keytab",
    "ssl/private", "ssh/ssh_host_*", "ipsec.secrets", "ppp/chap-secrets", "ppp/pap-secrets",
    "wireguard", "letsencrypt", "NetworkManager/system-connections", "security/opasswd",
)  # fmt: skip


Links = tuple[tuple[str, str], ...]  # (link, its target as written)


@dataclass(frozen=True, slots=True)
class Plan:
    """The confinement of one command, as canonical path strings."""

    read_only: tuple[str, ...]
    writable: tuple[str, ...]
    masks: tuple[str, ...]
    exposed: tuple[str, ...]
    network: bool
    # System entries that are symbolic links (merged /usr: /bin -> usr/bin), for backends that
    # build a new root instead of filtering the real one.
    links: Links = ()
    # The masks that hide the rest of the file system (KEEP_TOP), for backends that filter the
    # real root; a backend that builds a new root (bwrap) leaves them out.
    outside: tuple[str, ...] = ()


def _real(path: Path | str) -> str | None:
    """The canonical path of an existing entry, or None."""
    try:
        return os.path.realpath(path, strict=True)
    except (OSError, ValueError):
        return None


def etc_secrets(etc: str = "/etc") -> list[str]:
    """The ETC_SECRETS that exist under `etc`, as canonical paths."""
    found: list[str] = []
    for secret in ETC_SECRETS:
        parent, _, name = f"{etc}/{secret}".rpartition("/")
        if not name.endswith("*"):
            candidates = [f"{parent}/{name}"]
        else:
            prefix = name[:-1]
            candidates = [f"{parent}/{n}" for n in _listing(parent)
                          if n.startswith(prefix) and not n.endswith(".pub")]  # fmt: skip
        found += [r for r in map(_real, candidates) if r is not None and r.startswith(etc + "/")]
    return sorted(set(found))


def _listing(directory: str) -> list[str]:
    try:
        return sorted(p.name for p in Path(directory).iterdir())
    except OSError:
        return []


@functools.lru_cache(maxsize=8)
def system_paths(path_env: str, home: str | None) -> tuple[tuple[str, ...], Links]:
    """The canonical read-only system locations, and those of them that are links.

    SYSTEM_TREES, /etc, the interpreter's prefixes and the directories of PATH (never `/` or
    the home directory itself). Cached: the same for every command of the process.
    """
    candidates = [*SYSTEM_TREES, "/etc", sys.prefix, sys.base_prefix, sys.exec_prefix]
    for entry in path_env.split(os.pathsep):
        if entry.startswith("/") and entry != "/" and entry.rstrip("/") != (home or "").rstrip("/"):
            candidates.append(entry)
    real = [r for r in map(_real, candidates) if r is not None]
    links = {p: str(Path(p).readlink()) for p in candidates if Path(p).is_symlink()}
    return tuple(_dedupe(real)), tuple(links.items())


def make_plan(security: SecurityPolicy, private_tmp: Path, environment: dict[str, str]) -> Plan:
    """The plan for one command of `security`'s execution, with `private_tmp` writable."""
    workspace = _real(security.workspace_dir)
    writable = [p for p in (workspace, _real(private_tmp)) if p is not None]
    roots = [r for r in (_real(root) for root in security.allowed_roots) if r is not None]
    read_only = [r for r in roots if r not in writable]
    system, links = system_paths(environment.get("PATH", ""), environment.get("HOME"))
    read_only += [s for s in system if s not in read_only]
    read_only.append("/proc")  # the sandbox's own /proc: only its processes
    devices = [d for d in DEVICES if Path(d).exists()]
    allowed_roots = [*writable, *roots]
    outside = _outside_masks()
    hidden = _masks(security, allowed_roots) + list(_etc_masks())
    allowed = _dedupe([*writable, *read_only])
    masks = _irredundant([*outside, *hidden], allowed)
    exposed = sorted({a for a in allowed if any(a != m and _within(a, m) for m in masks)})
    return Plan(
        read_only=tuple(_dedupe(read_only)),
        writable=tuple(_dedupe([*writable, *devices])),
        masks=tuple(masks),
        exposed=tuple(exposed),
        network=security.sandbox.network,
        links=links,
        outside=tuple(m for m in masks if m in outside),
    )


# Top-level directories a command may need to see; every other one is masked, so that what
# the allow-list cannot govern (connecting to a UNIX socket such as /run/docker.sock, or one in
# /tmp, is not a file access) is out of sight. Allowed paths inside a mask are bound back.
KEEP_TOP = frozenset({"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc",
                      "dev"})  # fmt: skip


@functools.lru_cache(maxsize=1)
def _outside_masks() -> tuple[str, ...]:
    out = []
    for name in _listing("/"):
        path = Path("/") / name
        if name not in KEEP_TOP and path.is_dir() and not path.is_symlink():
            out.append(str(path))
    return tuple(out)


def _irredundant(masks: list[str], allowed: list[str]) -> list[str]:
    """The masks in mount order (outermost first), without those already hidden: a mask inside
    another one is redundant unless an allowed path bound back into the outer one contains it."""
    ordered = sorted(set(masks), key=lambda p: (p.count("/"), p))
    kept: list[str] = []
    for mask in ordered:
        covered = any(
            _within(mask, outer)
            and not any(_within(mask, a) and _within(a, outer) for a in allowed)
            for outer in kept
        )
        if not covered:
            kept.append(mask)
    return kept


def _within(path: str, root: str) -> bool:
    """Component-wise containment on canonical path strings (faster than Path here: a plan
    is made for every command)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _masks(security: SecurityPolicy, roots: list[str]) -> list[str]:
    """Hidden paths that an allowed root would otherwise show.

    Only the allowed roots are searched: the system trees are the same for every
    configuration (the default `forbidden_paths` name `/usr` and `/etc`, which commands need;
    /etc's secrets are left out of the allow-list entry by entry instead).

    A forbidden path that is, or contains, an allowed root is not masked: allowed roots win
    over `forbidden_paths`, as in the file tools' check (POL-FS-05). The configuration and
    data directories are always masked where visible; an allowed root inside them (the
    agent's own workspace lives in the configuration directory) is bound back in.
    """
    hidden: list[tuple[str, bool]] = []
    for entry in security.forbidden_paths:
        real = _real(Path(entry).expanduser())
        if real is not None:
            hidden.append((real, False))
    for directory in security.sandbox_hidden:
        real = _real(directory)
        if real is not None:
            hidden.append((real, True))
    out: list[str] = []
    for path, always in hidden:
        if not always and any(_within(root, path) for root in roots):
            continue
        if any(path != root and _within(path, root) for root in roots):
            out.append(path)
    return out


@functools.lru_cache(maxsize=1)
def _etc_masks() -> tuple[str, ...]:
    return tuple(etc_secrets())


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
