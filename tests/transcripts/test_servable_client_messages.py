"""ZC-SERVE-10: every scenario offered to real clients asks them only for messages a
conformant client can write, as the pinned ACP schema judges them.

The rule in serve/rules.py is static (no schema at serve time: the oracle is stdlib-only);
this test is the schema's side of it. It walks each servable scenario in order, feeding the
scripted agent's messages and the client's messages to one schema ``Conversation`` (so a
response is checked against the method it answers), with placeholders replaced by values of
their type. A scenario whose client messages break the schema must carry the tag
``malformed-client-input`` (which makes it unservable), so a new malformed scenario cannot
slip into what editors are judged by.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from zeroclaw_ref.conformance.core.jsonlex import JSON
from zeroclaw_ref.conformance.core.placeholders import PlaceholderError, parse
from zeroclaw_ref.conformance.core.schema import validator
from zeroclaw_ref.conformance.core.transcript import Scenario, load
from zeroclaw_ref.conformance.serve.rules import MALFORMED_TAG, malformed_problems
from zeroclaw_ref.conformance.serve.suite import servable_scenarios

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SERVABLE, _ERRORS = servable_scenarios(FIXTURES)
# A value of each placeholder type that the schema accepts wherever that type may stand.
TYPED: dict[str | None, JSON] = {
    "int": 1,
    "number": 1,
    "bool": False,
    "uuid": "00000000-0000-4000-8000-000000000001",
    "rfc3339": "2026-01-01T00:00:00Z",
    "path": "/ws/file",
    "base64": "",
    "sha256": "0" * 64,
}


def concrete(value: JSON) -> JSON:
    """``value`` with every placeholder replaced by a value of its type."""
    if isinstance(value, dict):
        return {k: concrete(v) for k, v in value.items()}
    if isinstance(value, list):
        return [concrete(v) for v in value]
    if not isinstance(value, str):
        return value
    try:
        template = parse(value)
    except PlaceholderError:
        return value
    whole = template.whole
    if whole is not None:
        if whole.name == "WORKSPACE":
            return "/ws"
        return TYPED.get(whole.type, "x")
    if not template.placeholders:
        return value
    return "/ws/x" if value.startswith("${") else "x"


def client_problems(sc: Scenario) -> list[str]:
    judge = validator(FIXTURES, required=True)
    assert judge is not None
    talk = judge.conversation()
    found: list[str] = []
    for frame in sc.frames:
        if frame.verb == "expect":
            talk.received(concrete(frame.value))
        elif frame.verb == "expect_unordered" and isinstance(frame.value, list):
            for value in frame.value:
                talk.received(concrete(value))
        elif frame.verb == "send":
            found += [f"line {frame.line}: {p}" for p in talk.sent(concrete(frame.value))]
    return found


def test_the_corpus_offers_real_clients_enough_scenarios() -> None:
    assert not _ERRORS
    assert len(SERVABLE) >= 150  # issue 15


@pytest.mark.req("ZC-SERVE-10")
@pytest.mark.parametrize("sc", SERVABLE, ids=[sc.id for sc in SERVABLE])
def test_a_servable_scenario_asks_only_for_schema_valid_client_messages(sc: Scenario) -> None:
    assert client_problems(sc) == [], f"{sc.id}: tag it {MALFORMED_TAG} or fix its send frames"


@pytest.mark.req("ZC-SERVE-10")
def test_malformed_scenarios_are_not_servable() -> None:
    """The three shapes the rule refuses, each in a real corpus scenario."""
    for scenario, why in (
        ("acp/base-transport/batch-array-refused", "not a batch or a scalar"),
        ("acp/base-transport/response-with-unknown-id-ignored", "answers only requests"),
        ("acp/base-session/prompt-not-an-array", f"tagged {MALFORMED_TAG}"),
    ):
        sc = load(FIXTURES / f"{scenario}.jsonl", FIXTURES)
        problems = malformed_problems(sc)
        assert any(why in p.message for p in problems), (scenario, problems)
        assert all(s.id != sc.id for s in SERVABLE)
