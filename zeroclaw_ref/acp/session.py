"""One ACP session: its worker thread, inbox, turn slot and lifecycle (acp.md §4, §7).

Lifecycle (a pair missing from the table is a bug, LocalProtocolError):

        prompt accepted                      stop / close / reap / shutdown
    IDLE ───────────────▶ BUSY      IDLE, BUSY ─────────────────────────────▶ DRAINING
      ▲──── turn ended ────┘          DRAINING ──── worker finished ────────▶ GONE

The reader thread takes the turn slot at acceptance (ACP-PROMPT-02) and only enqueues jobs;
the worker runs turns and the completion of stop/close, in inbox order, so a stop requested
during a turn is answered after that turn's result (ACP-STOP-03) without any cross-thread
ordering beyond the FIFO writer.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Protocol

from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.clock import Clock
from zeroclaw_ref.core.ids import IdFactory, RandomIds
from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps, loads
from zeroclaw_ref.core.scrub import clean_output
from zeroclaw_ref.engine.events import Cancelled, Completed, Failed, FailureKind, TurnOutcome
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.history import TRIM_REASON, trim
from zeroclaw_ref.engine.turn import TurnEngine
from zeroclaw_ref.rpc.endpoint import Call
from zeroclaw_ref.store.db import StoreError
from zeroclaw_ref.wire import acp as wire
from zeroclaw_ref.wire.errors import LocalProtocolError, RpcError

from .project import CANCEL_MARKER, TurnProjector

log = logging.getLogger(__name__)


class State(Enum):
    IDLE = "idle"
    BUSY = "busy"
    DRAINING = "draining"
    GONE = "gone"


class Event(Enum):
    PROMPT = "prompt accepted"
    TURN_ENDED = "turn ended"
    DRAIN = "stop, close, reap or shutdown"
    WORKER_DONE = "worker finished"


TRANSITIONS: dict[tuple[State, Event], State] = {
    (State.IDLE, Event.PROMPT): State.BUSY,
    (State.BUSY, Event.TURN_ENDED): State.IDLE,
    (State.IDLE, Event.DRAIN): State.DRAINING,
    (State.BUSY, Event.DRAIN): State.DRAINING,
    (State.DRAINING, Event.TURN_ENDED): State.DRAINING,
    (State.DRAINING, Event.WORKER_DONE): State.GONE,
}

# acp.md Table 4-3
_FAILURE_TEXT = {
    FailureKind.INVALID_COMPLETION: "The model provider returned an invalid semantic completion.",
    FailureKind.PROVIDER_TOOLS_WITHOUT_ANSWER: (
        "The model provider ended after provider-executed tools without a final response."
    ),
}


def failure_message(outcome: Failed) -> str:
    """The −32603 message of a failed turn (acp.md Table 4-3), credential-scrubbed."""
    fixed = _FAILURE_TEXT.get(outcome.kind)
    if fixed is not None:
        return fixed
    if outcome.kind is FailureKind.PANIC:
        return f"Agent task panicked: {clean_output(outcome.diagnostic)}"
    return f"Agent turn failed: {clean_output(outcome.diagnostic)}"


@dataclass(frozen=True, slots=True)
class _Turn:
    call: Call
    text: str
    token: CancelToken


@dataclass(frozen=True, slots=True)
class _Finish:
    """Complete a stop (`result` is the stop result) or a close (`{}`), or end silently."""

    call: Call | None
    result: JSON


Job = _Turn | _Finish


class SessionHost(Protocol):
    """What a session asks of the server that owns it; `AcpServer` is the one host."""

    def send_update(self, session_id: str, update: JSONObject) -> None:
        """Send one `session/update` notification (ACP-UPD-01)."""

    def send_trimmed(self, params: JSONObject) -> None:
        """Send one `_zeroclaw/history_trimmed` notification (ACP-UPD-15)."""

    def session_gone(self, session: AcpSession) -> None:
        """The session's worker is ending: forget it and close its execution (ACP-TR-38)."""

    def persist_turn(self, session_id: str, messages: str, updates: str, plan: str | None) -> None:
        """Store one completed turn in one transaction (ACP-STORE-09).

        Raises:
            StoreError: the store refused; the session logs it (ACP-STORE-13).
        """


class AcpSession:
    """A published session; the server owns the active set, the session owns its worker."""

    def __init__(
        self,
        session_id: str,
        workspace: Path,
        execution: ResolvedAgentExecution,
        engine: TurnEngine,
        clock: Clock,
        host: SessionHost,
        history: list[JSONObject] | None = None,
        stored: bool = False,
        ids: IdFactory | None = None,
    ) -> None:
        self.id = session_id
        self._ids: IdFactory = ids if ids is not None else RandomIds()
        self.workspace = workspace
        self.execution = execution
        self._engine = engine
        self._clock = clock
        self._host = host
        self.history: list[JSONObject] = list(history or [])
        self._stored = stored  # False without a store (ACP-STORE-04)
        self.plan: list[JSON] | None = None
        self.last_active = clock.now()
        self._state = State.IDLE
        self._lock = threading.Lock()
        self._token: CancelToken | None = None
        self._inbox: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._projector: TurnProjector | None = None  # the running turn's, on the worker
        self._worker = threading.Thread(target=self._run, name=f"session-{session_id}", daemon=True)

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._worker.start()

    def _fire(self, event: Event) -> State:
        with self._lock:
            return self._fire_locked(event)

    def _fire_locked(self, event: Event) -> State:
        new = TRANSITIONS.get((self._state, event))
        if new is None:
            raise LocalProtocolError(f"session {self.id}: {event.value} in state {self._state}")
        self._state = new
        return new

    @property
    def state(self) -> State:
        return self._state

    @property
    def busy(self) -> bool:
        return self._token is not None

    # --- reader-thread operations (never wait) -------------------------------------------

    def try_take_turn(self) -> CancelToken | None:
        """[ACP-PROMPT-02] take the turn slot atomically; None when a turn is active."""
        with self._lock:
            if self._state is not State.IDLE:
                return None
            self._fire_locked(Event.PROMPT)
            self._token = CancelToken()
            return self._token

    def release_turn(self) -> None:
        """Give the slot back (acceptance failed, or the turn ended)."""
        with self._lock:
            self._token = None
            self._fire_locked(Event.TURN_ENDED)

    def run_turn(self, call: Call, text: str, token: CancelToken) -> None:
        self._inbox.put(_Turn(call, text, token))

    def cancel_turn(self) -> None:
        """[ACP-CANCEL-03] fire the active turn's signal; nothing when idle (ACP-CANCEL-04)."""
        with self._lock:
            token = self._token
        if token is not None:
            token.fire()

    def drain(self, call: Call | None, result: JSON) -> None:
        """Leave the active set: finish after any running turn, answering `call` with
        `result` (ACP-STOP-03, ACP-CLOSE-04); `call` None ends silently (reap, shutdown)."""
        self._fire(Event.DRAIN)
        self._inbox.put(_Finish(call, result))

    def restore_plan(self, plan_json: str) -> None:
        """[ACP-RESUME-02] the stored plan goes into runtime state only; nothing is sent."""
        value = loads(plan_json)
        self.plan = value if isinstance(value, list) else None

    def send_out_of_band(self, text: str) -> None:
        """[ACP-ESC-03] [ACP-UPD-24] a message from a running tool, as an agent chunk of the
        current turn (never part of the answer text, ACP-ESC-05); dropped outside a turn."""
        projector = self._projector
        if projector is not None:
            projector.send_message(text)

    def drain_if_idle(self) -> bool:
        """Drain silently unless a turn holds the slot (checked and changed atomically, so a
        prompt accepted at the same moment is never cut off by the reaper)."""
        with self._lock:
            if self._state is not State.IDLE:
                return False
            self._fire_locked(Event.DRAIN)
        self._inbox.put(_Finish(None, None))
        return True

    def touch(self) -> None:
        self.last_active = self._clock.now()  # [ACP-REAP-03]

    def join(self, timeout: float) -> bool:
        self._worker.join(timeout)
        return not self._worker.is_alive()

    # --- the worker ------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            job = self._inbox.get()
            if isinstance(job, _Turn):
                self._turn(job)
                continue
            self._fire(Event.WORKER_DONE)
            self._host.session_gone(self)  # unregister before answering, so the id is free again
            if job.call is not None:
                job.call.reply(job.result)
            return

    def _turn(self, job: _Turn) -> None:
        projector = TurnProjector(
            self.id,
            self.workspace,
            lambda u: self._host.send_update(self.id, u),
            self._host.send_trimmed,
        )
        self._projector = projector
        try:
            outcome: TurnOutcome = self._engine.run_turn(
                self.execution, list(self.history), job.text, projector.on_event, job.token
            )
        except Exception as exc:
            log.exception("turn of session %s raised", self.id)
            outcome = Failed(FailureKind.PANIC, str(exc))
        finally:
            self._projector = None
        if isinstance(outcome, Failed) and job.token.is_set():
            outcome = Cancelled()  # [ACP-PROMPT-29] the cancel fired before the runtime ended
        self._finish_turn(job, projector, outcome)

    def _finish_turn(self, job: _Turn, projector: TurnProjector, outcome: TurnOutcome) -> None:
        if isinstance(outcome, Completed):
            self._store_turn(job, projector, outcome)
            self.history.extend(outcome.messages)
            if projector.last_plan is not None:
                self.plan = projector.last_plan
            self._trim_history()
            result: JSONObject = {
                "sessionId": self.id,
                "stopReason": wire.STOP_END_TURN,
                "content": outcome.text,
            }  # [ACP-PROMPT-27]
            self._end(job, lambda: job.call.reply(result))
        elif isinstance(outcome, Cancelled):
            projector.close_open_calls(CANCEL_MARKER)  # [ACP-UPD-17]
            # [ACP-UPD-26] with a fresh suffix: tool call ids are unique within a session
            projector.turn_cancelled(self._ids.new("turn-cancelled"))
            cancelled: JSONObject = {
                "sessionId": self.id,
                "stopReason": wire.STOP_CANCELLED,
                "content": projector.cancelled_content(),
            }  # [ACP-PROMPT-28]
            self._end(job, lambda: job.call.reply(cancelled))
        else:
            message = failure_message(outcome)
            projector.close_open_calls(message)  # [ACP-UPD-17]
            self._end(job, lambda: job.call.fail(RpcError.internal_error(message)))

    def _store_turn(self, job: _Turn, projector: TurnProjector, outcome: Completed) -> None:
        """[ACP-STORE-09] [ACP-STORE-10] one transaction: the messages and the update log,
        which starts with the rendered prompt; [ACP-STORE-13] a failure is logged and the
        turn still ends normally from memory."""
        if not self._stored:
            return
        first = dumps(
            {
                "sessionUpdate": wire.UPDATE_USER_MESSAGE_CHUNK,
                "content": {"type": "text", "text": job.text},
            }
        )
        updates = "[" + ",".join([first, *projector.update_log]) + "]"
        plan = dumps(projector.last_plan) if projector.last_plan is not None else None
        try:
            self._host.persist_turn(self.id, dumps(list(outcome.messages)), updates, plan)
        except StoreError as exc:
            log.warning("failed to persist a turn of session %s: %s", self.id, exc)

    def _trim_history(self) -> None:
        """[ACP-RT-07] keep whole turns within max_history_messages and report the trim,
        after every other update of the turn and before its result (ACP-UPD-23)."""
        limit = self.execution.knobs.max_history_messages
        if len(self.history) <= limit:
            return
        trimmed = trim(self.history, limit)
        if trimmed.dropped:
            self.history = list(trimmed.kept)
            self._host.send_trimmed(
                {
                    "sessionId": self.id,
                    "droppedMessages": trimmed.dropped,
                    "keptTurns": trimmed.kept_turns,
                    "reason": TRIM_REASON,
                }
            )

    def _end(self, job: _Turn, answer: Callable[[], None]) -> None:
        # [ACP-PROMPT-24] last_active on every outcome; [ACP-PROMPT-25] slot released before
        # the answer is enqueued, so the client may send the next prompt right away.
        self.touch()
        self.release_turn()
        answer()
