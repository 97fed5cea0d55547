"""The scheduler tools `cron_add`, `cron_list` and `cron_remove` (policy.md §4.7).

Implements POL-CRON-01 to POL-CRON-12 on the calling agent's own jobs (DIV-12). Schedules are
checked by `tools/cron_schedule.py`; jobs live in the store of `store/cron.py`, opened for
each call, so tools of several executions never share a connection.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from zeroclaw_ref.core.clock import Clock, SystemClock, rfc3339
from zeroclaw_ref.core.ids import IdFactory, RandomIds
from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps
from zeroclaw_ref.policy.security import SecurityPolicy
from zeroclaw_ref.store.cron import CronJob, CronStore
from zeroclaw_ref.store.db import StoreError
from zeroclaw_ref.tools.base import Tool, ToolContext, ToolResult, ToolSettings, argument, missing
from zeroclaw_ref.tools.cron_schedule import ScheduleError, deletes_after_run, normalise

# [POL-CRON-01]
DISABLED_TEXT = "cron is disabled by config (scheduler.enabled=false)"

# The clock cron_add reads "now" from; tests may replace it (freezegun also controls it).
CLOCK: Clock = SystemClock()

_SCHEDULE_SCHEMA: JSONObject = {
    "type": "object",
    "description": (
        'One of {"kind":"cron","expr":"<min hour dom month dow>","tz":"<IANA zone>"}, '
        '{"kind":"at","at":"<RFC 3339 with offset>"}, {"kind":"after","after_seconds":N} '
        'or {"kind":"every","every_ms":N}.'
    ),
    "properties": {
        "kind": {"type": "string", "enum": ["cron", "at", "after", "every"]},
        "expr": {"type": "string"},
        "tz": {"type": "string"},
        "at": {"type": "string"},
        "after_seconds": {"type": "integer", "minimum": 1},
        "every_ms": {"type": "integer", "minimum": 1000},
    },
    "required": ["kind"],
}


def job_json(job: CronJob) -> JSONObject:
    """[POL-CRON-11] one job as `cron_list` shows it, keys in the specified order."""
    return {
        "id": job.id,
        "name": job.name,
        "schedule": job.schedule,
        "prompt": job.prompt,
        "allowed_tools": None if job.allowed_tools is None else list(job.allowed_tools),
        "delete_after_run": job.delete_after_run,
        "approved": job.approved,
        "next_run_at": job.next_run_at,
        "last_run_at": job.last_run_at,
        "last_status": job.last_status,
    }


def render_jobs(items: list[JSONObject]) -> str:
    """[POL-CRON-11] a JSON array with 2-space indentation, non-ASCII kept as is."""
    return json.dumps(items, indent=2, ensure_ascii=False)


def _with_store(settings: ToolSettings, action: Callable[[CronStore], ToolResult]) -> ToolResult:
    """Open the job store for one call; a store failure is a failed result, never a raise."""
    if not settings.scheduler_enabled:
        return ToolResult.fail(DISABLED_TEXT)  # [POL-CRON-01] before anything else
    try:
        store = CronStore.open(settings.data_dir)
    except StoreError as exc:
        return ToolResult.fail(f"Failed to open cron store: {exc}")
    try:
        return action(store)
    except StoreError as exc:
        return ToolResult.fail(f"Cron store error: {exc}")
    finally:
        store.close()


@dataclass(frozen=True, slots=True)
class _AddRequest:
    """The validated arguments of one `cron_add` call."""

    name: str | None
    schedule: JSONObject
    prompt: str
    allowed_tools: tuple[str, ...] | None
    delete_after_run: bool | None


def _parse_add(arguments: JSON) -> _AddRequest | ToolResult:
    """Validate everything but the schedule's content; a failed result names the problem."""
    job_type = argument(arguments, "job_type")
    if job_type is not None and job_type != "agent":
        shown = job_type if isinstance(job_type, str) else dumps(job_type)
        # [POL-CRON-05] only agent jobs exist here (DIV-12)
        return ToolResult.fail(
            f"job_type '{shown}' is not supported; schedule an agent job with a prompt instead"
        )
    schedule = argument(arguments, "schedule")
    if not isinstance(schedule, dict):
        return missing("schedule")
    prompt = argument(arguments, "prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return missing("prompt")  # [POL-CRON-05]
    name = argument(arguments, "name")
    if name is not None and not isinstance(name, str):
        return ToolResult.fail("'name' must be a string")
    allowed = argument(arguments, "allowed_tools")
    if allowed is not None and (
        not isinstance(allowed, list) or not all(isinstance(i, str) for i in allowed)
    ):
        return ToolResult.fail("'allowed_tools' must be an array of tool names")
    delete = argument(arguments, "delete_after_run")
    if delete is not None and not isinstance(delete, bool):
        return ToolResult.fail("'delete_after_run' must be a boolean")
    return _AddRequest(
        # Design: a blank name is no name, so it can neither collide nor be removed by.
        name=name if name and name.strip() else None,
        schedule=schedule,
        prompt=prompt,
        # [POL-CRON-07] kept exactly: absent stays None, [] stays an empty list
        allowed_tools=None if allowed is None else tuple(str(i) for i in allowed),
        delete_after_run=delete,
    )


@dataclass(frozen=True, slots=True)
class CronAddTool:
    """Schedule an agent job for the calling agent."""

    settings: ToolSettings
    ids: IdFactory = field(default_factory=RandomIds)
    name: ClassVar[str] = "cron_add"
    description: ClassVar[str] = (
        "Schedule a prompt to run later as this agent: at a time, after a delay, every N "
        "milliseconds, or on a five-field cron expression in an IANA time zone. Optional "
        "allowed_tools limits which tools each run may use."
    )
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {
            "schedule": _SCHEDULE_SCHEMA,
            "prompt": {"type": "string", "description": "The message each run starts with."},
            "name": {"type": "string", "description": "A unique name for this job."},
            "job_type": {"type": "string", "enum": ["agent"]},
            "allowed_tools": {"type": "array", "items": {"type": "string"}},
            "delete_after_run": {"type": "boolean"},
        },
        "required": ["schedule", "prompt"],
    }
    act: ClassVar[bool] = True

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        return _with_store(self.settings, lambda store: self._add(store, arguments, context))

    def _add(self, store: CronStore, arguments: JSON, context: ToolContext) -> ToolResult:
        request = _parse_add(arguments)
        if isinstance(request, ToolResult):
            return request
        now = CLOCK.now()
        try:
            schedule, first = normalise(request.schedule, now)
        except ScheduleError as exc:
            return ToolResult.fail(str(exc))  # [POL-CRON-03]
        delete = request.delete_after_run
        job = CronJob(
            id=self.ids.new("cron-job"),
            agent=self.settings.agent_alias,
            name=request.name,
            schedule=schedule,
            prompt=request.prompt,
            allowed_tools=request.allowed_tools,
            # [POL-CRON-08] one-shot schedules clean up after themselves by default
            delete_after_run=deletes_after_run(schedule) if delete is None else delete,
            # [POL-CRON-06] the runtime's flag (POL-APPROVE-12), kept for audit only; the
            # scheduler never reads it, so it grants nothing when the job runs.
            approved=context.approved,
            created_at=rfc3339(now),
            next_run_at=rfc3339(first),
        )
        if not store.add(job):
            return ToolResult.fail(f"A cron job named '{request.name}' already exists")
        # [POL-CRON-10]
        return ToolResult.ok(f"Created cron job {job.id} (next run {job.next_run_at})")


@dataclass(frozen=True, slots=True)
class CronListTool:
    """List the calling agent's jobs."""

    settings: ToolSettings
    name: ClassVar[str] = "cron_list"
    description: ClassVar[str] = "List this agent's scheduled jobs as JSON."
    parameters: ClassVar[JSONObject] = {"type": "object", "properties": {}}
    act: ClassVar[bool] = False

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        agent = self.settings.agent_alias
        # [POL-CRON-11] only the caller's own jobs (DIV-12)
        return _with_store(
            self.settings,
            lambda store: ToolResult.ok(render_jobs([job_json(j) for j in store.list_jobs(agent)])),
        )


@dataclass(frozen=True, slots=True)
class CronRemoveTool:
    """Remove one of the calling agent's jobs by id or name."""

    settings: ToolSettings
    name: ClassVar[str] = "cron_remove"
    description: ClassVar[str] = "Remove one of this agent's scheduled jobs, by job id or job name."
    parameters: ClassVar[JSONObject] = {
        "type": "object",
        "properties": {"job_id": {"type": "string", "description": "A job id or name."}},
        "required": ["job_id"],
    }
    act: ClassVar[bool] = True

    def execute(self, arguments: JSON, context: ToolContext) -> ToolResult:
        return _with_store(self.settings, lambda store: self._remove(store, arguments))

    def _remove(self, store: CronStore, arguments: JSON) -> ToolResult:
        key = argument(arguments, "job_id")
        if not isinstance(key, str) or not key.strip():
            return missing("job_id")
        removed = store.remove(self.settings.agent_alias, key)
        if removed is None:
            return ToolResult.fail(f"No cron job found: {key}")  # [POL-CRON-12]
        return ToolResult.ok(f"Removed cron job {removed}")


def tools(security: SecurityPolicy, settings: ToolSettings) -> list[Tool]:
    """The scheduler tools, in catalogue order (POL-ASSEMBLE-18)."""
    return [CronAddTool(settings), CronListTool(settings), CronRemoveTool(settings)]
