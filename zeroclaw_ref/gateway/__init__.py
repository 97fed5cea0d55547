"""The gateway: one port serving ACP over WebSocket, the HTTP endpoints and pairing (acp.md §13)."""
