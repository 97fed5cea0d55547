"""Extra behaviours for the scripted stdio MCP server, for the requirement tests of batch B.

Run as `python tests/helpers/fake_mcp_extra_b.py [options]`: it accepts every option of
`mcp_server.py` plus the ones below, and lists a few more tools. Standard library only.

- `--init-gate PATH`: when PATH exists as the server answers `initialize`, read one byte from it
  first (a FIFO the test writes to), so a test can hold a re-handshake open.
- `--notify-during-list`: send `notifications/tools/list_changed` before each `tools/list` reply.
- `--rich-tools`: give the `structured` tool the optional fields of a tool definition (title,
  annotations, an `outputSchema` its `structuredContent` does not satisfy, ...).

`ExtraHttp` (importable) is `FakeMcpHttp` with three more tools: `escaped` (a reply whose JSON
escapes make its raw body much larger than its decoded text), `blob` (a resource blob of
`bytes` decoded bytes) and `sse_hold` (an SSE reply, then the stream held open until the test
sets `release`, then `flood` more bytes before the end).

Extra tools: `argv` (the raw argument list, see `--probe-arg`), `cwd`, `notify_lists`,
`reply_and_exit`, `hold_grandchild` and `close_stdin` (answered on the reading thread, which
closes stdin first and then blocks).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

try:  # imported by the tests
    from tests.helpers import fake_mcp_http as _http
    from tests.helpers import mcp_server
except ImportError:  # run as a script: only the stdio server is used
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import mcp_server  # type: ignore[no-redef]

    _http = None  # type: ignore[assignment]

ORIGINAL_ARGV = list(sys.argv[1:])
EXTRA_TOOLS = ["argv", "cwd", "notify_lists", "reply_and_exit", "hold_grandchild", "close_stdin"]
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


def extra_config(*args: str, name: str = "peer", **fields: object) -> Any:
    """A server entry (`McpServerConfig`) that runs this script with `args`."""
    from zeroclaw_ref.config.model import McpServerConfig

    return McpServerConfig(
        name=name,
        command=sys.executable,
        args=(str(Path(__file__).resolve()), *args),
        **fields,  # type: ignore[arg-type]
    )


class ExtraServer(mcp_server.Server):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        self.tools += [self.tool(name) for name in EXTRA_TOOLS]
        if args.rich_tools:
            for tool in self.tools:
                if tool["name"] == "structured":
                    tool.update(RICH_FIELDS)

    def run(self) -> None:
        """The base loop, except that `close_stdin` is handled right here on the reader."""
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

    def m_initialize(self, rid: Any, params: dict[str, Any]) -> None:
        gate = self.args.init_gate
        if gate and Path(gate).exists():
            with Path(gate).open("rb") as fifo:
                fifo.read(1)
        super().m_initialize(rid, params)

    def m_tools_list(self, rid: Any, params: dict[str, Any]) -> None:
        if self.args.notify_during_list:
            self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        super().m_tools_list(rid, params)

    # --- extra tools ----------------------------------------------------------------------

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


if _http is not None:
    HTTP_TOOLS = [
        {"name": n, "inputSchema": {"type": "object"}} for n in ("escaped", "blob", "sse_hold")
    ]

    class ExtraHandler(_http.Handler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            message = json.loads(raw)
            known = self.headers.get("Mcp-Session-Id") in self.st.sessions
            if isinstance(message, dict) and message.get("method") == "tools/list" and known:
                self._record(message)
                self._json(_http._result(message["id"], {"tools": _http.TOOLS + HTTP_TOOLS}))
                return
            self.rfile = io.BytesIO(raw)  # the base handler reads the body again
            super().do_POST()

        def t_escaped(self, rid: Any, a: dict[str, Any]) -> None:
            reply = json.dumps(_http._text(rid, "\u00e9" * int(a["chars"])), ensure_ascii=True)
            if a.get("sse"):
                self._sse_start()
                self._chunk(f"event: message\ndata: {reply}\n\n")
                self._sse_end()
                return
            self._plain(200, reply.encode(), "application/json")

        def t_blob(self, rid: Any, a: dict[str, Any]) -> None:
            blob = base64.b64encode(b"\x00" * int(a["bytes"])).decode()
            resource = {"uri": "file:///data/big.bin", "mimeType": "application/octet-stream",
                        "blob": blob}  # fmt: skip
            self._json(
                _http._result(rid, {"content": [{"type": "resource", "resource": resource}]})
            )

        def t_sse_hold(self, rid: Any, a: dict[str, Any]) -> None:
            extra: ExtraState = self.server.extra  # type: ignore[attr-defined]
            self._sse_start()
            self._event(_http._text(rid, "early"), "h1")
            extra.released_in_time = extra.release.wait(10)
            with contextlib.suppress(OSError):
                self._chunk(": " + "f" * int(a.get("flood", 0)) + "\n\n")
                self._sse_end()
            extra.finished.set()

    class ExtraState:
        def __init__(self) -> None:
            self.release = threading.Event()
            self.finished = threading.Event()
            self.released_in_time = False

    class ExtraHttp(_http.FakeMcpHttp):
        """`FakeMcpHttp` serving `ExtraHandler`; `extra` holds the `sse_hold` events."""

        def __init__(self) -> None:
            self.state = _http.FakeState()
            self.extra = ExtraState()
            self.httpd = _http._Server(("127.0.0.1", 0), ExtraHandler)
            self.httpd.state = self.state
            self.httpd.extra = self.extra  # type: ignore[attr-defined]
            self.port = self.httpd.server_address[1]
            self.url = f"http://127.0.0.1:{self.port}/mcp"
            self.base = f"http://127.0.0.1:{self.port}"
            self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
            self.thread.start()

        def close(self) -> None:
            self.extra.release.set()
            super().close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--init-gate", default="")
    parser.add_argument("--notify-during-list", action="store_true")
    parser.add_argument("--rich-tools", action="store_true")
    parser.add_argument("--probe-arg", action="append", default=[], help="ignored; see `argv`")
    extra, rest = parser.parse_known_args()
    sys.argv = [sys.argv[0], *rest]
    base = argparse.Namespace()
    saved = mcp_server.Server
    try:
        # let the base parser read the remaining options, then run the extended server
        captured: dict[str, argparse.Namespace] = {}

        class Capture:
            def __init__(self, args: argparse.Namespace) -> None:
                captured["args"] = args

            def run(self) -> None:
                return

        mcp_server.Server = Capture  # type: ignore[misc,assignment]
        mcp_server.main()
        base = captured["args"]
    finally:
        mcp_server.Server = saved  # type: ignore[misc]
    for key, value in vars(extra).items():
        setattr(base, key, value)
    ExtraServer(base).run()


if __name__ == "__main__":
    main()
