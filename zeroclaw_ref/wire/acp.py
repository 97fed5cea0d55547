"""Every ACP wire string the server matches or emits, written once (DESIGN §2.4).

`tests/architecture/test_wire_names.py` rejects a string literal equal to a METHOD_, UPDATE_,
STOP_ or OPTION_ constant anywhere outside `wire/`.
"""

from __future__ import annotations

from typing import Final

JSONRPC_VERSION: Final = "2.0"
PROTOCOL_VERSION: Final = 1

# --- methods the server serves (acp.md Table 1-1) -----------------------------------------
METHOD_INITIALIZE: Final = "initialize"
METHOD_SESSION_NEW: Final = "session/new"
METHOD_SESSION_PROMPT: Final = "session/prompt"
METHOD_SESSION_CANCEL: Final = "session/cancel"
METHOD_SESSION_STOP: Final = "session/stop"
METHOD_SESSION_CLOSE: Final = "session/close"
METHOD_SESSION_LOAD: Final = "session/load"
METHOD_SESSION_RESUME: Final = "session/resume"
METHOD_SESSION_LIST: Final = "session/list"  # stable ACP v1, over the store (ZC-LIST-01)
METHOD_SESSION_DELETE: Final = "session/delete"  # stable ACP v1, over the store (ZC-DEL-01)
METHOD_SESSION_UPDATE: Final = "session/update"
METHOD_SESSION_EVENT: Final = "session/event"

# --- methods the server sends ---------------------------------------------------------------
METHOD_REQUEST_PERMISSION: Final = "session/request_permission"
METHOD_HISTORY_TRIMMED: Final = "_zeroclaw/history_trimmed"

# [ACP-TR-23] outbound request ids
OUTBOUND_ID_PREFIX: Final = "zc-out-"

# --- update variants (acp.md Table 5-1) ----------------------------------------------------
UPDATE_AGENT_MESSAGE_CHUNK: Final = "agent_message_chunk"
UPDATE_AGENT_THOUGHT_CHUNK: Final = "agent_thought_chunk"
UPDATE_USER_MESSAGE_CHUNK: Final = "user_message_chunk"
UPDATE_TOOL_CALL: Final = "tool_call"
UPDATE_TOOL_CALL_UPDATE: Final = "tool_call_update"
UPDATE_PLAN: Final = "plan"

# --- stop reasons (ACP-PROMPT-32) -------------------------------------------------------------
STOP_END_TURN: Final = "end_turn"
STOP_CANCELLED: Final = "cancelled"

# --- tool call status and kinds (ACP-UPD-03, Table 5-3) ------------------------------------
STATUS_PENDING: Final = "pending"
STATUS_COMPLETED: Final = "completed"
STATUS_FAILED: Final = "failed"

KIND_READ: Final = "read"
KIND_EDIT: Final = "edit"
KIND_DELETE: Final = "delete"
KIND_SEARCH: Final = "search"
KIND_EXECUTE: Final = "execute"
KIND_THINK: Final = "think"
KIND_FETCH: Final = "fetch"
KIND_OTHER: Final = "other"

# --- permission options (ACP-PERM-05) ----------------------------------------------------------
OPTION_ALLOW_ONCE: Final = "allow-once"
OPTION_ALLOW_ALWAYS: Final = "allow-always"
OPTION_REJECT_ONCE: Final = "reject-once"
OPTION_REJECT_ALWAYS: Final = "reject-always"
OPTION_REJECT_WITH_EDIT: Final = "reject-with-edit"

# --- permission outcomes (acp.md Table 6-2) --------------------------------------------------
OUTCOME_SELECTED: Final = "selected"
OUTCOME_CANCELLED: Final = "cancelled"

# --- agent identity (acp.md Table 2-1) ---------------------------------------------------------
AGENT_NAME: Final = "zeroclaw-acp"
AGENT_TITLE: Final = "ZeroClaw ACP"
