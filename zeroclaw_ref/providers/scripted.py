"""The `scripted` model provider: replays the turns of a script (config.md §4.2).

Implements CFG-PROV-11 to CFG-PROV-15. The config loader has already read and validated the
script (CFG-PROV-10) into `ProviderConfig.script_turns`; this module only replays it.

Design notes:
- One instance per execution (POL-RESOLVE-12) owns its position and its `call_<n>` counter
  (CFG-PROV-12, CFG-PROV-14), so replays are independent and repeatable.
- `stream` is a generator function: the request is recorded and its turn consumed when the stream
  is first advanced (on the engine's pump thread), so a scripted failure surfaces exactly where a
  network failure would.
- `call_<n>` counts the calls that receive a generated id, so the first id-less call of an
  instance is `call_1` whatever explicit ids came before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from zeroclaw_ref.config.model import ProviderConfig, ScriptTurn
from zeroclaw_ref.core.jsontypes import JSONObject, dumps, loads
from zeroclaw_ref.providers.base import (
    Done,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    TextChunk,
    ThoughtChunk,
    ToolCall,
    record_of,
)


class ScriptedProvider:
    """The `scripted` kind: each request consumes the next turn of the script."""

    blocking = False  # waits only on request.stop: drained inline by the engine

    def __init__(self, config: ProviderConfig, config_dir: Path) -> None:
        self.name = config.name
        self.requests: list[JSONObject] = []
        self._turns: tuple[ScriptTurn, ...] = config.script_turns or ()
        # [CFG-PROV-02] `record` is relative to the configuration directory (an absolute path
        # stays as it is).
        self._record_path = config_dir / config.record if config.record else None
        self._position = 0
        self._next_call = 1

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Yield the next turn's events, ending with `Done`.

        Raises:
            ProviderError: the turn is an `error` turn, the script is exhausted, or the record
                file cannot be written; the engine fails the turn with this text.
        """
        self._record(record_of(request))
        turn = self._take_turn()
        # [CFG-PROV-11] thoughts, then chunks, then tool calls, then Done.
        for thought in turn.thoughts:
            yield ThoughtChunk(thought)
        for chunk in turn.chunks:
            yield TextChunk(chunk)
        for call in turn.tool_calls:
            yield ToolCall(call.id or self._generated_id(), call.name, loads(call.arguments_json))
        yield Done()

    def _take_turn(self) -> ScriptTurn:
        # [CFG-PROV-13] a script that is too short must be visible, not answered.
        if self._position >= len(self._turns):
            raise ProviderError(
                f"scripted provider {self.name}: script exhausted after {len(self._turns)} turns"
            )
        turn = self._turns[self._position]
        self._position += 1
        # [CFG-PROV-11] an error turn fails the request and emits nothing.
        if turn.error is not None:
            raise ProviderError(turn.error)
        return turn

    def _generated_id(self) -> str:
        # [CFG-PROV-14] `call_<n>`, counting from 1 per provider instance.
        call_id = f"call_{self._next_call}"
        self._next_call += 1
        return call_id

    def _record(self, record: JSONObject) -> None:
        # [CFG-PROV-15] every request is kept, and appended as one JSON line when `record` is set.
        self.requests.append(record)
        if self._record_path is None:
            return
        try:
            with self._record_path.open("a", encoding="utf-8") as out:
                out.write(dumps(record) + "\n")
        except OSError as exc:
            raise ProviderError(
                f"scripted provider {self.name}: cannot write record {self._record_path}: {exc}"
            ) from exc
