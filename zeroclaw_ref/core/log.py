"""Logging to standard error only, WARN by default (ACP-TR-02, ACP-TR-03), with secrets
scrubbed from every record before it is formatted (ACP-UPD-12, POL-TOOL-06)."""

from __future__ import annotations

import logging
import sys

from zeroclaw_ref.core.scrub import clean_output


class _ScrubFilter(logging.Filter):
    """Render the message once, then scrub it, so arguments cannot smuggle a secret out."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = clean_output(record.getMessage())
        record.args = None
        return True


def configure(level: int = logging.WARNING) -> None:
    """Install one stderr handler on the package logger (idempotent)."""
    logger = logging.getLogger("zeroclaw_ref")
    logger.setLevel(level)
    if any(getattr(h, "_zeroclaw", False) for h in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_ScrubFilter())
    handler._zeroclaw = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.propagate = False
