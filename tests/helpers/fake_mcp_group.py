"""A stdio MCP server that leaves a grandchild behind, as a launcher such as `npx` does.

Usage: `fake_mcp_group.py PIDFILE [--grandchild-ignores-sigterm] [mcp_server.py options...]`.

Before serving, it starts a grandchild that inherits the three pipes and never reads stdin (so
end of input does not end it), optionally ignores SIGTERM, and lingers for at most 60 s. Once the
grandchild is ready (its signal disposition set), its pid is written to PIDFILE; only then does
the scripted server of `mcp_server.py` start, so a completed handshake means the file exists.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mcp_server

GRANDCHILD = (
    "import os, signal, sys, threading\n"
    "if sys.argv[1] == '1':\n"
    "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "fd = int(sys.argv[2]); os.write(fd, b'x'); os.close(fd)\n"
    "threading.Event().wait(60)\n"
)


def main() -> None:
    pidfile = Path(sys.argv[1])
    rest = sys.argv[2:]
    ignore = "--grandchild-ignores-sigterm" in rest
    rest = [a for a in rest if a != "--grandchild-ignores-sigterm"]
    read_end, write_end = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-c", GRANDCHILD, "1" if ignore else "0", str(write_end)],
        pass_fds=(write_end,),
    )
    os.close(write_end)
    os.read(read_end, 1)  # the grandchild is ready
    os.close(read_end)
    tmp = pidfile.with_suffix(".tmp")
    tmp.write_text(str(child.pid))
    tmp.replace(pidfile)
    sys.argv = [sys.argv[0], *rest]
    mcp_server.main()


if __name__ == "__main__":
    main()
