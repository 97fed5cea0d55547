"""Pinned resources (mcp.md §10.3, MCP-POL-02)."""

from __future__ import annotations

import pytest

from tests.helpers.fake_mcp import FakeMcp, FakeServer
from zeroclaw_ref.mcp.sections import pinned_section
from zeroclaw_ref.policy.access import ToolAccessPolicy

OPEN = ToolAccessPolicy(None, frozenset(), None)


def _fake() -> FakeMcp:
    def text(body: str) -> dict[str, object]:
        return {"contents": [{"uri": "u", "mimeType": "text/plain", "text": body}]}

    return FakeMcp(
        {
            "docs": FakeServer(resources=[], contents={"a": text("A"), "b": text("B")}),  # type: ignore[dict-item]
            "plain": FakeServer(),
            "down": FakeServer(resources=[], connected=False),
        }
    )


@pytest.mark.req("MCP-PIN-01", "MCP-PIN-04")
def test_pins_are_read_in_grant_then_configuration_order() -> None:
    fake = _fake()
    section = pinned_section(fake, [("docs", ("b", "a"))], OPEN)
    assert section == (
        "## Pinned MCP Resources\n\n"
        '<mcp-resource server="docs" uri="docs__b" mime="text/plain" '
        'trust="untrusted-external">\nB\n</mcp-resource>\n'
        '<mcp-resource server="docs" uri="docs__a" mime="text/plain" '
        'trust="untrusted-external">\nA\n</mcp-resource>\n'
    )
    assert [c[0] for c in fake.calls] == ["resources/read", "resources/read"]


@pytest.mark.req("MCP-PIN-02", "MCP-POL-02")
def test_a_denied_pin_is_skipped_without_being_read(caplog: pytest.LogCaptureFixture) -> None:
    fake = _fake()
    policy = ToolAccessPolicy(None, frozenset({"docs__a"}), None)
    assert "docs__a" not in pinned_section(fake, [("docs", ("a", "b"))], policy)
    assert fake.calls == [("resources/read", "docs__b")]
    assert "docs__a" in caplog.text


@pytest.mark.req("MCP-PIN-03", "MCP-PIN-04")
def test_unreadable_pins_are_skipped_and_nothing_read_gives_an_empty_section(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pins = [("plain", ("x",)), ("down", ("y",)), ("docs", ("missing",)), ("nowhere", ("z",))]
    assert pinned_section(_fake(), pins, OPEN) == ""
    assert caplog.text.count("skipping pinned resource") == 4
