"""What the runner learns from the acp conversation besides matching it.

``Exchange`` follows every request on ``acp`` until its answer, in both
directions. That tells the runner two things:

- the agent's capabilities, from its answer to the scenario's first
  ``initialize`` request, which judge a scenario's capability needs
  ([TX-NEEDS-03]);
- whether the conversation is *settled*: every request answered, and so, by
  ACP's rule that nothing of a turn follows its ``session/prompt`` result,
  nothing more is due. Only then may the quiescence barrier stand in for waiting
  ([TX-BARRIER-01] to [TX-BARRIER-03]).

``match_stderr`` judges an ``expect_stderr`` frame ([TX-STDERR-01]).
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, MutableSequence, Sequence
from pathlib import Path

from .agent import AgentProcess, Pollution, StdoutClosed
from .jsonlex import JSON, JsonError, dumps, loads
from .match import MatchContext, match
from .report import failure

# [TX-BARRIER-01] an ACP extension request: names starting with "_" are extensions, and
# an agent that does not know one answers -32601 Method not found
BARRIER_METHOD = "_zeroclaw/barrier"
BARRIER_ID = "zeroclaw-conformance-barrier"
# [TX-BARRIER-02] after the barrier's answer, how long a straggler still has to show up
BARRIER_GRACE = 0.1
# [TX-BARRIER-03] after a barrier, how long an agent may take to exit on end of input
BARRIER_EXIT = 1.0


def barrier_request() -> JSON:
    return {"jsonrpc": "2.0", "id": BARRIER_ID, "method": BARRIER_METHOD}


def is_barrier_answer(value: JSON) -> bool:
    return isinstance(value, dict) and value.get("id") == BARRIER_ID and "method" not in value


def _key(value: JSON) -> str | None:
    if not isinstance(value, dict) or "id" not in value:
        return None
    ident = value["id"]
    return None if ident is None else dumps(ident)


class Exchange:
    """Open requests on ``acp`` and the agent's initialize answer."""

    def __init__(self) -> None:
        self.to_agent: dict[str, str] = {}  # id -> method, sent by the runner
        self.to_client: set[str] = set()  # ids of the agent's own requests
        self.initialize_id: str | None = None
        self.capabilities: JSON | None = None  # agentCapabilities, once answered

    def sent(self, data: bytes) -> None:
        """Follow one line written to the agent (a ``send``, or a ``send_raw`` that parses)."""
        try:
            value = loads(data.decode("utf-8").strip())
        except (UnicodeDecodeError, JsonError):
            return
        for item in value if isinstance(value, list) else [value]:
            self._sent_one(item)

    def _sent_one(self, value: JSON) -> None:
        key = _key(value)
        if key is None or not isinstance(value, dict):
            return
        if isinstance(value.get("method"), str):
            method = str(value["method"])
            self.to_agent[key] = method
            if method == "initialize" and self.initialize_id is None:
                self.initialize_id = key
        else:
            self.to_client.discard(key)

    def received(self, value: JSON) -> bool:
        """Follow one message from the agent; True when it is the initialize answer."""
        key = _key(value)
        if key is None or not isinstance(value, dict):
            return False
        if isinstance(value.get("method"), str):
            self.to_client.add(key)
            return False
        self.to_agent.pop(key, None)
        result = value.get("result")
        if key == self.initialize_id and self.capabilities is None and isinstance(result, dict):
            caps = result.get("agentCapabilities")
            self.capabilities = caps if isinstance(caps, dict) else {}
            return True
        return False

    def settled(self) -> bool:
        """[TX-BARRIER-01] no request waits for an answer, in either direction."""
        return not self.to_agent and not self.to_client


def match_stderr(
    patterns: Sequence[JSON], lines: Sequence[str], context: Callable[[], MatchContext], only: bool
) -> tuple[list[str], MatchContext | None]:
    """Match line patterns in order; return (unmatched patterns, context with bindings).

    Without ``only`` the patterns must match lines in order with any lines
    between them; with it they must match every line, one to one.
    """
    if only and len(patterns) != len(lines):
        return [dumps(p) for p in patterns], None
    position = 0
    ctx = context()
    for index, pattern in enumerate(patterns):
        while position < len(lines):
            trial = MatchContext(ctx.host, dict(ctx.bindings), ctx.ignore)
            line = lines[position]
            position += 1
            if match(pattern, line, trial) is None:
                ctx = trial
                break
            if only:
                return [dumps(p) for p in patterns[index:]], None
        else:
            return [dumps(p) for p in patterns[index:]], None
    return [], ctx


def await_barrier(
    iut: AgentProcess, history: MutableSequence[str], seconds: float, grace: float
) -> list[str]:
    """Write the barrier request and end of input; return what arrived before the answer.

    Closing stdin right behind the barrier lets an agent that exits on end of
    input do so at once, so its exit, not the grace, ends the wait. When
    nothing came early, wait up to the grace for a straggler or for stdout to
    end; either is put back for the quiescence check. An agent that has
    stopped reading, or ends stdout instead of answering, is left to that
    check too.

    Raises:
        Failed: no answer before the deadline, or a line that pollutes stdout.
    """
    text = dumps(barrier_request())
    history.append("--> (barrier) " + text)
    if not iut.write((text + "\n").encode("utf-8")):
        return []
    iut.close_input()
    deadline = time.monotonic() + seconds
    early: list[str] = []
    while True:
        try:
            event = iut.events.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            raise failure("timeout", None, "no answer to the quiescence barrier") from None
        if isinstance(event, Pollution):
            raise failure("stdout-pollution", None, f"{event.why}: {event.raw[:300]!r}")
        if isinstance(event, StdoutClosed):
            iut.events.put(event)
            return early
        history.append("<-- " + event.text)
        if is_barrier_answer(event.value):
            break
        early.append(event.text)
    if not early:
        try:
            straggler = iut.events.get(timeout=grace)
        except queue.Empty:
            return early
        iut.events.put(straggler)
    return early


def stderr_lines(path: Path, offset: int) -> list[str]:
    """The IUT's stderr since ``offset`` (its latest start), as text lines."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()
