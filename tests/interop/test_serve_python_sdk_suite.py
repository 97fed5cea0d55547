"""Every servable scenario played by the official ACP Python SDK client through `serve --suite`.

One coordinator, `serve --suite IDS --socket S --json R`, plays the scenarios of
`list --servable --json` one connection after another. The SDK client
(`tests/helpers/serve_sdk_client.py`) is configured with one agent command, `serve --connect S`
(here in its stdlib-only form `serve/relay.py S`), restarts it per scenario and takes each
scenario's `show --json` steps. The verdicts are the coordinator's JSON report, never the
driver's own view: every scenario must pass (issue 15: at least 150), except those needing a
capability SDK 0.12.1 cannot advertise (elicitation is unstable protocol there, and its model
drops session.notices/compaction), which must be not-applicable. A deliberately wrong
client must fail, with the frame named, so the suite can fail; a client without a capability
a scenario needs gets not-applicable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.helpers import serve_plans
from tests.helpers.serve_sdk_client import (
    FULL_CAPABILITIES,
    SDK_CANNOT_ADVERTISE,
    Outcome,
    advertisable,
    play,
    play_suite,
    unwritable,
)

pytestmark = pytest.mark.peer("acp-python-sdk")

MIN_PASSES = 150  # issue 15: at least 150 servable scenarios, all passing
IDLE_TIMEOUT = "10"  # the coordinator's bound on a silent client (a safety net)


def _play(acp: ModuleType, scenario: str, tmp_path: Path, **kw: Any) -> Outcome:
    return asyncio.run(play(acp, scenario, tmp_path, **kw))


@pytest.mark.req("TX-SERVE-03", "TX-SERVE-05", "TX-SERVE-06", "ZC-CLIENT-01", "ZC-SERVE-09")
def test_the_python_sdk_client_passes_every_servable_scenario_through_the_suite(
    require_peer: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    acp = require_peer("acp-python-sdk")
    ids = serve_plans.servable([])
    shows = serve_plans.show_many(ids)
    # ZC-SERVE-10: serve offers only what a typed client can write, so nothing is skipped
    unfit = [f"{s['scenario']}: {why}" for s in shows if (why := unwritable(acp, s))]
    assert not unfit, "servable, yet the SDK client cannot write it:\n" + "\n".join(unfit)
    with serve_plans.suite(tmp_path, ids, "sdk", IDLE_TIMEOUT) as coordinator:
        # the relay's stdlib-only form (CONTRACT.md "Serving"): `-m zeroclaw_ref.conformance
        # serve --connect` imports the whole oracle first, ~0.4 s per scenario on this path
        played = asyncio.run(play_suite(acp, shows, coordinator.relay, tmp_path / "plays"))
        report = coordinator.finish()
    # [ZC-SERVE-03] [ZC-CLIENT-33] exactly the scenarios needing what the SDK cannot advertise
    # are not-applicable, with the missing capability as reason; every other one must pass
    unable = {
        s["scenario"]: needs
        for s in shows
        if (needs := sorted(set(s.get("client_needs") or []) & set(SDK_CANNOT_ADVERTISE)))
    }
    assert not any(advertisable(acp, FULL_CAPABILITIES, n) for n in SDK_CANNOT_ADVERTISE)
    inapplicable = {
        r["id"]: str(r.get("reason")) for r in report.results if r["outcome"] == "not-applicable"
    }
    assert sorted(inapplicable) == sorted(unable), (inapplicable, unable)
    for scenario, needs in unable.items():
        assert any(n in inapplicable[scenario] for n in needs), (scenario, inapplicable[scenario])
    stuck = {o.scenario: o.problem for o in played if o.problem and o.scenario not in unable}
    assert [r["id"] for r in report.results] == sorted(ids), report.log[-2000:]
    failures = [
        f"{text}\ndriver: {stuck.get(text.split(':', 1)[0], 'took every step')}"
        for text in report.not_passed()
        if text.split(":", 1)[0] not in inapplicable  # those were held to `unable` above
    ]
    assert not failures, f"{len(failures)} of {len(ids)} did not pass:\n" + "\n\n".join(failures)
    assert report.outcomes()["pass"] == len(ids) - len(unable), report.outcomes()
    assert report.outcomes()["pass"] >= MIN_PASSES, report.outcomes()
    assert coordinator.returncode == 0, report.out[-2000:]
    assert not stuck, stuck  # every scenario passed, so the driver must have taken every step
    passes = report.outcomes()["pass"]
    print(f"python sdk client: {passes} passes of {len(ids)} servable, {len(unable)} n/a")


def test_client_scenarios_are_served() -> None:
    # issue 15: with the ~90 base-ACP scenarios, at least 150 servable scenarios in all
    servable = serve_plans.servable([])
    assert len(servable) >= MIN_PASSES
    assert sum("/client-" in s for s in servable) >= 110


@pytest.mark.req("ZC-CLIENT-16")
@pytest.mark.parametrize(
    "scenario", ["acp/client-fs/read-whole-file", "acp/client-terminal/echo-with-args"]
)
def test_a_client_without_the_capability_is_not_applicable(
    require_peer: Callable[[str], ModuleType], tmp_path: Path, scenario: str
) -> None:
    acp = require_peer("acp-python-sdk")
    bare = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    outcome = _play(acp, scenario, tmp_path, capabilities=bare)
    assert outcome.status == 0, outcome.report
    assert outcome.verdict == "NOT-APPLICABLE", outcome.report


@pytest.mark.req("TX-SERVE-06", "ZC-CLIENT-04", "ZC-SERVE-09")
def test_a_client_that_selects_another_option_fails_at_that_frame(
    require_peer: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    acp = require_peer("acp-python-sdk")

    def wrong(method: str, answer: Any) -> Any:
        assert method == "session/request_permission"
        return {"outcome": {"outcome": "selected", "optionId": "allow-always"}}

    scenario = "acp/client-permission/four-kinds-client-selects-allow-once"
    (shown,) = serve_plans.show_many([scenario])
    # through a suite of one, so the report the suite test prints for a failure is shown too
    with serve_plans.suite(tmp_path, [scenario], "wrong", idle_timeout="1") as coordinator:
        asyncio.run(play(acp, shown, tmp_path / "play", agent=coordinator.relay, wrong=wrong))
        report = coordinator.finish()
    assert coordinator.returncode == 1, report.out
    (result,) = report.results
    assert result["outcome"] == "fail" and result.get("pointer") == "/result/outcome/optionId"
    answer = next(s for s in shown["steps"] if s["method"] == "session/request_permission")
    assert result.get("frame") == answer["frame"], result
    (text,) = report.not_passed()
    assert text.startswith(scenario + ": fail"), text
    assert '"allow-always"' in text and "/result/outcome/optionId" in text, text
