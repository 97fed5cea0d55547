"""The fake MCP servers the runner plays on a scenario's peer channels (transcripts.md §8).

A scenario that declares ``channels`` has the runner stand in for MCP servers: it listens
before the IUT starts and writes only what the frames say ([TX-PEER-01], [TX-PEER-02]).
Nothing here decides a verdict: a peer queues what the IUT wrote (inbox.py) and the runner
(core/runner.py) matches it as it matches ``acp``. Reading order: inbox.py (the queue every
peer shares), stdio.py with relay.py (the script the IUT starts as its MCP server), then
httpwire.py and httppeers.py (Streamable HTTP and legacy HTTP+SSE).
"""

from __future__ import annotations

from pathlib import Path

# [TX-PEER-05] the single-file script a stdio channel's IUT launches; bound as ${RELAY}.
RELAY_SCRIPT = Path(__file__).resolve().with_name("relay.py")
