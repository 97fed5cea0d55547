"""The schema judge (conformance/schema.py): which definition judges which frame, and how.

The test suite always has `jsonschema` (the `test` extra), so the judge is required here.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

from zeroclaw_ref.conformance.core import schema
from zeroclaw_ref.conformance.core.jsonlex import loads
from zeroclaw_ref.conformance.core.schema import SchemaError, exceptions, read_pin, validator

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures"
CAPS = {"loadSession": True, "promptCapabilities": {"image": False}}


@pytest.fixture(scope="module")
def judge() -> schema.Validator:
    found = validator(FIXTURES, required=True)
    assert found is not None
    return found


def rpc(**members: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", **members}


@pytest.mark.req("TX-LINT-03")
def test_the_pinned_copy_matches_its_recorded_digest_and_names_its_origin() -> None:
    pin = read_pin(FIXTURES)
    data = (FIXTURES / schema.SCHEMA_FILE).read_bytes()
    assert hashlib.sha256(data).hexdigest() == pin.sha256
    assert (pin.source, pin.version, pin.path) == (
        "npm @agentclientprotocol/sdk",
        "2.4.0",
        "schema/v1/schema.json",
    )
    assert pin.sha256 in (FIXTURES / "schema" / "README.md").read_text()


def test_the_judge_knows_the_stable_methods_of_both_sides(judge: schema.Validator) -> None:
    agent = judge.handled_by("agent")
    assert {"initialize", "session/new", "session/list", "session/delete"} <= agent
    assert {"session/set_mode", "session/set_config_option", "authenticate", "logout"} <= agent
    assert "session/stop" not in agent  # a ZeroClaw method, not the schema's
    assert {"session/update", "session/request_permission", "fs/read_text_file"} <= (
        judge.handled_by("client")
    )


def test_a_result_is_judged_by_the_method_of_the_request_it_answers(
    judge: schema.Validator,
) -> None:
    good = rpc(id=1, result={"sessions": [{"sessionId": "s", "cwd": "/w"}]})
    assert judge.problems("agent", good, "session/list") == []
    bad = rpc(id=1, result={"sessions": [{"sessionId": "s"}]})
    assert judge.problems("agent", bad, "session/list") == [
        "/result/sessions/0: 'cwd' is a required property [ListSessionsResponse (session/list)]"
    ]
    assert judge.problems("agent", bad, None) == []  # an unknown request: the envelope only
    assert judge.problems("agent", bad, "session/stop") == []  # not a schema method


def test_errors_requests_and_notifications_are_judged_by_their_own_definitions(
    judge: schema.Validator,
) -> None:
    assert judge.problems("agent", rpc(id=None, error={"code": -32700, "message": "x"})) == []
    assert judge.problems("agent", rpc(id=2, error={"code": "x"})) == [
        "/error: 'message' is a required property [Error (?)]",
        "/error/code: 'x' is not valid under any of the given schemas [Error (?)]",
    ]
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}}
    note = rpc(method="session/update", params={"sessionId": "s", "update": update})
    assert judge.problems("agent", note) == [
        "/params/update/content: 'text' is a required property "
        "[SessionNotification (session/update)]"
    ]
    ask = rpc(id="zc-out-0", method="session/request_permission", params={"sessionId": "s"})
    assert len(judge.problems("agent", ask)) == 2  # toolCall and options missing
    assert judge.problems("agent", rpc(method="_zeroclaw/history_trimmed", params=[])) == []
    assert judge.problems("agent", rpc(id=3, method="session/new", params={})) == [
        "/method: 'session/new' is not a request a client handles"
    ]


def test_the_envelope_is_checked_on_every_message(judge: schema.Validator) -> None:
    assert judge.problems("agent", rpc(id=1.5, result={}), "session/close")[0].startswith(
        "/id: 1.5 is not valid"
    )
    assert judge.problems("agent", {"id": 1, "result": {}}) == [
        "(root): 'jsonrpc' is a required property [envelope]"
    ]
    both = judge.problems("agent", rpc(id=1, result={}, error={"code": 1, "message": "m"}))
    assert "(root): a response has either result or error, not both" in both
    assert judge.problems("agent", [1]) == ["(root): a JSON-RPC message is an object"]


def test_real_numbers_from_the_strict_reader_are_judged_as_numbers(
    judge: schema.Validator,
) -> None:
    message = loads('{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1.5"}}')
    assert judge.problems("agent", message, "initialize") != []
    real = loads('{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1.5}}')
    assert judge.problems("agent", real, "initialize") != []  # a Real is a number, not an int


def test_a_conversation_types_responses_by_the_ids_the_client_used(
    judge: schema.Validator,
) -> None:
    talk = judge.conversation()
    assert talk.sent(rpc(id=7, method="initialize", params={"protocolVersion": 1})) == []
    assert talk.sent(rpc(id="7", method="session/list", params={})) == []
    initialize = rpc(id=7, result={"protocolVersion": 1, "agentCapabilities": CAPS})
    assert talk.received(initialize) == []
    assert talk.received(rpc(id="7", result={"sessions": "none"})) == [
        "/result/sessions: 'none' is not of type 'array' [ListSessionsResponse (session/list)]"
    ]
    assert talk.sent(rpc(id=8, method="session/new", params={"cwd": "/w"})) == [
        "/params: 'mcpServers' is a required property [NewSessionRequest (session/new)]"
    ]


def test_a_tool_call_id_is_unique_within_its_session_until_a_load_replays_it(
    judge: schema.Validator,
) -> None:
    def call(sid: str, tid: str) -> dict[str, object]:
        update = {"sessionUpdate": "tool_call", "toolCallId": tid, "title": "t"}
        return rpc(method="session/update", params={"sessionId": sid, "update": update})

    talk = judge.conversation()
    assert talk.received(call("a", "turn-cancelled-a")) == []
    assert talk.received(call("b", "turn-cancelled-a")) == []  # another session
    assert talk.received(call("a", "turn-cancelled-a")) == [
        "/params/update/toolCallId: 'turn-cancelled-a' is already a tool call of this session"
    ]
    talk.sent(rpc(id=1, method="session/load", params={"sessionId": "a"}))
    assert talk.received(call("a", "turn-cancelled-a")) == []  # the replay tells it again


@pytest.mark.req("TX-LINT-03")
def test_a_scenario_names_its_divergences_by_pointer(judge: schema.Validator) -> None:
    reason = "ids are echoed whatever their type (CONTRACT.md D2)"
    tolerate = exceptions({"x-schema-exception": {"/id": reason}})
    talk = judge.conversation(tolerate)
    talk.sent(rpc(id=[1], method="session/close", params={"sessionId": "s"}))
    assert talk.received(rpc(id=[1], error={"code": -32602, "message": "m"})) == []
    assert talk.received(rpc(id=[1], error={"code": "x", "message": "m"})) != []
    for bad in ([], {"id": "no pointer"}, {"/id": ""}):
        with pytest.raises(SchemaError):
            exceptions({"x-schema-exception": bad})
    assert exceptions({}) == {}


def test_without_jsonschema_the_runner_is_told_once_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "fixtures"
    shutil.copytree(FIXTURES / "schema", copy / "schema")
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # import fails
    monkeypatch.setattr(schema, "_said", set())  # as in a fresh process
    assert validator(copy) is None
    assert validator(copy) is None
    err = capsys.readouterr().err
    assert err.count("jsonschema package is not installed") == 1
    with pytest.raises(SchemaError, match="jsonschema"):
        validator(copy / ".." / "fixtures", required=True)


def test_a_copy_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "fixtures"
    shutil.copytree(FIXTURES / "schema", copy / "schema")
    target = copy / schema.SCHEMA_FILE
    document = json.loads(target.read_text())
    document["title"] = "changed"
    target.write_text(json.dumps(document))
    with pytest.raises(SchemaError, match="not the pinned"):
        validator(copy)
    assert validator(tmp_path / "no-schema") is None  # a corpus without a schema: no judge


@pytest.mark.peer("acp-typescript-sdk")
def test_the_pinned_copy_is_the_file_the_sdk_ships() -> None:
    from tests.conftest import require_peer

    package = Path(str(require_peer("acp-typescript-sdk"))).parent
    assert json.loads((package / "package.json").read_text())["version"] == "2.4.0"
    shipped = (package / "schema" / "v1" / "schema.json").read_bytes()
    assert shipped == (FIXTURES / schema.SCHEMA_FILE).read_bytes()
