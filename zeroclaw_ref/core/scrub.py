"""Credential scrubbing (acp.md ACP-UPD-12) and token redaction (policy.md POL-TOOL-06).

Both run on every text that leaves the process through the ACP wire or a log line.
"""

from __future__ import annotations

import re
from typing import Final

# [ACP-UPD-12] the key/value credential pattern, matched case-insensitively.
_CREDENTIAL: Final = re.compile(
    r"""(authorization|token|api[_-]?key|password|secret|user[_-]?key|bearer|credential"""
    r"""|set[_-]?cookie|cookie)["']?\s*[:=]\s*(?:"([^"]{8,})"|'([^']{8,})'"""
    r"""|([a-zA-Z0-9_\-./+=]{8,}))""",
    re.IGNORECASE,
)

# [POL-TOOL-06] provider-style tokens, replaced whole.
_TOKEN: Final = re.compile(r"(?:sk-|xoxb-|xoxp-|ghp_|gho_|ghu_|github_pat_|AIza)[A-Za-z0-9\-_.:]*")


def _replace_credential(match: re.Match[str]) -> str:
    key = match.group(1)
    value = match.group(2) or match.group(3) or match.group(4) or ""
    text = match.group(0)
    head = value[:4]
    # [ACP-UPD-12] Table 5-5: the separator and quoting of the match decide the shape.
    if ":" in text:
        return f'"{key}": "{head}*[REDACTED]"' if '"' in text else f"{key}: {head}*[REDACTED]"
    return f'{key}="{head}*[REDACTED]"' if '"' in text else f"{key}={head}*[REDACTED]"


def scrub_credentials(text: str) -> str:
    """[ACP-UPD-12] replace key/value credentials, keeping four characters of the value."""
    return _CREDENTIAL.sub(_replace_credential, text)


def redact_tokens(text: str) -> str:
    """[POL-TOOL-06] replace provider-style tokens by `[REDACTED]`."""
    return _TOKEN.sub("[REDACTED]", text)


def clean_output(text: str) -> str:
    """Token redaction, then credential scrubbing: the order of ACP-UPD-11."""
    return scrub_credentials(redact_tokens(text))
