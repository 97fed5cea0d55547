"""`cron_add`, `cron_list` and `cron_remove` against a real job store (policy.md §4.7)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from freezegun import freeze_time

from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.tools.base import ToolContext, ToolResult, ToolSettings
from zeroclaw_ref.tools.cron import CronAddTool, CronListTool, CronRemoveTool
from zeroclaw_ref.tools.cron_schedule import ScheduleError, next_cron_time, parse_cron

NOW = "2026-03-02T10:15:30Z"  # a Monday
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
DISABLED = "cron is disabled by config (scheduler.enabled=false)"
AT_FORMAT = "'at' must be an RFC 3339 timestamp with an explicit offset"


def _settings(tmp_path: Path, agent: str = "a", enabled: bool = True) -> ToolSettings:
    return ToolSettings(agent_alias=agent, data_dir=tmp_path, scheduler_enabled=enabled)


def _add(tmp_path: Path, args: JSON, agent: str = "a", approved: bool = False) -> ToolResult:
    with freeze_time(NOW):
        return CronAddTool(_settings(tmp_path, agent)).execute(
            args, ToolContext(cancel=CancelToken(), approved=approved)
        )


def _list(tmp_path: Path, agent: str = "a") -> list[dict[str, JSON]]:
    result = CronListTool(_settings(tmp_path, agent)).execute({}, ToolContext(CancelToken()))
    assert result.success
    parsed = json.loads(result.output)
    assert isinstance(parsed, list)
    return parsed


def _next(expr: str, tz: str = "UTC", now: str = NOW) -> str:
    moment = datetime.fromisoformat(now.replace("Z", "+00:00"))
    found = next_cron_time(parse_cron(expr), ZoneInfo(tz), moment)
    assert found is not None
    return found.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _created(result: ToolResult) -> tuple[str, str]:
    match = re.fullmatch(r"Created cron job (\S+) \(next run (\S+)\)", result.output)
    assert result.success and match is not None, result
    return match.group(1), match.group(2)


@pytest.mark.req("POL-CRON-04")
@pytest.mark.parametrize(
    ("expr", "tz", "expected"),
    [
        ("*/15 * * * *", "UTC", "2026-03-02T10:30:00Z"),
        ("* * * * *", "UTC", "2026-03-02T10:16:00Z"),
        ("5,10-12,50-59/5 * * * *", "UTC", "2026-03-02T10:50:00Z"),
        ("1-10/3 11 * * *", "UTC", "2026-03-02T11:01:00Z"),
        ("0 9 * * 1-5", "UTC", "2026-03-03T09:00:00Z"),
        # both day fields restricted: the 13th or a Friday, whichever comes first
        ("0 0 13 * 5", "UTC", "2026-03-06T00:00:00Z"),
        ("0 0 2,13 * 5", "UTC", "2026-03-06T00:00:00Z"),
        # only one day field restricted: it alone decides
        ("0 0 13 * *", "UTC", "2026-03-13T00:00:00Z"),
        ("0 0 * * 5", "UTC", "2026-03-06T00:00:00Z"),
        ("0 0 13 * 0-7", "UTC", "2026-03-13T00:00:00Z"),
        # Sunday is both 0 and 7
        ("0 12 * * 0", "UTC", "2026-03-08T12:00:00Z"),
        ("0 12 * * 7", "UTC", "2026-03-08T12:00:00Z"),
        ("0 0 1 1 *", "UTC", "2027-01-01T00:00:00Z"),
        ("0 0 29 2 *", "UTC", "2028-02-29T00:00:00Z"),
        # zones: 09:00 in New York is 14:00 UTC before the DST change
        ("0 9 * * *", "America/New_York", "2026-03-02T14:00:00Z"),
        ("0 9 * * *", "Asia/Tokyo", "2026-03-03T00:00:00Z"),
    ],
)
def test_cron_expressions_give_the_next_matching_minute(expr: str, tz: str, expected: str) -> None:
    assert _next(expr, tz) == expected


@pytest.mark.req("POL-CRON-04")
def test_a_wall_time_skipped_by_dst_runs_on_the_next_day_it_exists() -> None:
    # 2026-03-08 02:30 does not exist in New York; the next 02:30 is on 9 March (EDT).
    assert _next("30 2 * * *", "America/New_York", "2026-03-07T08:00:00Z") == (
        "2026-03-09T06:30:00Z"
    )


@pytest.mark.req("POL-CRON-04", "POL-CRON-03")
@pytest.mark.parametrize(
    "expr",
    [
        "* * * *",
        "* * * * * *",
        "60 * * * *",
        "* 24 * * *",
        "* * 0 * *",
        "* * * 13 *",
        "* * * * 8",
        "*/0 * * * *",
        "5/2 * * * *",
        "3-1 * * * *",
        "a * * * *",
        "1,,2 * * * *",
        "0 0 30 2 *",
    ],
)
def test_malformed_or_impossible_expressions_are_invalid(tmp_path: Path, expr: str) -> None:
    if expr != "0 0 30 2 *":  # well-formed, but no day ever matches
        with pytest.raises(ScheduleError):
            parse_cron(expr)
    result = _add(tmp_path, {"schedule": {"kind": "cron", "expr": expr}, "prompt": "p"})
    assert result.error == f"Invalid cron expression: {expr}"


@pytest.mark.req("POL-CRON-02", "POL-CRON-03", "POL-CRON-10", "POL-CRON-08")
@pytest.mark.parametrize(
    ("schedule", "next_run", "deletes"),
    [
        (
            {"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Paris"},
            "2026-03-03T08:00:00Z",
            False,
        ),
        ({"kind": "cron", "expr": "*/5 * * * *"}, "2026-03-02T10:20:00Z", False),
        ({"kind": "at", "at": "2026-03-02T12:00:00+01:00"}, "2026-03-02T11:00:00Z", True),
        ({"kind": "at", "at": "2026-03-02T11:00:00.5z"}, "2026-03-02T11:00:00Z", True),
        ({"kind": "after", "after_seconds": 90}, "2026-03-02T10:17:00Z", True),
        ({"kind": "every", "every_ms": 60000}, "2026-03-02T10:16:30Z", False),
    ],
)
def test_each_schedule_kind_reports_its_first_run_and_delete_default(
    tmp_path: Path, schedule: dict[str, JSON], next_run: str, deletes: bool
) -> None:
    job_id, shown = _created(_add(tmp_path, {"schedule": schedule, "prompt": "p"}))
    assert UUID4.match(job_id) and shown == next_run
    [job] = _list(tmp_path)
    assert job["next_run_at"] == next_run and job["delete_after_run"] is deletes


@pytest.mark.req("POL-CRON-03")
@pytest.mark.parametrize(
    ("schedule", "text"),
    [
        ({"kind": "cron", "expr": "1 * * * *", "tz": "Mars/X"}, "Unknown time zone: Mars/X"),
        ({"kind": "at", "at": "2026-03-02T12:00:00"}, AT_FORMAT),
        ({"kind": "at", "at": "tomorrow"}, AT_FORMAT),
        ({"kind": "at", "at": 5}, AT_FORMAT),
        ({"kind": "at", "at": "2026-03-02T10:00:00Z"}, "'at' is in the past"),
        ({"kind": "after", "after_seconds": 0}, "after_seconds must be >= 1"),
        ({"kind": "after", "after_seconds": 1.5}, "after_seconds must be >= 1"),
        ({"kind": "after"}, "after_seconds must be >= 1"),
        ({"kind": "every", "every_ms": 999}, "every_ms must be >= 1000"),
        ({"kind": "every", "every_ms": True}, "every_ms must be >= 1000"),
        ({"kind": "weekly"}, "Unknown schedule kind: weekly"),
    ],
)  # fmt: skip
def test_invalid_schedules_fail_with_their_texts(
    tmp_path: Path, schedule: dict[str, JSON], text: str
) -> None:
    assert _add(tmp_path, {"schedule": schedule, "prompt": "p"}).error == text
    assert _list(tmp_path) == []


@pytest.mark.req("POL-CRON-05")
def test_only_agent_jobs_with_a_prompt_are_accepted(tmp_path: Path) -> None:
    schedule = {"kind": "after", "after_seconds": 5}
    assert _add(tmp_path, {"schedule": schedule, "job_type": "shell", "prompt": "p"}).error == (
        "job_type 'shell' is not supported; schedule an agent job with a prompt instead"
    )
    assert _add(tmp_path, {"schedule": schedule}).error == "Missing 'prompt' parameter"
    assert _add(tmp_path, {"schedule": schedule, "prompt": "  "}).error == (
        "Missing 'prompt' parameter"
    )
    assert _add(tmp_path, {"schedule": schedule, "job_type": "agent", "prompt": "p"}).success


@pytest.mark.req("POL-CRON-06", "POL-CRON-07", "POL-CRON-08")
def test_approved_allowed_tools_and_delete_flag_are_stored_as_given(tmp_path: Path) -> None:
    every = {"kind": "every", "every_ms": 1000}
    _add(tmp_path, {"schedule": every, "prompt": "1", "allowed_tools": []}, approved=True)
    _add(tmp_path, {"schedule": every, "prompt": "2", "approved": True})
    _add(
        tmp_path,
        {"schedule": {"kind": "at", "at": "2030-01-01T00:00:00Z"}, "prompt": "3",
         "allowed_tools": ["file_read", "x__y"], "delete_after_run": False},
    )  # fmt: skip
    jobs = sorted(_list(tmp_path), key=lambda j: str(j["prompt"]))
    assert [j["allowed_tools"] for j in jobs] == [[], None, ["file_read", "x__y"]]
    # the model's own `approved` never counts: only the runtime flag in the context does
    assert [j["approved"] for j in jobs] == [True, False, False]
    assert [j["delete_after_run"] for j in jobs] == [False, False, False]


@pytest.mark.req("POL-CRON-09")
def test_names_are_unique_per_agent_ignoring_case(tmp_path: Path) -> None:
    schedule = {"kind": "every", "every_ms": 5000}
    assert _add(tmp_path, {"schedule": schedule, "prompt": "p", "name": "Daily"}).success
    assert _add(tmp_path, {"schedule": schedule, "prompt": "p", "name": "dAILY"}).error == (
        "A cron job named 'dAILY' already exists"
    )
    assert _add(tmp_path, {"schedule": schedule, "prompt": "p", "name": "daily"}, agent="b").success


@pytest.mark.req("POL-CRON-11", "DIV-12")
def test_list_shows_only_the_callers_jobs_as_indented_json(tmp_path: Path) -> None:
    job_id, _ = _created(
        _add(tmp_path, {"schedule": {"kind": "cron", "expr": "0 9 * * *"}, "prompt": "hi",
                        "name": "n"})
    )  # fmt: skip
    _add(tmp_path, {"schedule": {"kind": "every", "every_ms": 1000}, "prompt": "x"}, agent="b")
    result = CronListTool(_settings(tmp_path)).execute({}, ToolContext(CancelToken()))
    assert result.output == (
        "[\n"
        "  {\n"
        f'    "id": "{job_id}",\n'
        '    "name": "n",\n'
        '    "schedule": {\n'
        '      "kind": "cron",\n'
        '      "expr": "0 9 * * *",\n'
        '      "tz": "UTC"\n'
        "    },\n"
        '    "prompt": "hi",\n'
        '    "allowed_tools": null,\n'
        '    "delete_after_run": false,\n'
        '    "approved": false,\n'
        '    "next_run_at": "2026-03-03T09:00:00Z",\n'
        '    "last_run_at": null,\n'
        '    "last_status": null\n'
        "  }\n"
        "]"
    )
    assert CronListTool(_settings(tmp_path, "c")).execute(
        {}, ToolContext(CancelToken())
    ).output == ("[]")


@pytest.mark.req("POL-CRON-11")
def test_list_orders_by_creation_time_then_id(tmp_path: Path) -> None:
    schedule = {"kind": "every", "every_ms": 1000}
    with freeze_time("2026-03-02T10:00:00Z"):
        late = CronAddTool(_settings(tmp_path)).execute(
            {"schedule": schedule, "prompt": "first"}, ToolContext(CancelToken())
        )
    first, _ = _created(late)
    ids = sorted(_created(_add(tmp_path, {"schedule": schedule, "prompt": "p"}))[0] for _ in "ab")
    assert [j["id"] for j in _list(tmp_path)] == [first, *ids]


@pytest.mark.req("POL-CRON-12")
def test_remove_by_id_or_name_among_the_callers_jobs(tmp_path: Path) -> None:
    schedule = {"kind": "every", "every_ms": 1000}
    one, _ = _created(_add(tmp_path, {"schedule": schedule, "prompt": "p"}))
    two, _ = _created(_add(tmp_path, {"schedule": schedule, "prompt": "p", "name": "Nightly"}))
    other, _ = _created(_add(tmp_path, {"schedule": schedule, "prompt": "p"}, agent="b"))
    remove = CronRemoveTool(_settings(tmp_path))
    ctx = ToolContext(CancelToken())
    assert remove.execute({"job_id": other}, ctx).error == f"No cron job found: {other}"
    assert remove.execute({"job_id": one}, ctx).output == f"Removed cron job {one}"
    assert remove.execute({"job_id": "NIGHTLY"}, ctx).output == f"Removed cron job {two}"
    assert remove.execute({"job_id": "nightly"}, ctx).error == "No cron job found: nightly"
    assert remove.execute({}, ctx).error == "Missing 'job_id' parameter"
    assert _list(tmp_path) == [] and [j["id"] for j in _list(tmp_path, "b")] == [other]


@pytest.mark.req("POL-CRON-01")
def test_every_tool_fails_when_the_scheduler_is_disabled(tmp_path: Path) -> None:
    settings = _settings(tmp_path, enabled=False)
    ctx = ToolContext(CancelToken())
    args: JSON = {"schedule": {"kind": "after", "after_seconds": 5}, "prompt": "p"}
    for tool in (CronAddTool(settings), CronListTool(settings), CronRemoveTool(settings)):
        assert tool.execute(args, ctx).error == DISABLED
    assert not (tmp_path / "cron").exists()
