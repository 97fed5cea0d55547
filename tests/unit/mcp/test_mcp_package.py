"""The MCP client package as a whole: its public surface, and no asyncio nor any dependency
beyond the allowed ones (mcp.md §0.5)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

import pytest

# --- the public surface ------------------------------------------------------------------


@pytest.mark.req("MCP-API-01")
def test_the_package_exports_its_public_surface() -> None:
    import zeroclaw_ref.mcp as package

    names = (
        "McpRegistry", "McpOptions", "ClientHandlers", "accept_with_defaults",
        "format_result_for_model",
    )  # fmt: skip
    errors = (
        "McpError", "McpConnectError", "McpProtocolError", "McpRpcError", "McpToolError",
        "McpTimeoutError", "McpOutcomeUnknownError", "McpCancelledError", "McpUnavailableError",
        "McpSizeLimitError", "McpClosedError",
    )  # fmt: skip
    for name in names + errors:
        assert name in package.__all__ and getattr(package, name) is not None, name
    for name in errors:
        cls = getattr(package, name)
        assert isinstance(cls, type) and issubclass(cls, package.McpError), name
    assert callable(package.McpRegistry.connect_all)


_PROBE = r"""
import ast, importlib, json, pkgutil, sys
import zeroclaw_ref.mcp as package
for info in pkgutil.iter_modules(package.__path__):
    importlib.import_module("zeroclaw_ref.mcp." + info.name)

def runtime_imports(tree):
    # every import except those under `if TYPE_CHECKING:`
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for b in node.body for n in ast.walk(b))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module

found = set()
for name, module in sorted(sys.modules.items()):
    path = getattr(module, "__file__", None)
    if name.startswith("zeroclaw_ref") and path and path.endswith(".py"):
        tree = ast.parse(open(path, encoding="utf-8").read())
        found.update(n.split(".")[0] for n in runtime_imports(tree))
print(json.dumps({"asyncio": "asyncio" in sys.modules, "imports": sorted(found)}))
"""


def _runtime_closure(roots: tuple[str, ...]) -> set[str]:
    """The distributions `roots` need at run time (extras left out), normalised names."""
    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        for line in metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return seen


@pytest.mark.req("MCP-API-07")
def test_the_client_uses_no_asyncio_and_only_the_allowed_dependencies() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    report = json.loads(done.stdout)
    assert report["asyncio"] is False
    assert not {"asyncio", "anyio", "trio"} & set(report["imports"])
    third_party = {
        name
        for name in report["imports"]
        if name not in sys.stdlib_module_names and name not in ("__future__", "zeroclaw_ref")
    }
    assert {"requests", "sseclient"} <= third_party
    # every outside import belongs to requests, sseclient-py or cryptography (or what they
    # themselves install, such as urllib3 under requests)
    allowed = _runtime_closure(("requests", "sseclient-py", "cryptography"))
    owners = metadata.packages_distributions()
    for name in third_party:
        dists = {d.lower().replace("_", "-") for d in owners.get(name, [name])}
        assert dists <= allowed, (name, dists)
