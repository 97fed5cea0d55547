"""DESIGN §5.4: answering `initialize` must not import the heavy dependencies — a set, never a
time (timing belongs to bench/)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("requests", "cryptography", "serial", "wsproto", "sseclient", "zeroclaw_ref.mcp")

PROBE = """
import json, sys
from zeroclaw_ref.cli import main as cli
from zeroclaw_ref.acp import server, stdio  # the whole stdio path up to initialize
from zeroclaw_ref.config import load
print(json.dumps(sorted(m for m in sys.modules)))
"""


@pytest.mark.req("ACP-TR-01")
def test_the_acp_entry_point_imports_no_heavy_dependency() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    loaded = set(json.loads(out))
    heavy = sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == []


# Deferred to the first session (acp/server.py's module note; bench/acp_startup): the engine,
# the policy seam, the providers and tools behind them, and the session modules.
DEFERRED = (
    "zeroclaw_ref.engine",
    "zeroclaw_ref.policy",
    "zeroclaw_ref.providers",
    "zeroclaw_ref.acp.session",
    "zeroclaw_ref.acp.approver",
    "zeroclaw_ref.acp.replay",
)


@pytest.mark.req("ACP-TR-01")
def test_the_session_machinery_is_not_imported_before_the_first_session() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    loaded = set(json.loads(out))
    early = sorted(m for m in loaded if any(m == d or m.startswith(d + ".") for d in DEFERRED))
    assert early == []
