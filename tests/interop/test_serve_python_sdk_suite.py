"""Every servable scenario played by the official ACP Python SDK client (issue 15).

`tests/helpers/serve_sdk_client.py` drives the SDK's client through a scenario from
`show --json` against `serve SCENARIO`; serve's exit status and report are the verdict.
A scenario the SDK client cannot play faithfully (it would have to write a batch, a
schema-invalid request, or an answer to a request it never got) is not-applicable, with
that reason; every other one must pass. A deliberately wrong client must fail, with the
frame named, so the suite can fail.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.helpers.serve_sdk_client import Outcome, play, servable_ids

pytestmark = pytest.mark.peer("acp-python-sdk")

SERVABLE = servable_ids()


def _play(acp: ModuleType, scenario: str, tmp_path: Path, **kw: Any) -> Outcome:
    return asyncio.run(play(acp, scenario, tmp_path, **kw))


@pytest.mark.req("TX-SERVE-03", "TX-SERVE-05", "TX-SERVE-06", "ZC-CLIENT-01")
@pytest.mark.parametrize("scenario", SERVABLE)
def test_the_python_sdk_client_passes(
    require_peer: Callable[[str], ModuleType], tmp_path: Path, scenario: str
) -> None:
    acp = require_peer("acp-python-sdk")
    outcome = _play(acp, scenario, tmp_path)
    if outcome.verdict == "N/A":
        assert "/client-" not in scenario, f"a client scenario must be playable: {outcome.problem}"
        pytest.skip(f"not applicable to the SDK client: {outcome.problem}")
    assert outcome.status == 0, f"{outcome.problem}\n{outcome.report}"
    assert outcome.verdict in ("PASS", "NOT-APPLICABLE"), outcome.report


def test_client_scenarios_are_served() -> None:
    # issue 15: with the ~90 base-ACP scenarios, at least 150 servable scenarios in all
    assert len(SERVABLE) >= 150
    assert sum("/client-" in s for s in SERVABLE) >= 110


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


@pytest.mark.req("TX-SERVE-06", "ZC-CLIENT-04")
def test_a_client_that_selects_another_option_fails_at_that_frame(
    require_peer: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    acp = require_peer("acp-python-sdk")

    def wrong(method: str, answer: Any) -> Any:
        assert method == "session/request_permission"
        return {"outcome": {"outcome": "selected", "optionId": "allow-always"}}

    scenario = "acp/client-permission/four-kinds-client-selects-allow-once"
    outcome = _play(acp, scenario, tmp_path, idle_timeout="1", wrong=wrong)
    assert outcome.status == 1, outcome.report
    assert outcome.verdict == "FAIL", outcome.report
    assert "/result/outcome/optionId" in outcome.report, outcome.report
