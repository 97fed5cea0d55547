"""A scripted 2026-07-28 ("modern") MCP server, standard library only, for the unit tests of
the stateless era (mcp.md §14).

`Core` answers one JSON-RPC message at a time; run as a script it serves stdio
(`python tests/helpers/fake_mcp_modern.py [options]`), and `FakeModernHttp` serves it over
Streamable HTTP on a loopback port. Options shape the probe answer (modern, a -32022 first, a
legacy-style error, silence, an exit), the listings (ttlMs, cacheScope, x-mcp-header tools) and
the tools: `ask` asks for input (elicitation, sampling, roots) over multi round-trip requests,
`forever` always asks, `state_only` asks with a requestState alone, `change` announces a tool
list change on the listen stream, `badtype` answers an unknown resultType, `crash` exits.
`--record FILE` appends every received message as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

MODERN = "2026-07-28"
V = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
SUB = "io.modelcontextprotocol/subscriptionId"
SCHEMA = {"type": "object", "properties": {"message": {"type": "string"}}}
HEADER_SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
        "note": {"type": "string"},
    },
}
BAD_HEADER_SCHEMA = {
    "type": "object",
    "properties": {"tags": {"type": "array", "x-mcp-header": "Tags", "items": {"type": "string"}}},
}
TOOLS = ["echo", "ask", "forever", "state_only", "change", "badtype", "crash", "refuse", "slow"]


def _tool(name: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "description": f"the {name} tool", "inputSchema": schema or SCHEMA}


class Core:
    """The server logic: `handle` returns the messages to send back, in order."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.discovers = 0
        self.legacy = False
        self.refused_once = False
        self.listens: list[Any] = []
        self.lock = threading.Lock()
        self.tools = [_tool(n) for n in TOOLS]
        if args.header_tools:
            self.tools += [_tool("routed", HEADER_SCHEMA), _tool("badheader", BAD_HEADER_SCHEMA)]
        self.on_change: Any = None  # (subscription id) -> None, set by the transport

    def result(self, rid: Any, result: dict[str, Any], *, complete: bool = True) -> dict[str, Any]:
        if complete and not self.args.no_result_type:
            result = {"resultType": "complete", **result}
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    @staticmethod
    def error(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
        err: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            err["data"] = data
        return {"jsonrpc": "2.0", "id": rid, "error": err}

    def handle(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        method, rid = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method is None or rid is None:
            return []  # responses and notifications (cancellations) need no answer
        if method == "initialize":
            if self.args.dual:
                self.legacy = True  # this connection now speaks the handshake era
                result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                          "serverInfo": {"name": "dual", "version": "1"}}  # fmt: skip
                return [{"jsonrpc": "2.0", "id": rid, "result": result}]
            data = {"supported": [MODERN], "requested": params.get("protocolVersion")}
            return [self.error(rid, -32022, "this server speaks only 2026-07-28", data)]
        meta = params.get("_meta")
        if self.legacy:
            handler = getattr(self, "m_" + str(method).replace("/", "_"), None)
            return handler(rid, params) if handler else [self.error(rid, -32601, "Not found")]
        if not isinstance(meta, dict) or V not in meta or CAPS not in meta:
            return [self.error(rid, -32602, "params._meta must carry the envelope")]
        if self.args.refuse_first and not self.refused_once:
            self.refused_once = True
            data = {"supported": [MODERN], "requested": meta[V]}
            return [self.error(rid, -32022, "Unsupported protocol version", data)]
        if meta[V] != MODERN:
            data = {"supported": [MODERN], "requested": meta[V]}
            return [self.error(rid, -32022, "Unsupported protocol version", data)]
        handler = getattr(self, "m_" + str(method).replace("/", "_"), None)
        if handler is None:
            return [self.error(rid, -32601, "Method not found")]
        out: list[dict[str, Any]] = handler(rid, params)
        return out

    # --- methods --------------------------------------------------------------------------

    def m_server_discover(self, rid: Any, params: dict[str, Any]) -> list[dict[str, Any]]:
        self.discovers += 1
        caps = {"tools": {"listChanged": True}, "resources": {}, "prompts": {}}
        if self.args.no_list_changed:
            caps["tools"] = {}
        result = {
            "supportedVersions": [MODERN],
            "capabilities": caps,
            "cacheScope": "private",
            "ttlMs": 0,
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "1"}},
        }
        return [self.result(rid, result)]

    def _listing(self, key: str, items: list[Any]) -> dict[str, Any]:
        result: dict[str, Any] = {key: items}
        if self.args.ttl_ms is not None:
            result.update({"ttlMs": self.args.ttl_ms, "cacheScope": self.args.scope})
        return result

    def m_tools_list(self, rid: Any, params: dict[str, Any]) -> list[dict[str, Any]]:
        return [self.result(rid, self._listing("tools", self.tools))]

    def m_resources_list(self, rid: Any, params: dict[str, Any]) -> list[dict[str, Any]]:
        docs = [{"uri": "test://doc/1", "name": "doc1"}]
        return [self.result(rid, self._listing("resources", docs))]

    def m_prompts_list(self, rid: Any, params: dict[str, Any]) -> list[dict[str, Any]]:
        return [self.result(rid, self._listing("prompts", [{"name": "greet"}]))]

    def m_subscriptions_listen(self, rid: Any, params: dict[str, Any]) -> list[dict[str, Any]]:
        with self.lock:
            self.listens.append(rid)
        ack = {"_meta": {SUB: rid}, "notifications": params.get("notifications", {})}
        return [{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                 "params": ack}]  # fmt: skip

    def _asked(self, rid: Any, params: dict[str, Any], render: Any) -> list[dict[str, Any]]:
        """One input round: ask for what `--ask` names unless the answers are there."""
        answers = params.get("inputResponses")
        state = params.get("requestState")
        if answers is not None:
            text = json.dumps({"answers": answers, "state": state}, ensure_ascii=False)
            return [self.result(rid, render(text))]
        kind = self.args.ask
        if kind == "elicitation":
            prop = {"type": "string", "default": "Ada"}
            schema = {"type": "object", "properties": {"name": prop}}
            asked = {"message": "Your name?", "requestedSchema": schema}
            ask: dict[str, Any] = {"method": "elicitation/create", "params": asked}
        elif kind == "sampling":
            ask = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
        else:
            ask = {"method": "roots/list", "params": {}}
        arguments = params.get("arguments")
        tag = arguments.get("tag", "") if isinstance(arguments, dict) else ""
        result = {"resultType": "input_required", "inputRequests": {"q": ask},
                  "requestState": self.args.state + tag}  # fmt: skip
        return [{"jsonrpc": "2.0", "id": rid, "result": result}]

    def m_tools_call(self, rid: Any, params: dict[str, Any]) -> list[dict[str, Any]]:
        name = params.get("name")
        args = params.get("arguments") or {}

        def text(t: str) -> dict[str, Any]:
            return {"content": [{"type": "text", "text": t}]}

        if name == "echo" or name == "routed":
            return [self.result(rid, text(f"Echo: {args.get('message', '')}"))]
        if name == "ask":
            return self._asked(rid, params, text)
        if name == "forever":
            result = {"resultType": "input_required", "requestState": "again",
                      "inputRequests": {"q": {"method": "roots/list", "params": {}}}}  # fmt: skip
            return [{"jsonrpc": "2.0", "id": rid, "result": result}]
        if name == "state_only":
            rounds = int(params.get("requestState") or 0)
            if rounds >= 2:
                return [self.result(rid, text(f"done after {rounds}"))]
            result = {"resultType": "input_required", "requestState": str(rounds + 1)}
            return [{"jsonrpc": "2.0", "id": rid, "result": result}]
        if name == "change":
            self.tools.append(_tool("late_tool"))
            for sid in list(self.listens):
                note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                        "params": {"_meta": {SUB: sid}}}  # fmt: skip
                if self.on_change is not None:
                    self.on_change(sid, note)
            return [self.result(rid, text("changed"))]
        if name == "badtype":
            return [{"jsonrpc": "2.0", "id": rid, "result": {"resultType": "partial"}}]
        if name == "crash":
            os._exit(3)
        if name == "refuse":
            data = {"requiredCapabilities": {"sampling": {}}}
            return [self.error(rid, -32021, "sampling is required", data)]
        if name == "slow":
            return []  # never answered
        return [self.result(rid, {**text("unknown"), "isError": True})]

    def m_prompts_get(self, rid: Any, params: dict[str, Any]) -> list[dict[str, Any]]:
        def render(t: str) -> dict[str, Any]:
            return {"messages": [{"role": "user", "content": {"type": "text", "text": t}}]}

        return self._asked(rid, params, render)

    def m_resources_read(self, rid: Any, params: dict[str, Any]) -> list[dict[str, Any]]:
        uri = params.get("uri")

        def render(t: str) -> dict[str, Any]:
            return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": t}]}

        return self._asked(rid, params, render)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    p.add_argument("--dual", action="store_true", help="also answer initialize (legacy)")
    p.add_argument("--refuse-first", action="store_true", help="-32022 for the first request")
    p.add_argument("--ttl-ms", type=int, default=None)
    p.add_argument("--scope", default="private")
    p.add_argument("--ask", default="elicitation", choices=["elicitation", "sampling", "roots"])
    p.add_argument("--state", default='st "ü" {1}  \\u00e9')
    p.add_argument("--header-tools", action="store_true")
    p.add_argument("--no-list-changed", action="store_true")
    p.add_argument("--no-result-type", action="store_true")
    p.add_argument("--record", default="")
    return p


def main() -> None:
    args = parser().parse_args()
    core = Core(args)
    out = sys.stdout.buffer
    lock = threading.Lock()

    def send(message: dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        with lock:
            out.write(data)
            out.flush()

    core.on_change = lambda _sid, note: send(note)
    for raw in sys.stdin.buffer:
        if args.record:
            with Path(args.record).open("ab") as fh:
                fh.write(raw if raw.endswith(b"\n") else raw + b"\n")
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        for reply in core.handle(message):
            send(reply)


if __name__ == "__main__":
    main()
