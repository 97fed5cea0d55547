"""Approvers for engine tests: stand-ins for an operator who always answers the same way."""

from __future__ import annotations

from zeroclaw_ref.core.cancel import CancelToken
from zeroclaw_ref.core.jsontypes import JSON
from zeroclaw_ref.policy.approvals import Answer, Decision


class OkApprover:
    """Allows every call once, the way a permissive operator would (POL-APPROVE-10)."""

    def approve(self, tool: str, arguments: JSON, cancel: CancelToken) -> Answer:
        return Answer(Decision.ALLOW_ONCE)
