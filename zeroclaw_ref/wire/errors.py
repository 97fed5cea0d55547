"""JSON-RPC error values with one constructor per row of acp.md Table 14-1 (DESIGN §9).

ACP errors carry only `code` and `message`, never `data` (ACP-ERR-02), and every message is the
English text of the table (ACP-ERR-03).
"""

from __future__ import annotations

from enum import IntEnum

from zeroclaw_ref.core.jsontypes import JSONObject


class ErrorCode(IntEnum):
    """[ACP-ERR-01] the only codes the server emits."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SESSION_NOT_FOUND = -32000
    SESSION_LIMIT_REACHED = -32001
    SESSION_BUSY = -32002


class RpcError(Exception):
    """An error response to send; raised by method handlers, converted by the endpoint."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_json(self) -> JSONObject:
        """[ACP-ERR-02] the error object: code and message only."""
        return {"code": int(self.code), "message": self.message}

    # --- constructors named after the rows of Table 14-1 ---------------------------------

    @classmethod
    def parse_error(cls, detail: str) -> RpcError:
        """[ACP-TR-12]"""
        return cls(ErrorCode.PARSE_ERROR, f"Parse error: {detail}")

    @classmethod
    def invalid_request(cls) -> RpcError:
        """[ACP-TR-13]"""
        return cls(ErrorCode.INVALID_REQUEST, "Invalid JSON-RPC version")

    @classmethod
    def method_not_found(cls, method: str) -> RpcError:
        """[ACP-TR-18]"""
        return cls(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}")

    @classmethod
    def invalid_params(cls, message: str) -> RpcError:
        """Any −32602 row; the caller passes the row's exact text."""
        return cls(ErrorCode.INVALID_PARAMS, message)

    @classmethod
    def missing_session_id(cls) -> RpcError:
        """[ACP-TR-21]"""
        return cls(ErrorCode.INVALID_PARAMS, "Missing required parameter: sessionId")

    @classmethod
    def internal_error(cls, message: str) -> RpcError:
        """Any −32603 row; the caller passes the row's exact text."""
        return cls(ErrorCode.INTERNAL_ERROR, message)

    @classmethod
    def session_not_found(cls, session_id: str) -> RpcError:
        """[ACP-PROMPT-01] [ACP-STOP-01] [ACP-UPD-30] and the other −32000 rows."""
        return cls(ErrorCode.SESSION_NOT_FOUND, f"Session not found: {session_id}")

    @classmethod
    def session_limit_reached(cls, maximum: int) -> RpcError:
        """[ACP-NEW-16]"""
        return cls(ErrorCode.SESSION_LIMIT_REACHED, f"Maximum session limit reached ({maximum})")

    @classmethod
    def session_busy(cls, session_id: str) -> RpcError:
        """[ACP-PROMPT-01]"""
        return cls(
            ErrorCode.SESSION_BUSY, f"Session already has an active prompt turn: {session_id}"
        )


class LocalProtocolError(Exception):
    """Our own code asked for something the protocol or a lifecycle table forbids: a bug."""
