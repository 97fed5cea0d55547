"""Relay between an IUT and the conformance runner for one stdio MCP peer ([TX-PEER-05]).

Usage: python relay.py HOST:PORT:TOKEN

A single-file, stdlib-only script: the IUT starts it as an MCP server. Lines
read on stdin go to the runner; bytes the runner sends go to stdout or stderr.
On stdin EOF it reports ``eof`` and exits 0, unless the channel option
``on_eof`` is ``ignore``, in which case it runs until killed.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import sys
import threading


def _pump_stdin(conn: socket.socket, on_eof: str) -> None:
    stdin = sys.stdin.buffer
    for line in iter(stdin.readline, b""):
        conn.sendall(json.dumps({"b64": base64.b64encode(line).decode()}).encode() + b"\n")
    conn.sendall(b'{"eof": true}\n')
    if on_eof != "ignore":
        os._exit(0)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: relay.py HOST:PORT:TOKEN\n")
        return 2
    host, port, token = argv[1].rsplit(":", 2)
    conn = socket.create_connection((host, int(port)))
    conn.sendall(token.encode() + b"\n")
    reader = conn.makefile("rb")
    hello = json.loads(reader.readline() or b"{}")
    threading.Thread(target=_pump_stdin, args=(conn, str(hello.get("on_eof"))), daemon=True).start()
    for raw in reader:
        command = json.loads(raw)
        if "b64" in command:
            out = sys.stderr.buffer if command.get("stream") == "stderr" else sys.stdout.buffer
            out.write(base64.b64decode(command["b64"]))
            out.flush()
        elif command.get("close"):
            sys.stdout.buffer.flush()
            os.close(1)
        elif "kill" in command:
            status = command["kill"]
            if status is None:
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(int(status))
    # the runner went away: nothing left to relay
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
