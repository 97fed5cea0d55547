"""Every MCP wire name the client sends or matches, written once (DESIGN §2.4), as `wire/acp.py`
is for ACP.

`tests/architecture/test_wire_names.py` rejects a string literal equal to a METHOD_, NOTIFY_,
HEADER_ or META_ constant of this module anywhere in the package outside `wire/`, and an
integer literal of a JSON-RPC error code outside `wire/`. MCP and ACP both name their handshake
`initialize`; each protocol keeps its own constant so that neither package imports the other's
vocabulary.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final

# --- client -> server requests (mcp.md §1, §3..§6, §14) -------------------------------------
METHOD_INITIALIZE: Final = "initialize"
METHOD_PING: Final = "ping"  # also a server -> client request (mcp.md §2.2)
METHOD_TOOLS_LIST: Final = "tools/list"
METHOD_TOOLS_CALL: Final = "tools/call"
METHOD_RESOURCES_LIST: Final = "resources/list"
METHOD_RESOURCES_TEMPLATES_LIST: Final = "resources/templates/list"
METHOD_RESOURCES_READ: Final = "resources/read"
METHOD_RESOURCES_SUBSCRIBE: Final = "resources/subscribe"
METHOD_PROMPTS_LIST: Final = "prompts/list"
METHOD_PROMPTS_GET: Final = "prompts/get"
METHOD_LOGGING_SET_LEVEL: Final = "logging/setLevel"
# the stateless era's probe and notification stream (mcp.md §14)
METHOD_SERVER_DISCOVER: Final = "server/discover"
METHOD_SUBSCRIPTIONS_LISTEN: Final = "subscriptions/listen"

# --- server -> client requests (mcp.md §2.2) ------------------------------------------------
METHOD_ROOTS_LIST: Final = "roots/list"
METHOD_SAMPLING_CREATE_MESSAGE: Final = "sampling/createMessage"
METHOD_ELICITATION_CREATE: Final = "elicitation/create"

# --- notifications, either direction (mcp.md §1.3, §2.3, §14) ---------------------------------
NOTIFY_INITIALIZED: Final = "notifications/initialized"
NOTIFY_CANCELLED: Final = "notifications/cancelled"
NOTIFY_PROGRESS: Final = "notifications/progress"
NOTIFY_MESSAGE: Final = "notifications/message"
NOTIFY_TOOLS_LIST_CHANGED: Final = "notifications/tools/list_changed"
NOTIFY_RESOURCES_LIST_CHANGED: Final = "notifications/resources/list_changed"
NOTIFY_PROMPTS_LIST_CHANGED: Final = "notifications/prompts/list_changed"
NOTIFY_SUBSCRIPTIONS_ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"

# --- HTTP headers (mcp.md §9, §14.3) ----------------------------------------------------------
HEADER_SESSION_ID: Final = "Mcp-Session-Id"
HEADER_PROTOCOL_VERSION: Final = "MCP-Protocol-Version"
HEADER_LAST_EVENT_ID: Final = "Last-Event-ID"  # SSE resumption (MCP-HTTP-26, MCP-HTTP-36)
HEADER_METHOD: Final = "Mcp-Method"  # [MCP-MOD-14]
HEADER_NAME: Final = "Mcp-Name"  # [MCP-MOD-14]
HEADER_PARAM_PREFIX: Final = "Mcp-Param-"  # [MCP-MOD-16] followed by the annotated token
# the `inputSchema` property annotation that asks for an `Mcp-Param-*` header (MCP-MOD-16)
SCHEMA_HEADER_ANNOTATION: Final = "x-mcp-header"

# --- SSE event types of the legacy HTTP+SSE transport (MCP-SSE-05) ----------------------------
EVENT_ENDPOINT: Final = "endpoint"
EVENT_MCP_ENDPOINT: Final = "mcp-endpoint"

# --- `_meta` members of a stateless request or answer (MCP-MOD-05) ----------------------------
META: Final = "_meta"
META_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION: Final = "io.modelcontextprotocol/subscriptionId"


class ModernErrorCode(IntEnum):
    """The error codes of the stateless era (mcp.md §14), which only MCP servers send.

    The JSON-RPC codes both protocols share (−32601, −32602, −32603...) are read from
    `wire.errors.ErrorCode`; these three sit here because the ACP server never emits them
    (ACP-ERR-01 keeps `ErrorCode` to acp.md's table).
    """

    HEADER_MISMATCH = -32020
    MISSING_CAPABILITY = -32021
    UNSUPPORTED_VERSION = -32022
