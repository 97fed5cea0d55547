"""Object-valued client capabilities in serve (ZC-SERVE-03): elicitation modes, notices and
compaction are offered by an object, and serve writes what needs them only to a client that
offered them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zeroclaw_ref.conformance.core.jsonlex import JSON
from zeroclaw_ref.conformance.core.transcript import load
from zeroclaw_ref.conformance.serve.rules import advertised, capability_problems, need_of

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


def _update(kind: str) -> JSON:
    update: JSON = {"sessionUpdate": kind}
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"update": update}}


def _elicit(mode: str) -> JSON:
    return {"jsonrpc": "2.0", "id": 0, "method": "elicitation/create", "params": {"mode": mode}}


@pytest.mark.req("ZC-SERVE-03", "ZC-CLIENT-33")
def test_object_capabilities_are_advertised_by_any_object_and_booleans_by_true() -> None:
    caps: JSON = {
        "fs": {"readTextFile": True, "writeTextFile": False},
        "elicitation": {"form": {}, "url": None},
        "session": {"notices": {"_meta": {}}, "compaction": False},
    }
    assert advertised(caps, "elicitation.form") and advertised(caps, "session.notices")
    assert not advertised(caps, "elicitation.url")  # null offers nothing
    assert not advertised(caps, "session.compaction")  # nor does false
    assert advertised(caps, "fs.readTextFile") and not advertised(caps, "fs.writeTextFile")
    assert not advertised(caps, "terminal") and not advertised({}, "elicitation.form")


@pytest.mark.req("ZC-SERVE-03", "ZC-CLIENT-33", "ZC-CLIENT-34", "ZC-CLIENT-35")
def test_the_need_of_each_gated_message() -> None:
    assert need_of(_elicit("form")) == "elicitation.form"
    assert need_of(_elicit("url")) == "elicitation.url"
    complete: JSON = {"jsonrpc": "2.0", "method": "elicitation/complete", "params": {}}
    assert need_of(complete) == "elicitation.url"
    assert need_of(_update("notice")) == "session.notices"
    assert need_of(_update("compaction_update")) == "session.compaction"
    assert need_of(_update("compaction_summary_chunk")) == "session.compaction"
    assert need_of(_update("agent_message_chunk")) is None
    read: JSON = {"jsonrpc": "2.0", "id": 1, "method": "fs/read_text_file", "params": {}}
    assert need_of(read) == "fs.readTextFile"
    # a response or a notification named like a gated request needs nothing
    assert need_of({"jsonrpc": "2.0", "method": "fs/read_text_file"}) is None


@pytest.mark.req("ZC-SERVE-03")
@pytest.mark.parametrize(
    ("scenario", "need"),
    [
        ("client-elicitation/form-decline", "elicitation.form"),
        ("client-elicitation/url-accept-then-complete", "elicitation.url"),
        ("client-updates/notice", "session.notices"),
        ("client-updates/compaction-update", "session.compaction"),
    ],
)
def test_a_scenario_without_the_client_need_is_a_problem(
    tmp_path: Path, scenario: str, need: str
) -> None:
    lines = (FIXTURES / "acp" / f"{scenario}.jsonl").read_text("utf-8").splitlines()
    assert not capability_problems(load(FIXTURES / "acp" / f"{scenario}.jsonl", FIXTURES))
    header = json.loads(lines[0])
    del header["client_needs"]
    bare = tmp_path / "acp" / "x" / "bare.jsonl"
    bare.parent.mkdir(parents=True)
    header["scenario"] = "acp/x/bare"
    bare.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", "utf-8")
    problems = capability_problems(load(bare, tmp_path))
    assert problems and all(need in p.message for p in problems), problems
