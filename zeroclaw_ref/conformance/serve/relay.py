"""``serve --connect PATH``: the agent command a client launches under ``serve --suite``.

Usage (either form): ``python -m zeroclaw_ref.conformance serve --connect PATH`` or
``python serve/relay.py PATH``. A single-file, stdlib-only script: it connects to the
coordinator's UNIX socket and pumps bytes both ways, its stdin to the socket and
the socket to its stdout, so the coordinator sees exactly what the client wrote
([ZC-SERVE-09]). End of stdin half-closes the socket (the client closed its
output); end of the socket (the coordinator is done with the scenario) ends the
relay with status 0.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading


def _pump_stdin(conn: socket.socket) -> None:
    while True:
        try:
            chunk = os.read(0, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            break
        try:
            conn.sendall(chunk)
        except OSError:
            return
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_WR)


def relay(path: str) -> int:
    """Connect to ``path`` and pump until the coordinator closes the connection."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError as exc:
        sys.stderr.write(f"serve --connect: cannot connect to {path}: {exc.strerror}\n")
        return 2
    threading.Thread(target=_pump_stdin, args=(conn,), daemon=True).start()
    while True:
        try:
            chunk = conn.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            break
        view = memoryview(chunk)
        while view:
            try:
                written = os.write(1, view)
            except OSError:
                return 0  # the client stopped reading; the coordinator judges that
            view = view[written:]
    conn.close()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: relay.py SOCKET\n")
        sys.exit(2)
    # os._exit: a daemon thread may still block on stdin, which must not delay the exit
    os._exit(relay(sys.argv[1]))
