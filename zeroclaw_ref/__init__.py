"""zeroclaw_ref: the Python reference implementation of ZeroClaw's agent protocols.

Layers (imports point downwards only; tests/architecture enforces it):

    L0  core/, wire/         primitives, vocabularies and codecs (stdlib only)
    L1  rpc/                 the threaded JSON-RPC peer (reader, writer, endpoint)
    L2  config/, store/, policy/
    L3  providers/, tools/, mcp/, engine/
    L4  acp/, gateway/, cron/, cli/
    --  conformance/         the golden-transcript oracle; stdlib only, imports nothing above

Nothing is re-exported from here.
"""

from __future__ import annotations

__version__ = "0.1.0"
