"""`zeroclaw_ref cron list | run-due` as a subprocess with a scripted model (POL-PATH-18)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zeroclaw_ref.store.cron import CronJob, CronStore

CONFIG = """
[providers.s]
kind = "scripted"
script = "model.json"
[risk_profiles.p]
level = "supervised"
[runtime_profiles.r]
[agents.a]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
"""
PAST = "2020-01-01T00:00:00Z"
FUTURE = "2999-01-01T00:00:00Z"


def _job(job_id: str, agent: str, next_run_at: str, created_at: str) -> CronJob:
    return CronJob(
        id=job_id,
        agent=agent,
        name=None,
        schedule={"kind": "every", "every_ms": 60000},
        prompt="go",
        allowed_tools=None,
        delete_after_run=False,
        approved=False,
        created_at=created_at,
        next_run_at=next_run_at,
    )


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "config.toml").write_text(CONFIG)
    (cfg / "model.json").write_text(json.dumps({"turns": [{"chunks": ["ok"]}]}))
    store = CronStore.open(cfg / "data")
    store.add(_job("j-a", "a", PAST, "2020-01-01T00:00:00Z"))
    store.add(_job("j-ghost", "ghost", PAST, "2020-01-01T00:00:01Z"))
    store.add(_job("j-later", "a", FUTURE, "2020-01-01T00:00:02Z"))
    store.close()
    return cfg


def _cli(cfg: Path, *args: str, scheduler: str = "") -> subprocess.CompletedProcess[str]:
    if scheduler:
        (cfg / "config.toml").write_text(CONFIG + scheduler)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZEROCLAW")}
    return subprocess.run(
        [sys.executable, "-m", "zeroclaw_ref", "--config-dir", str(cfg), "cron", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.req("POL-PATH-18", "POL-PATH-21")
def test_run_due_prints_one_line_per_run_and_exits_zero(cfg: Path) -> None:
    done = _cli(cfg, "run-due")
    assert (done.returncode, done.stdout) == (0, "j-a success\nj-ghost failure\n"), done.stderr
    again = _cli(cfg, "run-due")
    assert (again.returncode, again.stdout) == (0, "")


@pytest.mark.req("POL-PATH-18")
def test_run_due_for_one_agent_runs_only_its_jobs(cfg: Path) -> None:
    done = _cli(cfg, "run-due", "--agent", "ghost")
    assert (done.returncode, done.stdout) == (0, "j-ghost failure\n")


@pytest.mark.req("POL-CRON-11")
def test_list_prints_the_jobs_json(cfg: Path) -> None:
    mine = _cli(cfg, "list", "--agent", "a")
    assert mine.returncode == 0
    jobs = json.loads(mine.stdout)
    assert [j["id"] for j in jobs] == ["j-a", "j-later"] and "agent" not in jobs[0]
    everyone = json.loads(_cli(cfg, "list").stdout)
    assert [(j["agent"], j["id"]) for j in everyone] == [
        ("a", "j-a"),
        ("ghost", "j-ghost"),
        ("a", "j-later"),
    ]


@pytest.mark.req("POL-CRON-01")
def test_run_due_refuses_when_the_scheduler_is_disabled(cfg: Path) -> None:
    done = _cli(cfg, "run-due", scheduler="[scheduler]\nenabled = false\n")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "ERROR: cron is disabled by config (scheduler.enabled=false)\n"


@pytest.mark.req("CFG-LOAD-10")
def test_the_daemon_takes_the_configuration_as_it_is_on_disk_at_every_tick(
    cfg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cron daemon` is a long-running process: an edit reaches its next tick, a broken edit
    keeps the last good snapshot."""
    from zeroclaw_ref.cli import cron_cmd, main

    seen: list[object] = []

    def fake_daemon(source: object, tick_secs: int, clock: object, ids: object) -> int:
        seen.append(source)
        return 0

    monkeypatch.setattr(cron_cmd, "_daemon", fake_daemon)
    # main() installs the process's stderr handler (propagate off): not in a shared test run.
    monkeypatch.setattr(main.logsetup, "configure", lambda level=0: None)
    for name in [n for n in os.environ if n.startswith("ZEROCLAW")]:
        monkeypatch.delenv(name)
    assert main.main(["--config-dir", str(cfg), "cron", "daemon"]) == 0
    source = seen[0]
    assert callable(source)
    assert source().scheduler.enabled is True
    (cfg / "config.toml").write_text(CONFIG + "\n[scheduler]\nenabled = false\n")
    os.utime(cfg / "config.toml", (2_000_000_000, 2_000_000_000))
    assert source().scheduler.enabled is False
    (cfg / "config.toml").write_text(CONFIG + "\n[scheduler\n")
    os.utime(cfg / "config.toml", (2_000_000_100, 2_000_000_100))
    assert source().scheduler.enabled is False  # the last good snapshot
