"""Properties of environment overrides (config.md §10)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import ConfigError, ConfigSnapshot
from zeroclaw_ref.config.schema import ROOT, MapOf, Table, lookup

# No file in this directory: every load starts from the embedded default.
_EMPTY_DIR = Path("/nonexistent-zeroclaw-ref-config-dir")


def _load(env: dict[str, str]) -> ConfigSnapshot:
    return load_config(_EMPTY_DIR, _EMPTY_DIR / "data", env)


INT_KEYS: list[tuple[str, int, int, Callable[[ConfigSnapshot], int]]] = [
    ("gateway__port", 1, 65535, lambda s: s.gateway.port),
    ("acp__max_sessions", 1, 1000, lambda s: s.acp.max_sessions),
    ("scheduler__tick_secs", 1, 3600, lambda s: s.scheduler.tick_secs),
    ("runtime_profiles__default__shell_timeout_secs", 1, 3600,
     lambda s: s.runtime_profiles["default"].shell_timeout_secs),
]  # fmt: skip

BOOL_KEYS: list[tuple[str, Callable[[ConfigSnapshot], bool]]] = [
    ("mcp__deferred_loading", lambda s: s.mcp.deferred_loading),
    ("scheduler__enabled", lambda s: s.scheduler.enabled),
    ("agents__default__acp_enable_mcp", lambda s: s.agents["default"].acp_enable_mcp),
    ("autonomy__workspace_only", lambda s: s.autonomy.workspace_only),
]


@pytest.mark.req("CFG-ENV-04", "CFG-ENV-09", "CFG-VALUE-01")
@settings(deadline=None, max_examples=60)
@given(data=st.data(), index=st.integers(0, len(INT_KEYS) - 1))
def test_any_in_range_integer_round_trips(data: st.DataObject, index: int) -> None:
    tail, low, high, read = INT_KEYS[index]
    value = data.draw(st.integers(low, high))
    sign = data.draw(st.sampled_from(["", "+"]))
    snapshot = _load({f"ZEROCLAW_{tail}": f"{sign}{value}"})
    assert read(snapshot) == value
    assert snapshot.overrides[tail.replace("__", ".")] == f"ZEROCLAW_{tail}"


@pytest.mark.req("CFG-ENV-09", "CFG-SCHEMA-06")
@settings(deadline=None, max_examples=40)
@given(value=st.integers().filter(lambda v: not 1 <= v <= 65535))
def test_any_out_of_range_port_is_an_error(value: int) -> None:
    with pytest.raises(ConfigError) as info:
        _load({"ZEROCLAW_gateway__port": str(value)})
    assert info.value.lines == (
        f"ZEROCLAW_gateway__port -> gateway.port: {value} is out of range (1..65535)",
    )


@pytest.mark.req("CFG-VALUE-01")
@settings(deadline=None, max_examples=60)
@given(
    index=st.integers(0, len(BOOL_KEYS) - 1),
    value=st.booleans(),
    spelling=st.sampled_from([str.lower, str.upper, str.title]),
)
def test_any_boolean_spelling_round_trips(index: int, value: bool, spelling: object) -> None:
    tail, read = BOOL_KEYS[index]
    assert callable(spelling)
    snapshot = _load({f"ZEROCLAW_{tail}": spelling(str(value))})
    assert read(snapshot) is value


def _is_schema_path(tail: str) -> bool:
    parts = tail.split("__")
    node = lookup(ROOT, parts)
    return node is not None and not isinstance(node, Table | MapOf)


@pytest.mark.req("CFG-ENV-01", "CFG-ENV-07")
@settings(deadline=None, max_examples=100)
@given(tail=st.from_regex(r"[a-z0-9_]{1,30}", fullmatch=True))
def test_a_tail_that_is_no_schema_path_is_an_error(tail: str) -> None:
    if _is_schema_path(tail) or tail.startswith(
        ("agents__", "risk_profiles__", "runtime_profiles__", "providers__", "mcp_bundles__",
         "mcp__servers")
    ):  # fmt: skip
        return
    with pytest.raises(ConfigError) as info:
        _load({f"ZEROCLAW_{tail}": "x"})
    assert len(info.value.lines) == 1
    assert info.value.lines[0].startswith(f"ZEROCLAW_{tail}")


@pytest.mark.req("CFG-ENV-01", "CFG-DIR-08")
@settings(deadline=None, max_examples=60)
@given(tail=st.from_regex(r"[A-Z][A-Za-z0-9_]{0,20}", fullmatch=True), value=st.text())
def test_a_tail_with_an_upper_case_letter_is_ignored(tail: str, value: str) -> None:
    assert _load({f"ZEROCLAW_{tail}": value}).overrides == {}
