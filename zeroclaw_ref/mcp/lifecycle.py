"""The connection lifecycle of mcp.md §1.2 as a table (DESIGN §6).

```
CONNECTING --ok--> READY --transport failure--> BROKEN --recovery ok--> READY
     |                                            |
     +--fail--> (not registered)                  +--recovery fails after an outcome-unknown
                                                     failure--> POISONED
any state --close()--> CLOSED
```

A `(state, event)` pair missing from the table is a programming error (`LifecycleError`).
A failed first connect closes the connection, so "not registered" is `CLOSED` here.
"""

from __future__ import annotations

from enum import Enum


class State(Enum):
    CONNECTING = "connecting"
    READY = "ready"
    BROKEN = "broken"
    POISONED = "poisoned"
    CLOSED = "closed"


class Event(Enum):
    HANDSHAKE_OK = "handshake ok"
    TRANSPORT_FAILED = "transport failed"
    RECOVERED = "recovered"
    RECOVERY_FAILED = "recovery failed"
    RECOVERY_FAILED_LOSSY = "recovery failed after an outcome-unknown failure"
    CLOSE = "close"


class LifecycleError(RuntimeError):
    """A transition the table does not allow."""


# [MCP-LIFE-07] the only moves a connection makes.
TRANSITIONS: dict[tuple[State, Event], State] = {
    (State.CONNECTING, Event.HANDSHAKE_OK): State.READY,
    # a failure during the first handshake fails that handshake; the connect then closes
    (State.CONNECTING, Event.TRANSPORT_FAILED): State.CONNECTING,
    (State.READY, Event.TRANSPORT_FAILED): State.BROKEN,
    (State.BROKEN, Event.TRANSPORT_FAILED): State.BROKEN,
    (State.BROKEN, Event.RECOVERED): State.READY,
    (State.BROKEN, Event.RECOVERY_FAILED): State.BROKEN,
    (State.BROKEN, Event.RECOVERY_FAILED_LOSSY): State.POISONED,
    (State.POISONED, Event.TRANSPORT_FAILED): State.POISONED,
    (State.CLOSED, Event.TRANSPORT_FAILED): State.CLOSED,
    **{(state, Event.CLOSE): State.CLOSED for state in State},
}


def next_state(state: State, event: Event) -> State:
    """Look the move up in the table.

    Raises:
        LifecycleError: the pair is not in the table (a bug in the caller).
    """
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise LifecycleError(f"no MCP transition from {state.name} on {event.value}") from None
