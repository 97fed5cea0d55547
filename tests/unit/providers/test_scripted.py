"""The scripted provider's replay, ids, failures and record file (config.md CFG-PROV-11..15)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zeroclaw_ref.config.model import ProviderConfig, ScriptToolCall, ScriptTurn
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.providers.base import (
    Done,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    TextChunk,
    ThoughtChunk,
    ToolCall,
    ToolSpec,
)
from zeroclaw_ref.providers.demo import DemoProvider
from zeroclaw_ref.providers.factory import create_provider
from zeroclaw_ref.providers.scripted import ScriptedProvider

SYSTEM: JSONObject = {"role": "system", "content": "sys"}

README_TURN = ScriptTurn(
    thoughts=("Need the README.",),
    chunks=("Reading ", "it now."),
    tool_calls=(
        ScriptToolCall(name="file_read", arguments_json='{"path":"README.md"}', id="call_a"),
    ),
)
FINAL_TURN = ScriptTurn(chunks=("The README describes the project.",))


def _config(*turns: ScriptTurn, record: str | None = None, name: str = "replay") -> ProviderConfig:
    return ProviderConfig(
        name=name, kind="scripted", model="scripted", script="s.json", script_turns=turns,
        record=record,
    )  # fmt: skip


def _request(text: str = "hi", tools: tuple[str, ...] = ()) -> ModelRequest:
    return ModelRequest(
        model="scripted",
        temperature=0.2,
        messages=(SYSTEM, {"role": "user", "content": text}),
        tools=tuple(ToolSpec(name=n, description="") for n in tools),
    )


def _run(provider: ScriptedProvider, request: ModelRequest | None = None) -> list[ProviderEvent]:
    return list(provider.stream(request or _request()))


@pytest.mark.req("CFG-PROV-11")
def test_each_request_replays_the_next_turn_in_order(tmp_path: Path) -> None:
    provider = ScriptedProvider(_config(README_TURN, FINAL_TURN), tmp_path)
    assert _run(provider) == [
        ThoughtChunk("Need the README."),
        TextChunk("Reading "),
        TextChunk("it now."),
        ToolCall("call_a", "file_read", {"path": "README.md"}),
        Done(),
    ]
    assert _run(provider) == [TextChunk("The README describes the project."), Done()]


@pytest.mark.req("CFG-PROV-11")
@pytest.mark.parametrize(
    ("turn", "events"),
    [
        (ScriptTurn(), [Done()]),
        (
            ScriptTurn(thoughts=("a", "b"), chunks=("c",)),
            [ThoughtChunk("a"), ThoughtChunk("b"), TextChunk("c"), Done()],
        ),
        (
            ScriptTurn(
                tool_calls=(
                    ScriptToolCall(name="shell", arguments_json='{"command":"cargo test"}'),
                    ScriptToolCall(name="x", arguments_json='{"n":[1,{"k":null}]}', id="mine"),
                    ScriptToolCall(name="y", arguments_json="{}"),
                )
            ),
            [
                ToolCall("call_1", "shell", {"command": "cargo test"}),
                ToolCall("mine", "x", {"n": [1, {"k": None}]}),
                ToolCall("call_2", "y", {}),
                Done(),
            ],
        ),
    ],
)
def test_turn_events_come_in_the_fixed_order(
    turn: ScriptTurn, events: list[ProviderEvent], tmp_path: Path
) -> None:
    assert _run(ScriptedProvider(_config(turn), tmp_path)) == events


@pytest.mark.req("CFG-PROV-14", "CFG-PROV-12")
def test_generated_ids_count_across_turns_and_restart_per_instance(tmp_path: Path) -> None:
    turn = ScriptTurn(tool_calls=(ScriptToolCall(name="shell", arguments_json="{}"),))
    config = _config(turn, turn)
    provider = ScriptedProvider(config, tmp_path)
    ids = [e.id for _ in range(2) for e in _run(provider) if isinstance(e, ToolCall)]
    assert ids == ["call_1", "call_2"]
    again = [e.id for e in _run(ScriptedProvider(config, tmp_path)) if isinstance(e, ToolCall)]
    assert again == ["call_1"]


@pytest.mark.req("CFG-PROV-11")
def test_an_error_turn_raises_its_text_and_emits_nothing(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        _config(ScriptTurn(chunks=("ignored",), error="model overloaded"), FINAL_TURN), tmp_path
    )
    seen: list[ProviderEvent] = []
    with pytest.raises(ProviderError) as caught:
        seen.extend(provider.stream(_request()))
    assert str(caught.value) == "model overloaded"
    assert seen == []
    # The error turn was consumed: the next request gets the next turn.
    assert _run(provider) == [TextChunk("The README describes the project."), Done()]


@pytest.mark.req("CFG-PROV-13")
@pytest.mark.parametrize("turns", [(), (FINAL_TURN,), (FINAL_TURN, FINAL_TURN)])
def test_a_request_after_the_last_turn_fails_as_exhausted(
    turns: tuple[ScriptTurn, ...], tmp_path: Path
) -> None:
    provider = ScriptedProvider(_config(*turns, name="golden"), tmp_path)
    for _ in turns:
        _run(provider)
    expected = f"scripted provider golden: script exhausted after {len(turns)} turns"
    for _ in range(2):
        with pytest.raises(ProviderError) as caught:
            _run(provider)
        assert str(caught.value) == expected
    assert len(provider.requests) == len(turns) + 2


@pytest.mark.req("CFG-PROV-12")
def test_each_instance_starts_at_the_first_turn(tmp_path: Path) -> None:
    config = _config(README_TURN, FINAL_TURN)
    first = ScriptedProvider(config, tmp_path)
    _run(first)
    second = ScriptedProvider(config, tmp_path)
    assert _run(second)[0] == ThoughtChunk("Need the README.")
    assert _run(first) == [TextChunk("The README describes the project."), Done()]


def _expected_record(text: str, tools: list[str]) -> JSONObject:
    return {
        "model": "scripted",
        "temperature": 0.2,
        "tools": list(tools),
        "messages": [SYSTEM, {"role": "user", "content": text}],
    }


@pytest.mark.req("CFG-PROV-15")
def test_every_request_is_kept_and_appended_to_the_record_file(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "requests.jsonl").write_text('{"earlier":true}\n', encoding="utf-8")
    provider = ScriptedProvider(
        _config(FINAL_TURN, ScriptTurn(error="boom"), record="out/requests.jsonl"), tmp_path
    )
    _run(provider, _request("first é", ("shell", "file_read")))
    with pytest.raises(ProviderError):
        _run(provider, _request("second"))
    with pytest.raises(ProviderError):
        _run(provider, _request("third"))
    expected = [
        _expected_record("first é", ["shell", "file_read"]),
        _expected_record("second", []),
        _expected_record("third", []),
    ]
    assert provider.requests == expected
    lines = (tmp_path / "out" / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines[0] == '{"earlier":true}'
    assert [json.loads(line) for line in lines[1:]] == expected
    # Compact UTF-8 JSON, one object per line.
    assert lines[1].startswith('{"model":"scripted","temperature":0.2,"tools":["shell",')
    assert "é" in lines[1]


@pytest.mark.req("CFG-PROV-15", "POL-ENGINE-12")
def test_recorded_messages_keep_their_image_parts(tmp_path: Path) -> None:
    image: JSONObject = {"type": "image", "path": "/w/uploads/a.png", "mime_type": "image/png"}
    tool: JSONObject = {"role": "tool", "toolCallId": "c", "name": "x", "content": "ok"}
    message: JSONObject = {**tool, "images": [image]}
    provider = ScriptedProvider(_config(FINAL_TURN, record="r.jsonl"), tmp_path)
    _run(provider, ModelRequest("scripted", 0.2, (SYSTEM, message)))
    assert provider.requests[0]["messages"] == [SYSTEM, message]
    line = (tmp_path / "r.jsonl").read_text(encoding="utf-8")
    assert json.loads(line)["messages"] == [SYSTEM, message]


@pytest.mark.req("CFG-PROV-15")
def test_without_record_no_file_is_written(tmp_path: Path) -> None:
    provider = ScriptedProvider(_config(FINAL_TURN), tmp_path)
    _run(provider)
    assert list(tmp_path.iterdir()) == []
    assert provider.requests == [_expected_record("hi", [])]


@pytest.mark.req("CFG-PROV-15")
def test_an_unwritable_record_file_fails_the_request(tmp_path: Path) -> None:
    provider = ScriptedProvider(_config(FINAL_TURN, record="missing/dir/r.jsonl"), tmp_path)
    with pytest.raises(ProviderError, match="scripted provider replay: cannot write record"):
        _run(provider)


@pytest.mark.req("CFG-PROV-01", "CFG-PROV-05")
def test_factory_maps_each_kind(tmp_path: Path) -> None:
    demo = create_provider(ProviderConfig(name="d", kind="demo", model="demo"), tmp_path)
    assert isinstance(demo, DemoProvider)
    assert demo.name == "d"
    scripted = create_provider(_config(FINAL_TURN), tmp_path)
    assert isinstance(scripted, ScriptedProvider)
    assert _run(scripted) == [TextChunk("The README describes the project."), Done()]


@pytest.mark.req("CFG-PROV-01")
@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("other", "provider net: kind other is unknown"),
    ],
)
def test_factory_refuses_kinds_without_an_implementation(
    kind: str, message: str, tmp_path: Path
) -> None:
    with pytest.raises(ProviderError) as caught:
        create_provider(ProviderConfig(name="net", kind=kind, model="m"), tmp_path)
    assert str(caught.value) == message
