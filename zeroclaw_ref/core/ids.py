"""Id factories: random UUID v4 in production, sequential UUID-shaped ids when deterministic.

Kinds in use: `session`, `approval`, `ask-user`, `tool-call`, `run` (an execution's run id, minted
by `resolve()`), and others named at their call sites (DESIGN §8).
"""

from __future__ import annotations

import threading
import uuid
from typing import Protocol


class IdFactory(Protocol):
    """Mints lowercase UUID v4 strings, one sequence per kind."""

    def new(self, kind: str) -> str:
        """A fresh id for `kind`."""
        ...


class RandomIds:
    """uuid4 for every kind (ACP-NEW-20, ACP-RT-03)."""

    def new(self, kind: str) -> str:
        return str(uuid.uuid4())


class SequentialIds:
    """Valid lowercase UUID v4 strings from one counter per kind.

    The first eight hex digits number the kind (in order of first use) and the last twelve
    count within it, so `00000001-0000-4000-8000-000000000003` is the third id of the first
    kind: stable across runs, still matching a `uuid` placeholder.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kinds: dict[str, int] = {}
        self._counts: dict[str, int] = {}

    def new(self, kind: str) -> str:
        with self._lock:
            kind_no = self._kinds.setdefault(kind, len(self._kinds) + 1)
            count = self._counts.get(kind, 0) + 1
            self._counts[kind] = count
        return f"{kind_no:08x}-0000-4000-8000-{count:012x}"
