"""DESIGN §5.1 and §5.3: imports point downwards, and outside packages stay where allowed."""

from __future__ import annotations

import importlib.util

import pytest

from tests.architecture._imports import Edge, edges, package_files

# DESIGN §5.1: package -> the zeroclaw_ref packages it may import (itself always allowed).
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "wire": {"core"},
    "rpc": {"core", "wire"},
    "config": {"core"},
    "store": {"core"},
    "policy": {"core", "config"},
    "providers": {"core", "config"},
    "sandbox": {"core", "config", "policy"},
    "tools": {"core", "config", "policy", "store", "sandbox"},
    "mcp": {"core", "wire", "rpc", "config", "policy", "tools.base", "tools.uploads"},
    "engine": {"core", "config", "policy", "store", "providers", "tools", "mcp", "sandbox"},
    "acp": {"core", "wire", "rpc", "config", "policy", "store", "providers", "tools", "mcp",
            "engine", "sandbox"},
    "cron": {"core", "wire", "rpc", "config", "policy", "store", "providers", "tools", "mcp",
             "engine"},
    "gateway": {"core", "wire", "rpc", "config", "policy", "store", "providers", "tools", "mcp",
                "engine", "acp", "cron"},
    "cli": {"core", "wire", "rpc", "config", "policy", "store", "providers", "tools", "mcp",
            "engine", "acp", "cron", "gateway"},
    "conformance": set(),
}  # fmt: skip

# DESIGN §5.3: outside modules and the only places that may import them.
OUTSIDE: dict[str, tuple[str, ...]] = {
    "sqlite3": ("store",),
    # config.secrets runs `op read` for `op://` secrets (config.md CFG-SECRETS-07).
    "subprocess": (
        "tools.shell",
        "tools.skills",
        "mcp.stdio",
        "conformance",
        "config.secrets",
        "sandbox.launch",
        "sandbox.forkserver",
    ),
    "requests": ("providers", "mcp.http", "mcp.sse", "gateway.pairing", "gateway.bridge"),
    "sseclient": ("providers", "mcp.http", "mcp.sse", "gateway.pairing", "gateway.bridge"),
    "wsproto": ("gateway.ws", "gateway.bridge"),
    "cryptography": ("config.secrets",),
    "tomli_w": ("config.write",),
    "serial": ("tools.peripherals",),
    "curses": ("cli.config_edit",),
    "asyncio": (),
    "anyio": (),
    "trio": (),
}


def _sub(dotted: str) -> str:
    """`zeroclaw_ref.tools.base` -> `tools.base`."""
    return dotted.split(".", 1)[1] if "." in dotted else ""


def _allowed(importer: str, target: str) -> bool:
    src = _sub(importer)
    dst = _sub(target)
    if not src or not dst:  # the package root (__version__) may be read by anyone but oracle
        return src.split(".")[0] != "conformance"
    src_pkg, dst_pkg = src.split(".")[0], dst.split(".")[0]
    if src_pkg not in ALLOWED or dst_pkg not in ALLOWED:
        # the root (`__version__`, `__main__` -> cli) is readable by all but the oracle
        return src_pkg != "conformance"
    if src_pkg == dst_pkg:
        return True
    grants = ALLOWED.get(src_pkg, set())
    return dst_pkg in grants or any(dst == g or dst.startswith(g + ".") for g in grants)


def _violations() -> list[Edge]:
    bad = []
    for path in package_files():
        for edge in edges(path):
            if edge.target.startswith("zeroclaw_ref"):
                if not _allowed(edge.module, edge.target):
                    bad.append(edge)
                continue
            top = edge.target.split(".")[0]
            if top in OUTSIDE:
                where = _sub(edge.module)
                if not any(where == p or where.startswith(p + ".") for p in OUTSIDE[top]):
                    bad.append(edge)
    return bad


def test_imports_point_downwards_and_outside_packages_stay_in_their_modules() -> None:
    bad = _violations()
    assert not bad, "\n".join(f"{e.module}:{e.line} imports {e.target}" for e in bad)


@pytest.mark.parametrize(
    ("importer", "target", "ok"),
    [
        ("zeroclaw_ref.wire.acp", "zeroclaw_ref.core.jsontypes", True),
        ("zeroclaw_ref.core.cancel", "zeroclaw_ref.wire.acp", False),
        ("zeroclaw_ref.mcp.adapters", "zeroclaw_ref.tools.base", True),
        ("zeroclaw_ref.mcp.adapters", "zeroclaw_ref.tools.shell", False),
        ("zeroclaw_ref.tools.shell", "zeroclaw_ref.engine.turn", False),
        ("zeroclaw_ref.conformance.core.runner", "zeroclaw_ref.core.jsontypes", False),
    ],
)
def test_the_layer_table_itself_can_reject(importer: str, target: str, ok: bool) -> None:
    assert _allowed(importer, target) is ok


def test_every_checked_module_is_importable_by_name() -> None:
    assert importlib.util.find_spec("zeroclaw_ref.acp.server") is not None
