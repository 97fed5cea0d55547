"""Every (state, event) pair of the session lifecycle table (DESIGN §6, §11.2)."""

from __future__ import annotations

import itertools

import pytest

from zeroclaw_ref.acp.session import TRANSITIONS, Event, State

EXPECTED = {
    (State.IDLE, Event.PROMPT): State.BUSY,
    (State.BUSY, Event.TURN_ENDED): State.IDLE,
    (State.IDLE, Event.DRAIN): State.DRAINING,
    (State.BUSY, Event.DRAIN): State.DRAINING,
    (State.DRAINING, Event.TURN_ENDED): State.DRAINING,
    (State.DRAINING, Event.WORKER_DONE): State.GONE,
}


@pytest.mark.req("ACP-PROMPT-03", "ACP-PROMPT-04", "ACP-STOP-02")
@pytest.mark.parametrize(("state", "event"), list(itertools.product(State, Event)))
def test_every_pair_is_either_a_listed_transition_or_forbidden(state: State, event: Event) -> None:
    assert TRANSITIONS.get((state, event)) == EXPECTED.get((state, event))


def test_a_busy_or_draining_session_never_accepts_a_second_prompt() -> None:
    assert (State.BUSY, Event.PROMPT) not in TRANSITIONS
    assert (State.DRAINING, Event.PROMPT) not in TRANSITIONS
