"""CPU placement of the stdio server (core/affinity.py): the server's threads share one CPU
and run SCHED_BATCH, while every process it spawns gets the CPUs and policy it started with.

Pinning changes the calling thread, so the unit checks run in a fresh interpreter, never in
the pytest process; the end-to-end check drives a real `python -m zeroclaw_ref acp`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers.acp_client import AcpProcess
from zeroclaw_ref.core import affinity

LINUX_AFFINITY = hasattr(os, "sched_getaffinity") and Path("/proc/self/status").exists()
pytestmark = pytest.mark.skipif(
    not LINUX_AFFINITY or len(os.sched_getaffinity(0)) < 2,
    reason="needs Linux thread affinity and at least two usable CPUs",
)


def _status_cpus(status: str) -> set[int]:
    """The CPU set of a /proc/.../status text (`Cpus_allowed_list: 0-3,6`)."""
    line = next(x for x in status.splitlines() if x.startswith("Cpus_allowed_list:"))
    cpus: set[int] = set()
    for part in line.split(":", 1)[1].strip().split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


PROBE = textwrap.dedent(
    """
    import json, os, subprocess, threading
    from zeroclaw_ref.core import affinity

    start = sorted(os.sched_getaffinity(0))
    cpu = affinity.pin_current_thread()
    seen = {}

    def worker():
        seen["thread_cpus"] = sorted(os.sched_getaffinity(0))
        seen["thread_policy"] = os.sched_getscheduler(0)
        inside = threading.Event(); done = threading.Event()

        def other():  # another pinned thread, observed while `worker` is unpinned
            inside.wait(5)
            seen["other_during"] = sorted(os.sched_getaffinity(0))
            done.set()

        threading.Thread(target=other).start()
        with affinity.unpinned():
            inside.set(); done.wait(5)
            child = subprocess.run(
                ["sh", "-c", "grep Cpus_allowed_list /proc/self/status; "
                 "grep -m1 '^policy' /proc/self/sched"],
                capture_output=True, text=True, check=True)
        seen["child"] = child.stdout
        seen["after_cpus"] = sorted(os.sched_getaffinity(0))
        seen["after_policy"] = os.sched_getscheduler(0)

    t = threading.Thread(target=worker); t.start(); t.join()
    print(json.dumps({"start": start, "cpu": cpu, "main": sorted(os.sched_getaffinity(0)),
                      "batch": os.SCHED_BATCH, "other": os.SCHED_OTHER, **seen}))
    """
)


def _probe() -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=30, check=True
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_pinning_covers_later_threads_and_unpinned_restores_only_the_spawning_thread() -> None:
    seen = _probe()
    start, cpu = seen["start"], seen["cpu"]
    assert isinstance(start, list) and cpu in start
    # The main thread and every thread created after it share the one CPU, as batch threads.
    assert seen["main"] == [cpu]
    assert seen["thread_cpus"] == [cpu]
    assert seen["thread_policy"] == seen["batch"]
    # While one thread spawns, the others stay pinned...
    assert seen["other_during"] == [cpu]
    # ...and the child gets every CPU the process started with, and the normal policy.
    child = str(seen["child"])
    assert sorted(_status_cpus(child)) == start
    policy = next(x for x in child.splitlines() if x.startswith("policy"))
    assert int(policy.split(":")[1]) == seen["other"]
    # Afterwards the spawning thread is pinned and batch again.
    assert seen["after_cpus"] == [cpu]
    assert seen["after_policy"] == seen["batch"]


FAILING_CALLS = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from zeroclaw_ref.core import affinity

    cpu = affinity.pin_current_thread()
    real = os.sched_setaffinity
    fail_on = {int(n) for n in sys.argv[1].split(",")}
    calls = []

    def flaky(pid, mask):
        calls.append(sorted(mask))
        if len(calls) in fail_on:
            raise OSError(22, "Invalid argument")
        real(pid, mask)

    os.sched_setaffinity = flaky
    with affinity.unpinned():
        child = subprocess.Popen(["sh", "-c", "exit 7"])
    os.sched_setaffinity = real
    print(json.dumps({"cpu": cpu, "status": child.wait(10), "calls": calls,
                      "after": sorted(os.sched_getaffinity(0))}))
    """
)


@pytest.mark.parametrize(("fail_on", "after"), [("1", "pinned"), ("2", "wide")])
def test_a_failing_placement_call_never_stops_or_hides_a_spawn(fail_on: str, after: str) -> None:
    """Call 1 widens before the spawn, call 2 restores after it: whichever fails, the child
    starts and its handle reaches the caller (its timeout and kill depend on that)."""
    done = subprocess.run(
        [sys.executable, "-c", FAILING_CALLS, fail_on],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr  # no exception escaped unpinned()
    seen = json.loads(done.stdout)
    assert seen["status"] == 7  # the child ran and was waited for
    start = sorted(os.sched_getaffinity(0))
    expected = [seen["cpu"]] if after == "pinned" else start
    assert seen["after"] == expected


OUTSIDE_CHANGE = textwrap.dedent(
    """
    import json, os, subprocess
    from zeroclaw_ref.core import affinity

    cpu = affinity.pin_current_thread()
    other = max(c for c in os.sched_getaffinity(0) | affinity.inherited_cpus() if c != cpu)
    os.sched_setaffinity(0, {other})  # what `taskset -a -p` does to a running server
    with affinity.unpinned():
        child = subprocess.run(["grep", "Cpus_allowed_list", "/proc/self/status"],
                               capture_output=True, text=True, check=True).stdout
    print(json.dumps({"other": other, "child": child}))
    """
)


def test_an_outside_affinity_change_reaches_children_unwidened() -> None:
    done = subprocess.run(
        [sys.executable, "-c", OUTSIDE_CHANGE],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    seen = json.loads(done.stdout)
    assert _status_cpus(seen["child"]) == {seen["other"]}


def test_unpinned_is_a_no_op_when_nothing_was_pinned() -> None:
    affinity.reset_for_tests()
    before = os.sched_getaffinity(0)
    with affinity.unpinned():
        assert os.sched_getaffinity(0) == before
    assert os.sched_getaffinity(0) == before
    assert affinity.inherited_cpus() is None


def test_the_environment_can_turn_pinning_off() -> None:
    assert affinity.pin_wanted({})
    assert affinity.pin_wanted({affinity.PIN_ENV: "1"})
    assert not affinity.pin_wanted({affinity.PIN_ENV: "0"})
    assert not affinity.pin_wanted({affinity.PIN_ENV: " 0 "})


CONFIG = (
    '[providers.demo]\nkind = "demo"\n'
    '[risk_profiles.r]\nlevel = "full"\nallowed_commands = ["sh"]\n[runtime_profiles.t]\n'
    '[agents.default]\nmodel_provider = "demo"\nrisk_profile = "r"\nruntime_profile = "t"\n'
)


def _server_cpus(pid: int) -> list[set[int]]:
    tasks = Path(f"/proc/{pid}/task")
    return [_status_cpus((t / "status").read_text()) for t in tasks.iterdir()]


@pytest.mark.parametrize("pin_env", ["", "0"], ids=["pinned", "ZEROCLAW_REF_ACP_PIN=0"])
def test_the_acp_server_is_pinned_but_its_shell_commands_are_not(
    tmp_path: Path, pin_env: str
) -> None:
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text(CONFIG)
    work = tmp_path / "ws"
    work.mkdir()
    # A script, because the shell policy refuses /proc paths on the command line itself.
    (work / "cpus.sh").write_text("grep Cpus_allowed_list /proc/self/status\n")
    start = os.sched_getaffinity(0)
    env = {affinity.PIN_ENV: pin_env} if pin_env else {}
    agent = AcpProcess(config_dir, env=env)
    try:
        agent.request(1, "initialize", {"protocolVersion": 1})
        agent.response(1)
        agent.request(2, "session/new", {"cwd": str(work), "mcpServers": []})
        created = agent.response(2)
        assert "result" in created, created
        sid = created["result"]["sessionId"]
        updates: list[dict[str, object]] = []
        agent.request(
            3,
            "session/prompt",
            {"sessionId": sid, "prompt": "run: sh cpus.sh"},
        )
        answer = agent.response(3, collect=updates)
        assert answer["result"]["stopReason"] == "end_turn", answer
        outputs = [
            u["params"]["update"].get("rawOutput")  # type: ignore[index, union-attr]
            for u in updates
            if u.get("method") == "session/update"
        ]
        shell = next(str(o) for o in outputs if o and "Cpus_allowed_list" in str(o))
        assert _status_cpus(shell) == start  # the command ran on every CPU
        threads = _server_cpus(agent.proc.pid)
        assert len(threads) >= 3  # reader, writer, session worker at least
        if pin_env == "0":
            assert all(cpus == start for cpus in threads)
        else:
            (cpu,) = threads[0]
            assert all(cpus == {cpu} for cpus in threads)
    finally:
        assert agent.close_input() == 0
