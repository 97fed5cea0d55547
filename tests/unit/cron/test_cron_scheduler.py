"""`run_due()` and the Scheduler on the `cron` path, with a scripted model (policy.md §7.1)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from freezegun import freeze_time

from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import ConfigSnapshot, SchedulerConfig
from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.cron.scheduler import Scheduler, run_due
from zeroclaw_ref.store.cron import CronJob, CronStore

T0 = "2026-03-02T10:00:00Z"

CONFIG = """
[providers.s]
kind = "scripted"
script = "model.json"
record = "requests.jsonl"
[risk_profiles.p]
level = "supervised"
[runtime_profiles.r]
[agents.a]
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
[agents.off]
enabled = false
model_provider = "s"
risk_profile = "p"
runtime_profile = "r"
"""


def _config(tmp_path: Path, turns: list[JSONObject]) -> ConfigSnapshot:
    cfg = tmp_path / "cfg"
    cfg.mkdir(exist_ok=True)
    (cfg / "model.json").write_text(json.dumps({"turns": turns}))
    (cfg / "config.toml").write_text(CONFIG)
    return load_config(cfg, tmp_path / "data", {})


def _job(job_id: str, schedule: JSONObject, **fields: JSON) -> CronJob:
    values: dict[str, object] = {
        "agent": "a",
        "name": None,
        "prompt": "do it",
        "allowed_tools": None,
        "delete_after_run": False,
        "approved": False,
        "created_at": T0,
        "next_run_at": T0,
    }
    values.update(fields)
    return CronJob(id=job_id, schedule=schedule, **values)  # type: ignore[arg-type]


def _store(config: ConfigSnapshot, *jobs: CronJob) -> CronStore:
    store = CronStore.open(config.data_dir)
    for job in jobs:
        assert store.add(job)
    return store


def _run(config: ConfigSnapshot, when: str, agent: str | None = None) -> list[tuple[str, str]]:
    with freeze_time(when):
        return run_due(config, agent=agent, ids=SequentialIds())


def _requests(config: ConfigSnapshot) -> list[JSONObject]:
    path = config.config_dir / "requests.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


EVERY_MINUTE: JSONObject = {"kind": "every", "every_ms": 60000}


@pytest.mark.req("POL-PATH-19", "POL-PATH-20", "POL-PATH-17")
def test_a_due_job_runs_once_with_its_prompt_and_is_recorded(tmp_path: Path) -> None:
    config = _config(tmp_path, [{"chunks": ["all ", "done"]}])
    store = _store(
        config,
        _job("j1", EVERY_MINUTE),
        _job("later", EVERY_MINUTE, next_run_at="2026-03-02T10:00:01Z"),
    )
    assert _run(config, T0) == [("j1", "success")]
    [request] = _requests(config)
    assert request["messages"][-1] == {"role": "user", "content": "do it"}  # type: ignore[index]
    [run] = store.runs("j1")
    assert (run.success, run.output, run.started_at, run.finished_at) == (True, "all done", T0, T0)
    job = store.get("j1")
    assert job is not None
    assert (job.next_run_at, job.last_run_at, job.last_status) == (
        "2026-03-02T10:01:00Z",
        T0,
        "success",
    )


@pytest.mark.req("POL-PATH-19")
def test_a_claimed_job_never_runs_twice_and_missed_runs_are_not_replayed(tmp_path: Path) -> None:
    config = _config(tmp_path, [{"chunks": ["ok"]}])
    store = _store(config, _job("j1", EVERY_MINUTE))
    assert _run(config, T0) == [("j1", "success")]
    assert _run(config, T0) == []  # same instant: already advanced
    # an hour later: one run, and the next due time lies after now
    assert _run(config, "2026-03-02T11:00:30Z") == [("j1", "success")]
    job = store.get("j1")
    assert job is not None and job.next_run_at == "2026-03-02T11:01:00Z"
    assert len(store.runs("j1")) == 2


@pytest.mark.req("POL-PATH-19")
def test_claim_is_a_compare_and_set(tmp_path: Path) -> None:
    config = _config(tmp_path, [])
    store = _store(config, _job("j1", EVERY_MINUTE))
    assert store.claim("j1", T0, "2026-03-02T10:01:00Z")
    assert not store.claim("j1", T0, "2026-03-02T10:01:00Z")


@pytest.mark.req("POL-PATH-19")
def test_cron_jobs_advance_to_the_next_minute_after_now_in_their_zone(tmp_path: Path) -> None:
    config = _config(tmp_path, [{"chunks": ["ok"]}])
    schedule: JSONObject = {"kind": "cron", "expr": "0 9 * * *", "tz": "America/New_York"}
    store = _store(config, _job("c", schedule, next_run_at="2026-03-02T14:00:00Z"))
    assert _run(config, "2026-03-05T15:00:00Z") == [("c", "success")]
    job = store.get("c")
    assert job is not None and job.next_run_at == "2026-03-06T14:00:00Z"


@pytest.mark.req("POL-PATH-17", "POL-CRON-07", "POL-ACCESS-08")
def test_the_jobs_allowed_tools_are_the_strict_caller_allow_list(tmp_path: Path) -> None:
    call: JSONObject = {"id": "c1", "name": "shell", "arguments": {"command": "ls"}}
    config = _config(tmp_path, [{"tool_calls": [call]}, {"chunks": ["fine"]}])
    _store(config, _job("j1", EVERY_MINUTE, allowed_tools=("file_read",)))
    assert _run(config, T0) == [("j1", "success")]
    first, second = _requests(config)
    assert first["tools"] == ["file_read"]
    assert "Unknown tool: shell" in json.dumps(second["messages"])


@pytest.mark.req("POL-ACCESS-09", "POL-CRON-07")
def test_an_empty_allowed_tools_list_offers_no_tool(tmp_path: Path) -> None:
    config = _config(tmp_path, [{"chunks": ["ok"]}])
    _store(config, _job("j1", EVERY_MINUTE, allowed_tools=()))
    assert _run(config, T0) == [("j1", "success")]
    assert _requests(config)[0]["tools"] == []


@pytest.mark.req("POL-PATH-21", "POL-RESOLVE-07")
def test_an_unknown_or_disabled_owner_is_a_failure_and_nobody_runs(tmp_path: Path) -> None:
    config = _config(tmp_path, [{"chunks": ["never"]}])
    store = _store(
        config,
        _job("ghost", EVERY_MINUTE, agent="ghost"),
        _job("off", EVERY_MINUTE, agent="off", created_at="2026-03-02T10:00:01Z"),
    )
    assert _run(config, T0) == [("ghost", "failure"), ("off", "failure")]
    assert _requests(config) == []
    assert store.runs("ghost")[0].output == (
        "Unknown agent `ghost` — no [agents.ghost] entry configured"
    )
    assert store.runs("off")[0].output == "Agent `off` is not enabled for dispatch"


@pytest.mark.req("POL-PATH-20", "POL-CRON-08")
def test_delete_after_run_removes_the_job_only_after_success(tmp_path: Path) -> None:
    config = _config(tmp_path, [{"chunks": ["ok"]}])
    once: JSONObject = {"kind": "after", "after_seconds": 1}
    store = _store(
        config,
        _job("good", once, delete_after_run=True),
        _job("bad", once, delete_after_run=True, agent="ghost", created_at="2026-03-02T10:00:01Z"),
    )
    assert _run(config, T0) == [("good", "success"), ("bad", "failure")]
    assert store.get("good") is None
    bad = store.get("bad")
    assert bad is not None and bad.next_run_at is None and bad.last_status == "failure"
    assert [r.success for r in store.runs("good")] == [True]
    assert _run(config, "2026-03-03T00:00:00Z") == []


@pytest.mark.req("POL-PATH-20")
def test_run_output_is_cut_to_ten_thousand_characters(tmp_path: Path) -> None:
    config = _config(tmp_path, [{"chunks": ["x" * 12_000]}])
    store = _store(config, _job("j1", EVERY_MINUTE))
    assert _run(config, T0) == [("j1", "success")]
    assert store.runs("j1")[0].output == "x" * 10_000


@pytest.mark.req("POL-PATH-20")
def test_a_failed_turn_records_its_error(tmp_path: Path) -> None:
    config = _config(tmp_path, [{"error": "model down"}])
    store = _store(config, _job("j1", EVERY_MINUTE))
    assert _run(config, T0) == [("j1", "failure")]
    assert "model down" in store.runs("j1")[0].output


@pytest.mark.req("POL-PATH-18")
def test_run_due_for_one_agent_leaves_the_others_due(tmp_path: Path) -> None:
    config = _config(tmp_path, [{"chunks": ["ok"]}])
    store = _store(config, _job("mine", EVERY_MINUTE), _job("theirs", EVERY_MINUTE, agent="b"))
    assert _run(config, T0, agent="a") == [("mine", "success")]
    theirs = store.get("theirs")
    assert theirs is not None and theirs.next_run_at == T0


@pytest.mark.req("POL-PATH-18", "POL-CRON-01")
def test_a_scheduler_tick_runs_due_jobs_unless_disabled(tmp_path: Path) -> None:
    config = _config(tmp_path, [{"chunks": ["ok"]}])
    _store(config, _job("j1", EVERY_MINUTE))
    off = dataclasses.replace(config, scheduler=SchedulerConfig(enabled=False))
    with freeze_time(T0):
        assert Scheduler(lambda: off, 1).tick() == []
        assert Scheduler(lambda: config, 1, ids=SequentialIds()).tick() == [("j1", "success")]


@pytest.mark.req("POL-PATH-18")
def test_the_scheduler_thread_starts_and_stops_promptly(tmp_path: Path) -> None:
    config = _config(tmp_path, [])
    scheduler = Scheduler(lambda: config, 3600)
    scheduler.start()
    scheduler.stop(timeout=10)
    assert not scheduler._thread.is_alive()
