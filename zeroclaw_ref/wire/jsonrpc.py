"""Inbound classification and outbound builders for JSON-RPC 2.0 (acp.md §1.3).

Sans-IO: `classify(line)` takes the bytes of one framed line and returns what it is. The rules
apply in the order of acp.md §1.3, which is why a line with `id` and `result` is a response even
when it also carries `method` (ACP-TR-11).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from zeroclaw_ref.core.jsontypes import JSON, JSONObject, dumps, loads
from zeroclaw_ref.wire.acp import JSONRPC_VERSION
from zeroclaw_ref.wire.errors import RpcError


@dataclass(frozen=True, slots=True)
class Request:
    id: JSON  # never None: a null id makes a notification (ACP-TR-14)
    method: str
    params: JSONObject


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: JSONObject


@dataclass(frozen=True, slots=True)
class Response:
    """A response to one of our outbound requests; exactly one of result/error is meaningful."""

    id: JSON
    result: JSON
    error: RemoteError | None


@dataclass(frozen=True, slots=True)
class RemoteError:
    """An error reply from the peer; its code need not be one the server itself emits."""

    code: int
    message: str


@dataclass(frozen=True, slots=True)
class Invalid:
    """A line that gets an error reply (`reply` set) or is ignored silently (`reply` None)."""

    id: JSON
    reply: RpcError | None


Inbound = Request | Notification | Response | Invalid


def _describe_json_error(exc: json.JSONDecodeError) -> str:
    if exc.pos >= len(exc.doc.rstrip()):
        return "unexpected end of input"
    return f"{exc.msg} at line {exc.lineno} column {exc.colno}"


def _parse(line: bytes) -> JSON | Invalid:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        # [ACP-TR-09] JSON text must be UTF-8.
        return Invalid(None, RpcError.parse_error(f"invalid UTF-8 at byte offset {exc.start}"))
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        return Invalid(None, RpcError.parse_error(_describe_json_error(exc)))
    except (ValueError, RecursionError) as exc:
        return Invalid(None, RpcError.parse_error(str(exc) or "invalid JSON"))


def classify(line: bytes) -> Inbound:
    """Classify one trimmed, non-empty line by the rules of acp.md §1.3."""
    value = _parse(line)
    if isinstance(value, Invalid):
        return value
    if not isinstance(value, dict):
        kind = "a batch array" if isinstance(value, list) else type(value).__name__
        # [ACP-TR-12] batches included: only single objects are messages.
        return Invalid(None, RpcError.parse_error(f"expected a JSON object, found {kind}"))
    if "id" in value and ("result" in value or "error" in value):
        return _response(value)  # [ACP-TR-11] never answered, whatever else it carries
    version, method = value.get("jsonrpc"), value.get("method")
    if not isinstance(version, str):
        return Invalid(None, RpcError.parse_error("missing string member `jsonrpc`"))
    if not isinstance(method, str):
        return Invalid(None, RpcError.parse_error("missing string member `method`"))
    msg_id = value.get("id")
    if version != JSONRPC_VERSION:
        # [ACP-TR-13] answered only when there is someone to answer.
        return Invalid(msg_id, RpcError.invalid_request() if msg_id is not None else None)
    raw_params = value.get("params")
    params: JSONObject = raw_params if isinstance(raw_params, dict) else {}  # [ACP-TR-16]
    if msg_id is None:
        return Notification(method, params)  # [ACP-TR-14]
    return Request(msg_id, method, params)


def _response(value: JSONObject) -> Response:
    error = value.get("error")
    if (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and not isinstance(error.get("code"), bool)
        and isinstance(error.get("message"), str)
    ):
        code, message = error["code"], error["message"]
        assert isinstance(code, int) and isinstance(message, str)
        return Response(value["id"], None, RemoteError(code, message))
    # [ACP-TR-25] a malformed error member makes the message a success carrying `result`.
    return Response(value["id"], value.get("result"), None)


def response_line(msg_id: JSON, result: JSON) -> str:
    return dumps({"jsonrpc": JSONRPC_VERSION, "id": msg_id, "result": result})


def error_line(msg_id: JSON, error: RpcError) -> str:
    return dumps({"jsonrpc": JSONRPC_VERSION, "id": msg_id, "error": error.to_json()})


def notification_line(method: str, params: JSONObject) -> str:
    return dumps({"jsonrpc": JSONRPC_VERSION, "method": method, "params": params})


def request_line(msg_id: str, method: str, params: JSONObject) -> str:
    return dumps({"jsonrpc": JSONRPC_VERSION, "id": msg_id, "method": method, "params": params})
