"""The scrubber of mcp.md §10.4 (MCP-CTX-06, MCP-CTX-07).

Applied to untrusted text that reaches a wrapper or an error text: URL query strings go, known
token shapes are redacted (without word boundaries, as ZeroClaw does), and the result is cut to
500 UTF-8 bytes plus `...`. `scrub_secrets` is steps 1 and 2 only (MCP-STDIO-21).
"""

from __future__ import annotations

import re
from typing import Final

_URL: Final = re.compile(r"https?://\S*")
# [MCP-CTX-06] step 2: the prefixes in their order, each needing at least one token character
_PREFIXES: Final = ("sk-", "xoxb-", "xoxp-", "ghp_", "gho_", "ghu_", "github_pat_", "AIza")
_TOKENS: Final = tuple(re.compile(re.escape(p) + r"[A-Za-z0-9_.:\-]+") for p in _PREFIXES)
MAX_BYTES: Final = 500


def _drop_query(match: re.Match[str]) -> str:
    span = match.group(0)
    cut = span.find("?")
    return span if cut < 0 else span[:cut]


def scrub_secrets(text: str) -> str:
    """Steps 1 and 2: drop URL query strings, redact token-shaped strings."""
    text = _URL.sub(_drop_query, text)
    for pattern in _TOKENS:
        text = pattern.sub("[REDACTED]", text)
    return text


def truncate_bytes(text: str, limit: int = MAX_BYTES) -> str:
    """Step 3: more than `limit` characters -> cut at byte `limit` (character boundary) + `...`."""
    if len(text) <= limit:
        return text
    raw = text.encode("utf-8")[:limit]
    return raw.decode("utf-8", errors="ignore") + "..."


def scrub(text: str) -> str:
    """[MCP-CTX-06] all three steps."""
    return truncate_bytes(scrub_secrets(text))
