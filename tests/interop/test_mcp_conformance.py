"""The official MCP conformance suite against our driver (mcp.md §15.1, MCP-CONF-01..07).

Each scenario runs alone (`conformance client --scenario <name>`): single-scenario runs exit 1
on any FAILURE or WARNING, a timeout or a non-zero client exit, whereas suite mode ignores the
client's exit status (MCP-CONF-06). Two releases are driven:

- 0.1.16 (stable): its four handshake-era scenarios;
- 0.2.0-alpha.12 (prerelease, `.peers/conformance-0.2/`): every non-auth client scenario the
  harness lists for 2025-11-25 and for 2026-07-28 (`--spec-version`), each at that version
  (the harness tells the driver through `MCP_CONFORMANCE_PROTOCOL_VERSION`). A test below keeps
  the two lists equal to the harness's own, so a scenario added upstream cannot go unnoticed.

Every run starts Node and a mock server, so the selected runs go through a pool of two
workers (the machine has two cores) and each test waits for its own run. The suite needs
Node >= 22, installed apart in `.peers/node22/` (PEERS.md).
"""

from __future__ import annotations

import io
import json
import re
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import require_peer
from zeroclaw_ref.cli.mcp_conformance import (
    CONTEXT_ENV,
    SCENARIO_ENV,
    SCENARIOS,
    VERSION_ENV,
    era_for,
    run_conformance_client,
)

STABLE = "0.1.16"
PRERELEASE = "0.2.0-alpha.12"
SUITE_PEER = {STABLE: "mcp-conformance", PRERELEASE: "mcp-conformance-0.2"}
HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
STABLE_SCENARIOS = ("initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry")
# The harness's non-auth client scenarios per version (`list --client --spec-version <v>`).
PRERELEASE_SCENARIOS = {
    HANDSHAKE: (*STABLE_SCENARIOS, "json-schema-2020-12-preservation"),
    MODERN: (
        "tools_call",
        "request-metadata",
        "sep-2322-client-request-state",
        "http-standard-headers",
        "http-custom-headers",
        "http-invalid-tool-headers",
        "json-schema-ref-no-deref",
        "json-schema-2020-12-preservation",
    ),
}
# What each scenario proves, beyond MCP-CONF-01/06 (every run).
PROVES = {
    "initialize": ("MCP-CONF-02",),
    "tools_call": ("MCP-CONF-03",),
    "elicitation-sep1034-client-defaults": ("MCP-CONF-04",),
    "sse-retry": ("MCP-CONF-05",),
    "json-schema-2020-12-preservation": ("MCP-CONF-07",),
    "json-schema-ref-no-deref": ("MCP-CONF-07",),
    "request-metadata": ("MCP-CONF-07", "MCP-MOD-02", "MCP-MOD-05", "MCP-MOD-06"),
    "http-standard-headers": ("MCP-CONF-07", "MCP-MOD-14"),
    "http-custom-headers": ("MCP-CONF-07", "MCP-MOD-15", "MCP-MOD-16"),
    "http-invalid-tool-headers": ("MCP-CONF-07", "MCP-MOD-16"),
    "sep-2322-client-request-state": ("MCP-CONF-07", "MCP-MOD-07", "MCP-MOD-08", "MCP-MOD-09"),
}
# The harness gives a client 30 s by default; this bounds the whole run (mock server included).
RUN_TIMEOUT_S = 90
REPO = Path(__file__).resolve().parents[2]
AUTH = "auth/"

Key = tuple[str, str | None, str]  # (suite, --spec-version or None, scenario)


def _key(suite: str, version: str | None, scenario: str) -> pytest.ParameterSet:
    ids = ("MCP-CONF-01", "MCP-CONF-06", *PROVES[scenario])
    if version == MODERN:
        ids = (*ids, "MCP-MOD-02", "MCP-MOD-05")
    name = f"{suite}-{version or 'default'}-{scenario}"
    return pytest.param(suite, version, scenario, marks=pytest.mark.req(*ids), id=name)


RUNS = [_key(STABLE, None, s) for s in STABLE_SCENARIOS] + [
    _key(PRERELEASE, version, s) for version, names in PRERELEASE_SCENARIOS.items() for s in names
]


def _peer(name: str) -> str:
    peer = require_peer(name)
    assert isinstance(peer, str)
    return peer


def _quiet_peer(name: str) -> str | None:
    """The peer's path, or None where `require_peer` would skip or fail (the test says so)."""
    try:
        return _peer(name)
    except (pytest.skip.Exception, pytest.fail.Exception):
        return None


@dataclass(frozen=True, slots=True)
class Outcome:
    returncode: int
    output: str  # harness stdout + stderr
    checks: list[dict[str, object]]
    client_stderr: str


def _run_one(node: str, suite: str, key: Key, out: Path) -> Outcome:
    _, version, scenario = key
    command = f"{shlex.quote(sys.executable)} -m zeroclaw_ref mcp-conformance-client"
    argv = [node, suite, "client", "--command", command, "--scenario", scenario, "-o", str(out)]
    if version is not None:
        argv += ["--spec-version", version]
    proc = subprocess.run(
        argv, cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )
    runs = sorted(out.glob(f"{scenario.replace('/', '-')}-*/checks.json"))
    assert len(runs) == 1, proc.stdout + proc.stderr
    checks = json.loads(runs[0].read_text(encoding="utf-8"))
    client_stderr = runs[0].with_name("stderr.txt")
    detail = client_stderr.read_text(encoding="utf-8") if client_stderr.is_file() else ""
    return Outcome(proc.returncode, proc.stdout + proc.stderr, checks, detail)


class Pool:
    """The selected runs, two at a time; each test waits for its own."""

    def __init__(self, keys: list[Key], tmp: pytest.TempPathFactory) -> None:
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="conformance")
        self._futures: dict[Key, Future[Outcome]] = {}
        node = _quiet_peer("node22")
        suites = {s: _quiet_peer(p) for s, p in SUITE_PEER.items()}
        for key in keys:
            suite = suites[key[0]]
            if node is not None and suite is not None:
                out = tmp.mktemp("conformance")
                self._futures[key] = self._executor.submit(_run_one, node, suite, key, out)

    def result(self, key: Key) -> Outcome:
        return self._futures[key].result(timeout=RUN_TIMEOUT_S * len(self._futures))

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="module")
def pool(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pool]:
    """Start every run this session selected (and only those) as soon as the first needs one."""
    wanted = "test_the_official_suite_passes_each_scenario_run_alone"
    keys: list[Key] = []
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if getattr(item, "originalname", None) == wanted and callspec is not None:
            params = callspec.params
            keys.append((params["suite"], params["version"], params["scenario"]))
    runs = Pool(keys, tmp_path_factory)
    yield runs
    runs.close()


@pytest.mark.parametrize(("suite", "version", "scenario"), RUNS)
def test_the_official_suite_passes_each_scenario_run_alone(
    pool: Pool, suite: str, version: str | None, scenario: str
) -> None:
    _peer("node22")
    _peer(SUITE_PEER[suite])
    outcome = pool.result((suite, version, scenario))
    checks = outcome.checks
    bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    detail = outcome.client_stderr
    assert bad == [], f"{json.dumps(bad, indent=2)}\nclient stderr:\n{detail}"
    assert any(c.get("status") == "SUCCESS" for c in checks)
    assert outcome.returncode == 0, outcome.output[-4000:] + detail
    assert "OVERALL: PASSED" in outcome.output


LISTED = re.compile(r"^\s+- (?P<name>\S+) \[")


@pytest.mark.req("MCP-CONF-07")
@pytest.mark.parametrize("version", [HANDSHAKE, MODERN])
def test_every_non_auth_client_scenario_of_the_prerelease_is_driven(version: str) -> None:
    node = _peer("node22")
    suite = _peer(SUITE_PEER[PRERELEASE])
    proc = subprocess.run(
        [node, suite, "list", "--client", "--spec-version", version],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=True,
    )  # fmt: skip
    listed = [m.group("name") for line in proc.stdout.splitlines() if (m := LISTED.match(line))]
    assert listed, proc.stdout
    assert sorted(n for n in listed if not n.startswith(AUTH)) == sorted(
        PRERELEASE_SCENARIOS[version]
    )
    assert set(listed) - set(SCENARIOS) == {n for n in listed if n.startswith(AUTH)}


@pytest.mark.req("MCP-CONF-01")
@pytest.mark.parametrize("name", ["", "auth/basic-cimd", "nonsense"])
def test_a_missing_or_unknown_scenario_exits_2_naming_it(name: str) -> None:
    err = io.StringIO()
    environ = {SCENARIO_ENV: name} if name else {}
    assert run_conformance_client("http://127.0.0.1:9/mcp", environ, err) == 2
    assert err.getvalue() == f"unknown conformance scenario: {name}\n"


@pytest.fixture
def refused_url() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}/mcp"  # bound, not listening: refused


@pytest.mark.req("MCP-CONF-01")
def test_a_server_that_cannot_be_reached_exits_1(refused_url: str) -> None:
    err = io.StringIO()
    status = run_conformance_client(refused_url, {SCENARIO_ENV: "initialize"}, err)
    assert status == 1
    assert "conformance" in err.getvalue()
    assert refused_url in err.getvalue()  # the reason names the endpoint


@pytest.mark.req("MCP-CONF-07", "MCP-MOD-01")
@pytest.mark.parametrize(
    ("version", "era"),
    [(MODERN, "auto"), (HANDSHAKE, "legacy"), ("2025-06-18", "legacy"), (None, "legacy")],
)
def test_a_modern_leg_detects_the_era_and_a_handshake_leg_stays_legacy(
    version: str | None, era: str
) -> None:
    assert era_for(version) == era


@pytest.mark.req("MCP-CONF-07")
def test_a_context_that_is_not_json_is_a_client_error(refused_url: str) -> None:
    err = io.StringIO()
    environ = {SCENARIO_ENV: "http-custom-headers", VERSION_ENV: MODERN, CONTEXT_ENV: "{nope"}
    assert run_conformance_client(refused_url, environ, err) == 1
    assert f"{CONTEXT_ENV} is not JSON" in err.getvalue()
