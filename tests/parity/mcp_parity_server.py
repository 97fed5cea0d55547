"""The parity harness's stdio MCP server: `tests/helpers/mcp_server.py` serving named tools.

`python tests/parity/mcp_parity_server.py --tools read_file,write_file [mcp_server options]`
serves exactly the named tools (in that order; a call answers `called <name>`), plus the
helper's resources (`test://doc/0..2`, readable as `body of <uri>`) and its prompt (`greet`).
The helper's own options pass through unchanged.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.helpers import mcp_server


def main() -> None:
    argv = sys.argv[1:]
    names: list[str] = []
    if "--tools" in argv:
        at = argv.index("--tools")
        names = [n for n in argv[at + 1].split(",") if n]
        del argv[at : at + 2]
    sys.argv[1:] = argv
    mcp_server.BASE_TOOLS = names

    def called(self: mcp_server.Server, rid: Any, params: dict[str, Any]) -> None:
        name = params.get("name")
        if name in names:
            self.text(rid, f"called {name}")
        else:
            original(self, rid, params)

    original = mcp_server.Server.m_tools_call
    mcp_server.Server.m_tools_call = called  # type: ignore[method-assign]
    mcp_server.main()


if __name__ == "__main__":
    main()
