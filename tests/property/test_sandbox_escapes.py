"""Property: no shell command built from path tricks and glob forms brings a planted secret
back from a confined command (ZC-SBX-02, POL-SHELL-08).

The generator mixes the tricks the hostile tester used: `..` spelled by globs (`.?`, `.[.]`,
`[.][.]`), character classes, links in the workspace (to a file and to a directory outside),
and tools that read or recurse. The argument check (POL-SHELL-08) stops some of them, the
sandbox must stop the rest. The control proves the generator is strong enough to matter:
without the sandbox, it finds a command that leaks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from tests.conftest import require_peer
from zeroclaw_ref.config.model import AutonomyConfig, SandboxConfig
from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.sandbox import probe
from zeroclaw_ref.tools.shell import run_checked

SECRET = "PLANTED-SECRET-e1d7"
# A level-supervised profile as shipped, with the commands approved (allow-once).
PROFILE = AutonomyConfig(allowed_commands=("cat", "ls", "grep", "find", "head", "tail", "du",
                                           "wc", "sort", "python3"))  # fmt: skip

PARENT = st.sampled_from(["..", ".?", ".[.]", "[.][.]", ".*", "?.", "*."])
NAME = st.sampled_from(["secret.txt", "s*", "[s]ecret.txt", "[[:alpha:]]ecret.txt", "*", "?*"])
LOCAL = st.sampled_from(["link", "dirlink", "[[:alpha:]]ink", "l*", "d*", "*link", "."])
TOOL = st.sampled_from(["cat", "ls -R", "grep -R SECRET", "head -c 100", "tail -c 100", "find -L",
                        "du -aL", "wc -c", "sort", "ls -LR", "grep -rh PLANTED"])  # fmt: skip


@st.composite
def path_tricks(draw: st.DrawFn) -> str:
    hops = draw(st.lists(PARENT, min_size=0, max_size=3))
    head = draw(st.one_of(LOCAL, st.just("")))
    parts = [p for p in [head, *hops] if p]
    tail = draw(st.one_of(NAME, st.just("")))
    return "/".join([*parts, tail]) if tail else "/".join(parts) or "."


@st.composite
def commands(draw: st.DrawFn) -> str:
    paths = draw(st.lists(path_tricks(), min_size=1, max_size=3))
    return f"{draw(TOOL)} {' '.join(paths)}"


@dataclass(frozen=True)
class Planted:
    workspace: Path
    secret: Path


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Planted]:
    root = tmp_path_factory.mktemp("escapes")
    outside = root / "outside"
    workspace = outside / "ws"
    workspace.mkdir(parents=True)
    secret = outside / "secret.txt"
    secret.write_text(SECRET)
    (workspace / "link").symlink_to(secret)
    (workspace / "dirlink").symlink_to(outside)
    (workspace / "inside.txt").write_text("harmless")
    yield Planted(workspace, secret)


def _policy(planted: Planted, backend: str) -> SecurityPolicy:
    sandbox = SandboxConfig(backend=backend)
    return SecurityPolicy.build(PROFILE, planted.workspace, planted.workspace, sandbox)


def _leaks(policy: SecurityPolicy, command: str) -> bool:
    result = run_checked(policy, command, True, 20, CancelToken())
    return SECRET in (result.output or "") + (result.error or "")


@pytest.mark.req("ZC-SBX-02", "POL-SHELL-08")
@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=commands())
def test_no_generated_command_reads_the_secret(planted: Planted, command: str) -> None:
    require_peer("landlock")
    policy = _policy(planted, "landlock")
    assert probe.choose(policy.sandbox).backend == "landlock"
    assert not _leaks(policy, command), f"leaked through: {command}"


@pytest.mark.req("ZC-SBX-02")
def test_control_without_the_sandbox_the_generator_finds_a_leak(planted: Planted) -> None:
    policy = _policy(planted, "none")
    found = find(commands(), lambda c: _leaks(policy, c), settings=settings(max_examples=400))
    assert _leaks(policy, found)
