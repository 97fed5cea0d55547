"""`POST /api/chat` (path `gateway-chat`) and `GET /api/tools` (path `gateway-tools`)
(policy.md POL-PATH-07..12, acp.md ACP-GW-12).

Both build their execution only through `resolve()` (POL-PATH-01) and close it before answering.
Authentication has already happened in `server.py` (POL-PATH-12).
"""

from __future__ import annotations

from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON, loads
from zeroclaw_ref.engine.events import Completed, Failed, TurnEvent
from zeroclaw_ref.engine.resolve import (
    PathRequest,
    ResolveError,
    not_dispatchable_text,
    resolve,
    unknown_agent_text,
)
from zeroclaw_ref.engine.turn import TurnEngine

from .request import HttpRequest, Reply

NOT_AN_OBJECT = "Request body must be a JSON object"
NO_MESSAGE = "Field `message` must be a non-blank string"
BAD_AGENT = "Field `agent` must be a string"
TURN_FAILED = "Agent turn failed: {detail}"


def _ignore(event: TurnEvent) -> None:
    """[POL-PATH-07] the chat answer is the final text; streamed events are not relayed."""


def _choose(request: HttpRequest, named: str | None) -> str:
    """[POL-PATH-02] a blank name counts as none.

    Raises:
        ResolveError: no agent named and none can be chosen.
    """
    name = named.strip() if named else None
    return request.state.deps.choose_agent(request.config, name or None)


def _resolve_failure(alias: str, exc: ResolveError, other: str) -> Reply:
    """[POL-PATH-08] [POL-PATH-10] the POL-RESOLVE-07 texts are 404; anything else is a 500
    whose text is `other` with the refusal in place of `{detail}`."""
    text = str(exc)
    if text in (unknown_agent_text(alias), not_dispatchable_text(alias)):
        return Reply.error(404, text)
    return Reply.error(500, other.format(detail=text))


def chat(request: HttpRequest) -> Reply:
    """[POL-PATH-07] one complete turn on a fresh execution with an empty history."""
    try:
        body: JSON = loads(request.body)
    except ValueError:
        return Reply.error(400, NOT_AN_OBJECT)
    if not isinstance(body, dict):
        return Reply.error(400, NOT_AN_OBJECT)
    message = body.get("message")
    if not isinstance(message, str) or not message.strip():
        return Reply.error(400, NO_MESSAGE)
    named = body.get("agent")
    if named is not None and not isinstance(named, str):
        return Reply.error(400, BAD_AGENT)
    try:
        alias = _choose(request, named)
    except ResolveError as exc:
        return Reply.error(400, str(exc))
    config = request.config
    try:
        # [POL-PATH-09] no operator: every Prompt ends in the runtime denial.
        execution = resolve(config, alias, PathRequest("gateway-chat"), request.state.deps.ids)
    except ResolveError as exc:
        return _resolve_failure(alias, exc, TURN_FAILED)
    try:
        engine = TurnEngine(request.state.deps.ids, request.state.deps.clock)
        outcome = engine.run_turn(execution, [], message, _ignore, CancelToken())
    finally:
        execution.close()
    if isinstance(outcome, Completed):
        return Reply.json(200, {"agent": alias, "response": outcome.text})
    detail = outcome.diagnostic if isinstance(outcome, Failed) else "the turn was cancelled"
    return Reply.error(500, TURN_FAILED.format(detail=detail))


def tools(request: HttpRequest) -> Reply:
    """[POL-PATH-10] [POL-PATH-11] the named agent's tools in registry order, never another's."""
    try:
        alias = _choose(request, request.query.get("agent"))
    except ResolveError as exc:
        return Reply.error(400, str(exc))
    try:
        execution = resolve(request.config, alias, PathRequest("gateway-tools"))
    except ResolveError as exc:
        return _resolve_failure(alias, exc, "{detail}")
    try:
        listed: list[JSON] = [
            {"name": s.name, "description": s.description, "parameters": s.parameters}
            for s in execution.io.tools.specs
        ]
    finally:
        execution.close()
    return Reply.json(200, {"agent": alias, "tools": listed})
