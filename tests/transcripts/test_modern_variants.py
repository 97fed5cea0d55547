"""Every MCP transcript that holds in both eras has a 2026-07-28 variant beside it, derived by
tools/modern_corpus.py (issue 16; mcp.md §14): discovery in place of the handshake, the rest
unchanged. The variants are checked in and run with the corpus; these tests keep them in step
with their legacy scenarios and check what the derivation promises."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "modern_corpus", REPO / "tools" / "modern_corpus.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["modern_corpus"] = module
    spec.loader.exec_module(module)
    return module


def _frames(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.req("MCP-MOD-01", "MCP-MOD-02")
def test_the_variants_are_in_step_with_their_legacy_scenarios(
    corpus: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    status = corpus.main(["--check"])
    assert status == 0, f"run `python tools/modern_corpus.py`:\n{capsys.readouterr().err}"


def test_each_legacy_scenario_has_a_variant_or_a_reason(corpus: ModuleType) -> None:
    derived, legacy = [], []
    for path, why, text in corpus.variants():
        (legacy if why else derived).append(path)
        assert bool(why) != bool(text), path
    assert len(derived) >= 30 and legacy  # most behaviour holds in both eras


@pytest.mark.req("MCP-MOD-05", "MCP-MOD-10", "MCP-MOD-14")
def test_a_variant_has_no_handshake_and_pins_the_envelope(corpus: ModuleType) -> None:
    for path, why, _ in corpus.variants():
        if why:
            continue
        frames = _frames(corpus.target_of(path))
        channels = corpus._channels(frames[0])
        http = {n for n, c in channels.items() if c.get("transport") == "http"}
        sent = [(f.get("ch"), f["expect"]) for f in frames[1:] if "expect" in f and "ch" in f]
        methods = [m.get("method") for _, m in sent]
        assert "initialize" not in methods and "notifications/initialized" not in methods
        for _, message in sent:
            if message.get("method") == "server/discover":
                meta = message["params"]["_meta"]
                assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28", path
        for frame in frames[1:]:
            if frame.get("ch") in http and "method" in frame.get("expect", {}):
                headers = frame["http"]["headers"]
                assert headers["MCP-Protocol-Version"] == "2026-07-28", path
                assert headers["Mcp-Method"] == frame["expect"]["method"], path


@pytest.mark.req("MCP-MOD-01")
def test_a_respawn_is_discovered_again_with_the_ids_moved_down(corpus: ModuleType) -> None:
    legacy = REPO / "fixtures" / "mcp" / "recovery" / "stdio-crash-then-respawn.jsonl"
    variant = _frames(corpus.target_of(legacy))
    ids = [
        f["expect"]["id"]
        for f in variant[1:]
        if f.get("ch") == "fs" and "id" in f.get("expect", {})
    ]
    methods = [
        f["expect"]["method"]
        for f in variant[1:]
        if f.get("ch") == "fs" and "id" in f.get("expect", {})
    ]
    assert methods.count("server/discover") == 2  # the first start and the respawn
    assert ids == list(range(1, len(ids) + 1))  # one id per request, none skipped
