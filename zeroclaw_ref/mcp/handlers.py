"""Server-to-client requests and notifications (mcp.md §2.2, §2.3; DESIGN §6).

`answer_request` is the table of MCP-S2C-01: one response per server request, computed from
the installed `ClientHandlers`. `capabilities` derives the client capabilities of MCP-INIT-03
from the same handlers, so that what is declared and what is answered never disagree.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps
from zeroclaw_ref.wire import mcp as wire
from zeroclaw_ref.wire.errors import ErrorCode

log = logging.getLogger(__name__)

# [MCP-NOTE-03] MCP log levels -> logging levels; "error" and above map to ERROR.
_LOG_LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
}


@dataclass(frozen=True, slots=True)
class ClientHandlers:
    """Hooks an embedding application may install (MCP-S2C-04); none are installed by default."""

    roots: Callable[[], list[JSONObject]] | None = None
    sampling: Callable[[JSONObject], JSONObject] | None = None
    elicitation: Callable[[JSONObject], JSONObject] | None = None
    elicitation_url_mode: bool = False
    on_notification: Callable[[str, str, JSONObject | None], None] | None = None


def capabilities(handlers: ClientHandlers) -> JSONObject:
    """[MCP-INIT-03] [MCP-INIT-04] declare only what a handler backs."""
    caps: JSONObject = {}
    if handlers.roots is not None:
        caps["roots"] = {}
    if handlers.sampling is not None:
        caps["sampling"] = {}
    if handlers.elicitation is not None:
        caps["elicitation"] = {"form": {}, "url": {}} if handlers.elicitation_url_mode else {}
    return caps


def accept_with_defaults(params: JSONObject) -> JSONObject:
    """[MCP-S2C-09] accept an elicitation, filling every property that declares a default."""
    content: JSONObject = {}
    schema = params.get("requestedSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(props, dict):
        for key, prop in props.items():
            if isinstance(prop, dict) and "default" in prop:
                content[key] = prop["default"]
    return {"action": "accept", "content": content}


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer to one server request: a result, or an error code and message."""

    result: JSONObject | None = None
    code: int = 0
    message: str = ""

    def to_message(self, request_id: JSON) -> JSONObject:
        """[MCP-S2C-02] echo the id exactly as received."""
        if self.result is not None:
            return {"jsonrpc": "2.0", "id": request_id, "result": self.result}
        return {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": int(self.code), "message": self.message},
        }


_NOT_FOUND = Reply(code=ErrorCode.METHOD_NOT_FOUND, message="Method not found")


def _ping(_h: ClientHandlers, _p: JSONObject) -> Reply:
    return Reply(result={})


def _roots(h: ClientHandlers, _p: JSONObject) -> Reply:
    if h.roots is None:
        return _NOT_FOUND
    roots: list[JSON] = list(h.roots())
    return Reply(result={"roots": roots})


def _sampling(h: ClientHandlers, p: JSONObject) -> Reply:
    return _NOT_FOUND if h.sampling is None else Reply(result=h.sampling(p))


def _elicitation(h: ClientHandlers, p: JSONObject) -> Reply:
    # [MCP-S2C-05] a missing mode is form mode; url mode needs a handler that declared it
    mode = p.get("mode", "form")
    if mode == "url" and (h.elicitation is None or not h.elicitation_url_mode):
        return Reply(code=ErrorCode.INVALID_PARAMS, message="Invalid params")
    if h.elicitation is None:
        return Reply(result={"action": "decline"})
    return Reply(result=h.elicitation(p))


# [MCP-S2C-01] the table of §2.2; any other method is answered -32601 (MCP-S2C-03).
REQUESTS: dict[str, Callable[[ClientHandlers, JSONObject], Reply]] = {
    wire.METHOD_PING: _ping,
    wire.METHOD_ROOTS_LIST: _roots,
    wire.METHOD_SAMPLING_CREATE_MESSAGE: _sampling,
    wire.METHOD_ELICITATION_CREATE: _elicitation,
}


def answer_request(server: str, handlers: ClientHandlers, method: str, params: JSONObject) -> Reply:
    """Compute the reply to one server request; a raising handler gives -32603 (MCP-S2C-07)."""
    entry = REQUESTS.get(method)
    if entry is None:
        return _NOT_FOUND
    try:
        return entry(handlers, params)
    except Exception:
        log.warning("MCP server `%s`: handler for `%s` raised", server, method, exc_info=True)
        return Reply(code=ErrorCode.INTERNAL_ERROR, message="Internal error")


def log_server_message(server: str, params: JSONObject | None) -> None:
    """[MCP-NOTE-03] forward a `notifications/message` to the per-server logger."""
    level_name = params.get("level") if params else None
    level = _LOG_LEVELS.get(level_name, logging.ERROR) if isinstance(level_name, str) else None
    if level is None:
        level = logging.INFO
    logging.getLogger(f"zeroclaw_ref.mcp.server.{server}").log(level, "%s", dumps(params or {}))


def notify_hook(
    server: str, handlers: ClientHandlers, method: str, params: JSONObject | None
) -> None:
    """[MCP-NOTE-02] pass a notification to the installed hook, containing its failures."""
    if handlers.on_notification is None:
        return
    try:
        handlers.on_notification(server, method, params)
    except Exception:
        log.warning("MCP server `%s`: on_notification hook raised", server, exc_info=True)
