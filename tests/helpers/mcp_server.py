"""A scripted MCP server over stdio, standard library only (tests and the parity harness).

Run as `python -m tests.helpers.mcp_server [options]` or `python tests/helpers/mcp_server.py`.
Options shape the handshake and the listings; tools script the behaviours the client must
survive (crash mid-call, stderr flood, never answering, oversized lines, server→client
requests, list_changed). `--record FILE` appends every received message as one JSON line, so
tests can assert exactly what the client sent.

`--more-tools` lists the tools of the process and pipe tests as well: `argv` (the raw argument
list, see `--probe-arg`), `cwd`, `notify_lists`, `reply_and_exit`, `hold_grandchild` and
`close_stdin` (answered on the reading thread, which closes stdin first and then blocks).
Further options: `--init-gate PATH` (when PATH exists as `initialize` arrives, read one byte
from it first: a FIFO the test writes to, so a re-handshake can be held open),
`--notify-during-list` (a `notifications/tools/list_changed` before each `tools/list` reply) and
`--rich-tools` (the optional fields of a tool definition on `structured`, with an
`outputSchema` its `structuredContent` does not satisfy).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
SCHEMA = {"type": "object", "properties": {"message": {"type": "string"}}}
BASE_TOOLS = [
    "echo", "env", "add", "image", "audio", "blob", "link", "fail", "rpcerror", "crash",
    "stderr_spam",
    "slow", "sleep", "big", "oversized", "ping_client", "elicit", "roots", "notify", "collide",
    "change_tools", "grandchild", "structured", "cancel_ask",
]  # fmt: skip
MORE_TOOLS = ["argv", "cwd", "notify_lists", "reply_and_exit", "hold_grandchild", "close_stdin"]
RICH_FIELDS: dict[str, Any] = {
    "title": "Structured Thing",
    "annotations": {"readOnlyHint": True, "title": "annotated"},
    "outputSchema": {
        "type": "object",
        "properties": {"n": {"type": "string"}},
        "required": ["n", "absent"],
    },
    "execution": {"taskSupport": "forbidden"},
    "icons": [{"src": "https://example.invalid/i.png", "mimeType": "image/png"}],
    "_meta": {"vendor/key": 1},
}
ORIGINAL_ARGV = list(sys.argv[1:])


def more_tools_config(*args: str, name: str = "peer", **fields: Any) -> Any:
    """A server entry (`McpServerConfig`) running this script with `--more-tools` and `args`."""
    from zeroclaw_ref.config.model import McpServerConfig

    script = str(Path(__file__).resolve())
    return McpServerConfig(
        name=name, command=sys.executable, args=(script, "--more-tools", *args), **fields
    )


class Server:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = sys.stdout.buffer
        self.lock = threading.Lock()
        self.next_id = 0  # TypeScript servers start their own ids at 0
        self.waiting: dict[Any, tuple[threading.Event, list[Any]]] = {}
        more = MORE_TOOLS if args.more_tools else []
        self.tools = [self.tool(n) for n in BASE_TOOLS + more] + [
            self.tool(f"filler_{i:02d}") for i in range(args.fillers)
        ]
        if args.rich_tools:
            for tool in self.tools:
                if tool["name"] == "structured":
                    tool.update(RICH_FIELDS)
        self.first_line = True

    @staticmethod
    def tool(name: str) -> dict[str, Any]:
        return {"name": name, "description": f"the {name} tool", "inputSchema": dict(SCHEMA)}

    # --- output ---------------------------------------------------------------------------

    def send(self, message: Any) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        if self.first_line and self.args.bom:
            data = b"\xef\xbb\xbf" + data
        self.first_line = False
        with self.lock:
            self.out.write(data)
            self.out.flush()

    def result(self, rid: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def error(self, rid: Any, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})

    def ask(self, method: str, params: Any, rid: Any = None) -> Any:
        """Send a request to the client and wait for its answer (on a worker thread)."""
        if rid is None:
            rid = self.next_id
            self.next_id += 1
        done: tuple[threading.Event, list[Any]] = (threading.Event(), [])
        self.waiting[rid] = done
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        done[0].wait(30)
        return done[1][0] if done[1] else None

    # --- input ----------------------------------------------------------------------------

    def run(self) -> None:
        if self.args.stderr_banner:
            sys.stderr.write(self.args.stderr_banner + "\n")
            sys.stderr.flush()
        for raw in sys.stdin.buffer:
            if self.args.record:
                with Path(self.args.record).open("ab") as fh:
                    fh.write(raw if raw.endswith(b"\n") else raw + b"\n")
            try:
                message = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            params = message.get("params") or {}
            if message.get("method") == "tools/call" and params.get("name") == "close_stdin":
                os.close(0)  # before answering: the client's next write must find it closed
                self.text(message["id"], "stdin closing")
                threading.Event().wait()  # stay alive until terminated
            if "method" not in message:
                waiter = self.waiting.pop(message.get("id"), None)
                if waiter is not None:
                    waiter[1].append(message)
                    waiter[0].set()
                continue
            if "id" not in message:
                self.notification(message["method"], message.get("params"))
                continue
            threading.Thread(target=self.request, args=(message,), daemon=True).start()
        if self.args.linger:
            threading.Event().wait(self.args.linger)

    def notification(self, method: str, params: Any) -> None:
        if method == "notifications/initialized" and self.args.list_changed_after_init:
            self.tools.append(self.tool("late_tool"))
            self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

    def request(self, message: dict[str, Any]) -> None:
        rid, method = message["id"], message["method"]
        params = message.get("params") or {}
        handler = getattr(self, "m_" + method.replace("/", "_"), None)
        if handler is None:
            self.error(rid, -32601, "Method not found")
            return
        handler(rid, params)

    # --- methods --------------------------------------------------------------------------

    def m_initialize(self, rid: Any, params: dict[str, Any]) -> None:
        a = self.args
        if a.init_gate and Path(a.init_gate).exists():
            with Path(a.init_gate).open("rb") as fifo:
                fifo.read(1)
        if a.init == "silent":
            return
        if getattr(self, "refuse_initialize", False):
            self.error(rid, -32600, "Invalid request: initialize must come first")
            return
        if a.init == "reject":
            self.error(rid, -32602, "unsupported client")
            return
        if a.init == "invalid":
            self.result(rid, "not an object")
            return
        result: dict[str, Any] = {
            "capabilities": json.loads(a.caps),
            "serverInfo": {"name": "scripted", "version": "1"},
            "instructions": "be nice",
        }
        if a.version != "missing":
            try:
                result["protocolVersion"] = json.loads(a.version)  # e.g. null, 7, "x"
            except ValueError:
                result["protocolVersion"] = a.version
        self.result(rid, result)

    def m_server_discover(self, rid: Any, params: dict[str, Any]) -> None:
        """The era probe, answered as a legacy server would (`--discover` picks how)."""
        mode = self.args.discover
        if mode == "silent":
            return
        if mode == "strict":  # a server that takes nothing but initialize first, ever
            self.refuse_initialize = True
            self.error(rid, -32600, "Invalid request: not initialized")
            return
        if mode == "exit":
            os._exit(0)
        if mode == "invalid":
            self.error(rid, -32602, "Invalid params")
        elif mode == "bare-32022":
            self.error(rid, -32022, "version?")  # a code alone, without data: no evidence
        elif mode == "legacy-32022":
            data = {"supported": ["2025-11-25"], "requested": "2026-07-28"}
            error = {"code": -32022, "message": "use initialize", "data": data}
            self.send({"jsonrpc": "2.0", "id": rid, "error": error})
        elif mode == "result":
            self.result(rid, {"supportedVersions": ["2025-11-25"], "capabilities": {}})
        else:
            self.error(rid, -32601, "Method not found")

    def m_tools_list(self, rid: Any, params: dict[str, Any]) -> None:
        if self.args.notify_during_list:
            self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        a = self.args
        if a.tools_list == "error":
            self.error(rid, -32603, "listing broke")
            return
        if a.tools_list == "noresult":
            self.send({"jsonrpc": "2.0", "id": rid})
            return
        if a.tools_list == "bad":
            self.result(rid, {"tools": "nope"})
            return
        size = a.page_size or len(self.tools)
        if a.tools_list == "repeat":
            self.result(rid, {"tools": self.tools[:size], "nextCursor": "same"})
            return
        start = int(params.get("cursor") or 0)
        result: dict[str, Any] = {"tools": self.tools[start : start + size]}
        if a.tools_list == "endless" or start + size < len(self.tools):
            result["nextCursor"] = str(start + size)
        self.result(rid, result)

    def m_resources_list(self, rid: Any, params: dict[str, Any]) -> None:
        docs = [
            {"uri": f"test://doc/{i}", "name": f"doc{i}", "mimeType": "text/plain"}
            for i in range(3)
        ]
        if params.get("cursor") == "2":
            self.result(rid, {"resources": docs[2:]})
        else:
            self.result(rid, {"resources": docs[:2], "nextCursor": "2"})

    def m_resources_read(self, rid: Any, params: dict[str, Any]) -> None:
        uri = params.get("uri")
        self.result(
            rid, {"contents": [{"uri": uri, "mimeType": "text/plain", "text": f"body of {uri}"}]}
        )

    def m_prompts_list(self, rid: Any, params: dict[str, Any]) -> None:
        self.result(rid, {"prompts": [{"name": "greet", "arguments": [{"name": "who"}]}]})

    def m_prompts_get(self, rid: Any, params: dict[str, Any]) -> None:
        who = (params.get("arguments") or {}).get("who", "you")
        text = f"hello {who}"
        self.result(
            rid, {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
        )

    def m_tools_call(self, rid: Any, params: dict[str, Any]) -> None:
        name, args = params.get("name"), params.get("arguments") or {}
        handler = getattr(self, "t_" + str(name), None)
        if handler is None:
            self.result(
                rid,
                {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True},
            )
            return
        handler(rid, args)

    # --- tools ----------------------------------------------------------------------------

    def text(self, rid: Any, text: str) -> None:
        self.result(rid, {"content": [{"type": "text", "text": text}]})

    def t_echo(self, rid: Any, a: dict[str, Any]) -> None:
        self.text(rid, f"Echo: {a.get('message', '')}")

    def t_env(self, rid: Any, a: dict[str, Any]) -> None:
        self.text(rid, os.environ.get(str(a.get("name")), "<unset>"))

    def t_add(self, rid: Any, a: dict[str, Any]) -> None:
        self.text(rid, str(a.get("a", 0) + a.get("b", 0)))

    def t_image(self, rid: Any, a: dict[str, Any]) -> None:
        data = base64.b64encode(PNG_1X1).decode()
        self.result(
            rid,
            {"content": [{"type": "image", "data": data, "mimeType": a.get("mime", "image/png")}]},
        )

    def t_audio(self, rid: Any, a: dict[str, Any]) -> None:
        self.result(
            rid, {"content": [{"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}]}
        )

    def t_blob(self, rid: Any, a: dict[str, Any]) -> None:
        blob = base64.b64encode(b"%PDF-1.7 test").decode()
        resource = {"uri": "file:///reports/q3.pdf", "mimeType": "application/pdf", "blob": blob}
        self.result(rid, {"content": [{"type": "resource", "resource": resource}]})

    def t_link(self, rid: Any, a: dict[str, Any]) -> None:
        self.result(rid, {"content": [{"type": "resource_link", "uri": "file:///x", "name": "x"}]})

    def t_structured(self, rid: Any, a: dict[str, Any]) -> None:
        self.result(
            rid, {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"n": 1}}
        )

    def t_fail(self, rid: Any, a: dict[str, Any]) -> None:
        self.result(
            rid,
            {"content": [{"type": "text", "text": a.get("message", "it failed")}], "isError": True},
        )

    def t_rpcerror(self, rid: Any, a: dict[str, Any]) -> None:
        self.error(rid, -32602, "bad arguments: ?x")

    def t_crash(self, rid: Any, a: dict[str, Any]) -> None:
        sys.stderr.write(a.get("stderr", "peer: fatal: cannot open state database") + "\n")
        sys.stderr.flush()
        os._exit(int(a.get("code", 3)))

    def t_stderr_spam(self, rid: Any, a: dict[str, Any]) -> None:
        size = int(a.get("bytes", 2_000_000))
        line = b"x" * 1023 + b"\n"
        for _ in range(size // 1024):
            sys.stderr.buffer.write(line)
        sys.stderr.buffer.flush()
        self.text(rid, "spammed")

    def t_slow(self, rid: Any, a: dict[str, Any]) -> None:
        return  # never answers

    def t_sleep(self, rid: Any, a: dict[str, Any]) -> None:
        threading.Event().wait(float(a.get("seconds", 0.2)))
        self.text(rid, "slept")

    def t_big(self, rid: Any, a: dict[str, Any]) -> None:
        self.text(rid, "b" * int(a.get("bytes", 2_000_000)))

    def t_oversized(self, rid: Any, a: dict[str, Any]) -> None:
        self.text(rid, "o" * int(a.get("bytes", 10_000)))

    def t_ping_client(self, rid: Any, a: dict[str, Any]) -> None:
        answer = self.ask("ping", None)
        self.result(rid, {"content": [{"type": "text", "text": json.dumps(answer)}]})

    def t_elicit(self, rid: Any, a: dict[str, Any]) -> None:
        params = {
            "message": "Your name?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "default": "Ada"}},
            },
        }
        params.update(a.get("extra", {}))
        answer = self.ask("elicitation/create", params)
        self.result(rid, {"content": [{"type": "text", "text": json.dumps(answer)}]})

    def t_roots(self, rid: Any, a: dict[str, Any]) -> None:
        answer = self.ask(a.get("method", "roots/list"), {})
        self.result(rid, {"content": [{"type": "text", "text": json.dumps(answer)}]})

    def t_notify(self, rid: Any, a: dict[str, Any]) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "warning", "data": "careful"},
            }
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}})
        self.send([{"jsonrpc": "2.0", "method": "notifications/custom", "params": {"x": 1}}])
        self.send("just a string")
        sys.stdout.buffer.write(b"not json at all\n")
        self.text(rid, "notified")

    def t_cancel_ask(self, rid: Any, a: dict[str, Any]) -> None:
        """Ask, cancel the ask, then report whether the client answered it anyway."""
        done: tuple[threading.Event, list[Any]] = (threading.Event(), [])
        self.waiting["ask-1"] = done
        params = {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}
        self.send(
            {"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": params}
        )
        threading.Event().wait(0.05)
        cancel = {"requestId": "ask-1", "reason": "changed my mind"}
        self.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        answered = done[0].wait(float(a.get("wait", 1.0)))
        self.text(rid, "answered" if answered else "silent")

    def t_collide(self, rid: Any, a: dict[str, Any]) -> None:
        answer = self.ask("ping", None, rid=rid)  # a server request reusing the call's id
        self.result(rid, {"content": [{"type": "text", "text": json.dumps(answer)}]})

    def t_change_tools(self, rid: Any, a: dict[str, Any]) -> None:
        self.tools = [t for t in self.tools if t["name"] != "add"] + [self.tool("added")]
        self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        self.text(rid, "changed")

    def t_grandchild(self, rid: Any, a: dict[str, Any]) -> None:
        # a grandchild inherits stdout and keeps it open after this process exits
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(2)"], stdin=subprocess.DEVNULL
        )
        os._exit(int(a.get("code", 5)))

    # --- the tools of --more-tools ----------------------------------------------------------

    def t_argv(self, rid: Any, a: dict[str, Any]) -> None:
        self.text(rid, json.dumps(ORIGINAL_ARGV))

    def t_cwd(self, rid: Any, a: dict[str, Any]) -> None:
        self.text(rid, str(Path.cwd()))

    def t_notify_lists(self, rid: Any, a: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
        self.send({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
        self.text(rid, "lists changed")

    def t_reply_and_exit(self, rid: Any, a: dict[str, Any]) -> None:
        self.text(rid, "x" * int(a.get("bytes", 10)))
        os._exit(0)

    def t_hold_grandchild(self, rid: Any, a: dict[str, Any]) -> None:
        # the grandchild inherits stdout and stderr and outlives nothing but its sleep; it leaves
        # the server's process group, so that closing (which signals the group) cannot reach it
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.text(rid, str(child.pid))


# How the era probe is answered: as legacy servers do (an error, silence, an exit, a refusal of
# everything but initialize first), or with things that are no modern evidence either.
DISCOVER_MODES = ["error", "silent", "exit", "strict", "invalid", "bare-32022", "legacy-32022"]
DISCOVER_MODES.append("result")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", default="2025-11-25")
    parser.add_argument(
        "--caps", default='{"tools":{"listChanged":true},"resources":{},"prompts":{}}'
    )
    parser.add_argument("--init", default="ok", choices=["ok", "silent", "reject", "invalid"])
    parser.add_argument(
        "--discover",
        default="error",
        choices=DISCOVER_MODES,
    )
    parser.add_argument(
        "--tools-list",
        default="ok",
        choices=["ok", "error", "noresult", "bad", "repeat", "endless"],
    )
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--fillers", type=int, default=0)
    parser.add_argument("--bom", action="store_true")
    parser.add_argument("--list-changed-after-init", action="store_true")
    parser.add_argument("--record", default="")
    parser.add_argument("--stderr-banner", default="")
    parser.add_argument("--linger", type=float, default=0.0, help="stay alive after stdin closes")
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--more-tools", action="store_true")
    parser.add_argument("--init-gate", default="")
    parser.add_argument("--notify-during-list", action="store_true")
    parser.add_argument("--rich-tools", action="store_true")
    parser.add_argument("--probe-arg", action="append", default=[], help="ignored; see `argv`")
    args = parser.parse_args()
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    Server(args).run()


if __name__ == "__main__":
    main()
