"""The approval requirement table (policy.md §3.2) and the operator port (§3.3).

`ApprovalManager.requirement()` is pure; reaching an operator is the `Approver`'s job, which
each interaction mode implements (ACP back-channel, terminal) or lacks (mode `none`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON, dumps


class Requirement(Enum):
    NOT_REQUIRED = "not_required"
    APPROVED = "approved"
    PROMPT = "prompt"


class Decision(Enum):
    """What an operator (or the lack of one) decided for one call (POL-APPROVE-10)."""

    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    REJECT = "reject"
    REPLACE = "replace"
    NO_DECISION = "no_decision"
    CANCELLED = "turn_cancelled"  # the turn's cancel fired while asking (ACP-PERM-13)


@dataclass(frozen=True, slots=True)
class Answer:
    decision: Decision
    replacement: str = ""


class Approver(Protocol):
    """Reaches an operator for one call; must return NO_DECISION rather than raise."""

    def approve(self, tool: str, arguments: JSON, cancel: CancelToken) -> Answer: ...


# [POL-APPROVE-07] the result text of a prompt nobody could answer.
def runtime_denial_text(tool: str) -> str:
    return (
        f"Tool call not executed: '{tool}' requires approval and no operator decision was "
        "available, so the runtime denied it by policy. This was not a user's decision."
    )


DENIED_BY_USER = "Denied by user."  # [POL-APPROVE-10] [ACP-PERM-10] Table 6-2


class ApprovalManager:
    """Decides whether a call needs an operator; owns the session allow-list (POL-APPROVE-11)."""

    def __init__(
        self,
        level: str,
        auto_approve: tuple[str, ...],
        always_ask: tuple[str, ...],
        interaction: str,
        approver: Approver | None,
    ) -> None:
        self.level = level
        self.auto_approve = auto_approve
        self.always_ask = always_ask
        self.interaction = interaction
        self.approver = approver
        self._allowlist: set[str] = set()
        self._lock = threading.Lock()

    @property
    def session_allowlist(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(sorted(self._allowlist))

    def allow_always(self, name: str) -> None:
        with self._lock:
            self._allowlist.add(name)

    def requirement(self, name: str) -> Requirement:
        """[POL-APPROVE-01] first matching step wins; `*` is the only wildcard."""
        if self.level == "read_only":
            return Requirement.NOT_REQUIRED
        if "*" in self.always_ask or name in self.always_ask:
            return Requirement.PROMPT
        if self.level == "full":
            return Requirement.APPROVED
        if "*" in self.auto_approve or name in self.auto_approve:
            return Requirement.APPROVED
        with self._lock:
            if name in self._allowlist:
                return Requirement.APPROVED
        return Requirement.PROMPT


# [POL-APPROVE-16] keys whose values are never shown
_SENSITIVE = (
    "secret", "password", "passwd", "token", "api_key", "api-key", "apikey", "auth", "bearer",
    "private_key", "private-key", "privatekey", "credential",
)  # fmt: skip
RUNTIME_FLAGS = frozenset({"approved"})  # flags the runtime injects for its own bookkeeping
_ELLIPSIS = "…"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + _ELLIPSIS


def summarize_arguments(arguments: JSON, skip: frozenset[str] = frozenset()) -> str:
    """[POL-APPROVE-16] `path` first, other keys sorted, values cut at 80 characters, secrets
    redacted; a non-object as compact JSON cut at 120; `(no arguments)` when nothing is left."""
    if not isinstance(arguments, dict):
        return _cut(dumps(arguments), 120)
    keys = sorted(k for k in arguments if k not in skip)
    if not keys:
        return "(no arguments)"
    if "path" in keys:
        keys.remove("path")
        keys.insert(0, "path")
    pairs = []
    for key in keys:
        value = arguments[key]
        if any(marker in key.lower() for marker in _SENSITIVE):
            shown = "[redacted]"  # redaction wins over truncation
        else:
            shown = _cut(value if isinstance(value, str) else dumps(value), 80)
        pairs.append(f"{key}: {shown}")
    return ", ".join(pairs)
