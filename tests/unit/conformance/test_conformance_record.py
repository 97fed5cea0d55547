"""The oracle's ``record`` command: drafting goldens from the reference agent.

Every test works on a copy of the corpus in tmp_path; the conftest guard fails any test
that would rewrite fixtures/ itself, and test_record_never_in_ci.py checks CI's steps
(TX-RECORD-06).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pytest

from zeroclaw_ref.conformance.__main__ import main
from zeroclaw_ref.conformance.core.jsonlex import JSON, dumps, loads
from zeroclaw_ref.conformance.core.runner import ScenarioResult
from zeroclaw_ref.conformance.tools import record as record_module
from zeroclaw_ref.conformance.tools.generalise import Generaliser, Mask, any_typed, read_masks

REPO = Path(__file__).resolve().parents[3]
FILE_WRITE = "acp/tools/file-write-diff-and-result"
HOST = {"WORKSPACE": "/t/ws", "CONFIG_DIR": "/t/cfg", "DATA_DIR": "/t/cfg/data"}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    target = tmp_path / "fixtures"
    shutil.copytree(REPO / "fixtures", target)
    return target


def scenario(corpus: Path, sid: str = FILE_WRITE) -> Path:
    return corpus / f"{sid}.jsonl"


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def record(corpus: Path, path: Path, *extra: str) -> int:
    return main(["record", "--fixtures", str(corpus), *extra, str(path)])


def oracle(command: str, corpus: Path, path: Path) -> int:
    return main([command, "--fixtures", str(corpus), str(path)])


# -- the command against the reference agent ----------------------------------


@pytest.mark.req("TX-RECORD-01", "TX-RECORD-04")
def test_an_unchanged_golden_records_as_unchanged(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scenario(corpus, "acp/permission/allow-once-runs-the-tool")
    before = path.read_bytes()
    assert record(corpus, path) == 0
    assert record(corpus, path, "--write") == 0
    assert path.read_bytes() == before
    out = capsys.readouterr()
    assert out.out == ""
    assert "UNCHANGED acp/permission/allow-once-runs-the-tool" in out.err


@pytest.mark.req("TX-RECORD-01", "TX-RECORD-02", "TX-RECORD-04")
def test_an_altered_expectation_is_restored(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scenario(corpus)
    golden = path.read_bytes()
    lines = lines_of(path)
    altered = [line.replace('"text":"Done."', '"text":"Finished."') for line in lines]
    assert altered != lines
    write_lines(path, altered)
    drafted = path.read_bytes()

    assert record(corpus, path) == 1
    diff = capsys.readouterr().out
    assert path.read_bytes() == drafted, "without --write nothing changes"
    assert diff.startswith(f"--- a/fixtures/{FILE_WRITE}.jsonl\n+++ b/fixtures/{FILE_WRITE}.jsonl")
    assert '-{"expect":' in diff and '"text":"Finished."' in diff
    assert '+{"expect":' in diff and '"text":"Done."' in diff

    assert record(corpus, path, "--write") == 1
    assert path.read_bytes() == golden
    assert oracle("lint", corpus, path) == 0
    assert oracle("run", corpus, path) == 0
    assert record(corpus, path) == 0


@pytest.mark.req("TX-RECORD-01", "TX-RECORD-02", "TX-RECORD-03", "TX-PH-10")
def test_a_scaffold_is_filled_in_and_generalised(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scenario(corpus)
    golden = lines_of(path)
    draft = list(golden)
    # line 5: the permission request; line 7: the tool call with rawInput left open
    draft[4] = '{"expect":"${_}"}'
    tool_call = loads(golden[6])
    assert isinstance(tool_call, dict)
    tool_call_value = tool_call["expect"]
    assert isinstance(tool_call_value, dict)
    tool_call_value["params"] = {"sessionId": "${sid}", "update": "${_}"}
    draft[6] = dumps(tool_call)
    for number in (8, 9, 10):
        draft[number - 1] = '{"expect":"${_}","within":5}'
    write_lines(path, draft)
    assert oracle("lint", corpus, path) == 2, "a scaffold does not lint (TX-PH-10)"
    capsys.readouterr()

    assert record(corpus, path, "--write") == 1
    recorded = lines_of(path)
    permission = loads(recorded[4])
    assert isinstance(permission, dict)
    request = permission["expect"]
    assert isinstance(request, dict) and isinstance(request["params"], dict)
    assert request["params"]["sessionId"] == "${sid}"  # a bound value, written by name
    call = request["params"]["toolCall"]
    assert isinstance(call, dict)
    assert call["content"] == [
        {"type": "diff", "path": "${WORKSPACE}/sub/new.md", "newText": "hello\n"}
    ]
    assert "example" not in permission, "no any-typed placeholder is left"
    # the kept placeholder stays, and the frame gets an example of what it stood for
    update = loads(recorded[6])
    assert isinstance(update, dict)
    assert update["expect"] == {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "${sid}", "update": "${_}"},
    }
    example = update["example"]
    assert isinstance(example, dict) and isinstance(example["params"], dict)
    inner = example["params"]["update"]
    assert isinstance(inner, dict)
    assert inner["sessionUpdate"] == "tool_call"
    assert inner["content"] == [
        {"type": "diff", "path": "${WORKSPACE}/sub/new.md", "newText": "hello\n"}
    ]
    assert list(update) == ["expect", "example"]
    # the whole-message scaffolds come back as the golden's frames, modifiers kept
    for number in (8, 9, 10):
        assert loads(recorded[number - 1]) == {**json.loads(golden[number - 1]), "within": 5}
    assert oracle("lint", corpus, path) == 0
    assert record(corpus, path) == 0, "a second draft is stable"


@pytest.mark.req("TX-RECORD-01", "TX-RECORD-02", "TX-MATCH-09")
def test_unordered_values_are_redrawn_from_the_messages_they_stand_for(corpus: Path) -> None:
    path = scenario(corpus)
    golden = lines_of(path)
    update, chunk = (loads(golden[n]) for n in (7, 8))
    assert isinstance(update, dict) and isinstance(chunk, dict)
    altered = dumps(chunk["expect"]).replace("Done.", "Finished.")
    unordered = '{"expect_unordered":[' + altered + "," + dumps(update["expect"]) + "]}"
    draft = [*golden[:7], unordered, *golden[9:]]
    write_lines(path, draft)

    assert record(corpus, path, "--write") == 1
    restored = '{"expect_unordered":[' + dumps(chunk["expect"]) + "," + dumps(update["expect"])
    assert lines_of(path) == [*golden[:7], restored + "]}", *golden[9:]]
    assert oracle("run", corpus, path) == 0


@pytest.mark.req("TX-RECORD-01")
def test_only_expected_values_are_rewritten(corpus: Path) -> None:
    path = scenario(corpus)
    lines = lines_of(path)
    # unusual but valid spellings that a re-serialisation would lose
    lines.insert(1, '{"note": "caf\\u00e9, spaced out"}')
    lines[2] = lines[2].replace('{"send":', '{ "send" :', 1)
    lines[6] = lines[6].replace(',"result":', ', "result": ', 1)
    lines[-1] = lines[-1].replace("end_turn", "max_tokens")
    lines.append('{"do":"close_input"}')
    lines.append('{"expect_exit":0}')
    write_lines(path, lines)

    assert record(corpus, path, "--write") == 1
    after = lines_of(path)
    assert len(after) == len(lines)
    for number, (old, new) in enumerate(zip(lines, after, strict=True), 1):
        if number == len(lines) - 2:
            assert "end_turn" in new and old != new
        else:
            assert new == old, f"line {number} changed"


@pytest.mark.req("TX-RECORD-05")
def test_a_hand_written_golden_is_refused(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = scenario(corpus)
    lines = lines_of(path)
    header = loads(lines[0])
    assert isinstance(header, dict)
    header["record"] = {"enabled": False}
    lines[0] = dumps(header)
    lines[-1] = lines[-1].replace("end_turn", "max_tokens")
    write_lines(path, lines)
    before = path.read_bytes()
    assert record(corpus, path, "--write") == 2
    assert path.read_bytes() == before
    assert "TX-RECORD-05" in capsys.readouterr().err


@pytest.mark.req("TX-RECORD-05")
@pytest.mark.parametrize(
    ("line", "frame", "reason"),
    [
        (3, '{"expect":"${_}"}', "unbound-name"),
        (11, '{"expect":"${_}","within":0.2}', "timeout"),
    ],
)
def test_a_message_that_cannot_be_placed_stops_the_scenario(
    corpus: Path, capsys: pytest.CaptureFixture[str], line: int, frame: str, reason: str
) -> None:
    path = scenario(corpus)
    lines = lines_of(path)
    if line <= len(lines):
        lines[line - 1] = frame
    else:
        lines.append(frame)
    write_lines(path, lines)
    before = path.read_bytes()
    assert record(corpus, path, "--write") == 2
    assert path.read_bytes() == before
    err = capsys.readouterr().err
    assert f"reason: {reason}" in err
    assert f"{FILE_WRITE}.jsonl:{4 if reason == 'unbound-name' else line}" in err


@pytest.mark.req("TX-RECORD-02")
def test_masks_generalise_what_the_agent_generates(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scenario(corpus)
    golden = lines_of(path)
    header = loads(golden[0])
    assert isinstance(header, dict)
    header["record"] = {
        "masks": [
            {"pointer": "/result/sessionId", "placeholder": "${sid:uuid}"},
            {"pointer": "/params/toolCall/toolCallId", "placeholder": "approval-${_:uuid}"},
        ]
    }
    draft = [dumps(header), *golden[1:]]
    draft[2] = draft[4] = '{"expect":"${_}"}'
    write_lines(path, draft)

    assert record(corpus, path, "--write") == 1
    assert lines_of(path) == [dumps(header), *golden[1:]]
    assert "WARNING" not in capsys.readouterr().err
    assert oracle("lint", corpus, path) == 0
    assert oracle("run", corpus, path) == 0


@pytest.mark.req("TX-RECORD-02")
def test_without_a_mask_a_generated_id_is_pinned_with_a_warning(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scenario(corpus)
    lines = lines_of(path)
    lines[4] = '{"expect":"${_}"}'
    write_lines(path, lines)
    assert record(corpus, path) == 1
    err = capsys.readouterr().err
    assert f"WARNING fixtures/{FILE_WRITE}.jsonl:5:" in err
    assert "/params/toolCall/toolCallId pins a generated id" in err


@pytest.mark.req("TX-RECORD-04")
@pytest.mark.parametrize(
    "problem", ["missing file", "bad mask", "bad timeout scale", "transcript error"]
)
def test_errors_exit_2_and_change_nothing(
    corpus: Path, capsys: pytest.CaptureFixture[str], problem: str
) -> None:
    path = scenario(corpus)
    lines = lines_of(path)
    extra: list[str] = []
    if problem == "missing file":
        path = corpus / "acp" / "nope" / "missing.jsonl"
    elif problem == "bad mask":
        header = loads(lines[0])
        assert isinstance(header, dict)
        header["record"] = {"masks": [{"pointer": "result", "placeholder": "${x}"}]}
        lines[0] = dumps(header)
    elif problem == "bad timeout scale":
        extra = ["--timeout-scale", "0"]
    else:
        lines.append('{"expect":"${_}","bogus":1}')
    write_lines(corpus / f"{FILE_WRITE}.jsonl", lines)
    before = (corpus / f"{FILE_WRITE}.jsonl").read_bytes()
    assert record(corpus, path, "--write", *extra) == 2
    assert (corpus / f"{FILE_WRITE}.jsonl").read_bytes() == before
    assert "error" in capsys.readouterr().err.lower()


def drafted(corpus: Path) -> Path:
    """The file-write golden with one expected text altered, so record rewrites it."""
    path = scenario(corpus)
    lines = lines_of(path)
    altered = [line.replace('"text":"Done."', '"text":"Finished."') for line in lines]
    assert altered != lines
    write_lines(path, altered)
    return path


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.req("TX-RECORD-04")
def test_write_refuses_a_symbolic_link_and_leaves_its_target_alone(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = drafted(corpus)
    before = path.read_bytes()
    alias = path.with_name("alias-of-file-write.jsonl")
    alias.symlink_to(path.name)
    assert record(corpus, alias, "--write") == 2
    assert path.read_bytes() == before, "the link's target is not written through"
    assert alias.is_symlink() and alias.readlink() == Path(path.name)
    assert "not written: it is a symbolic link" in capsys.readouterr().err
    assert leftovers(path.parent) == []


@pytest.mark.req("TX-RECORD-04")
def test_a_failed_write_leaves_the_golden_whole(
    corpus: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = drafted(corpus)
    before = path.read_bytes()

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", disk_full)
    assert record(corpus, path, "--write") == 2
    assert path.read_bytes() == before
    assert leftovers(path.parent) == [], "the temporary is removed"
    assert "not written: [Errno 28] No space left on device" in capsys.readouterr().err


@pytest.mark.req("TX-RECORD-04")
def test_a_golden_edited_during_the_run_is_not_overwritten(
    corpus: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = drafted(corpus)
    lines = lines_of(path)
    edited = [lines[0], '{"note":"added while record ran"}', *lines[1:]]
    execute = record_module._Recorder.execute

    def edit_meanwhile(self: record_module._Recorder) -> ScenarioResult:
        result = execute(self)
        write_lines(path, edited)  # the frames below the header move down one line
        return result

    monkeypatch.setattr(record_module._Recorder, "execute", edit_meanwhile)
    assert record(corpus, path, "--write") == 2
    assert lines_of(path) == edited
    assert "not written: it changed while it was being recorded" in capsys.readouterr().err


# -- generalisation rules, without an agent -----------------------------------


def generalise(old: JSON, actual: JSON, bindings: dict[str, JSON]) -> JSON:
    return Generaliser(HOST, dict(bindings)).value(old, actual)


@pytest.mark.req("TX-RECORD-02")
@pytest.mark.parametrize(
    ("old", "actual", "bindings", "new"),
    [
        # step 1: a placeholder the value still satisfies is kept, others are not
        ({"a": "${x:uuid}"}, {"a": "00000000-0000-4000-8000-000000000001"}, {}, {"a": "${x:uuid}"}),
        ({"a": "${x:int}"}, {"a": "7"}, {}, {"a": "7"}),
        ({"a": "${x}"}, {"a": 2}, {"x": 1}, {"a": 2}),
        ({"a": "id-${_:int}"}, {"a": "id-42"}, {}, {"a": "id-${_:int}"}),
        # a scaffold slot is always filled in
        ({"result": "${_}"}, {"result": {"ok": True}}, {}, {"result": {"ok": True}}),
        # step 3: paths, longest first, and escaping of the rest
        ("${_}", {"p": "/t/cfg/data/x"}, {}, {"p": "${DATA_DIR}/x"}),
        ("${_}", {"p": "/t/ws"}, {}, {"p": "${WORKSPACE}"}),
        ("${_}", {"p": "/t/wsx"}, {}, {"p": "/t/wsx"}),
        ("${_}", {"p": "/t/ws/${HOME}"}, {}, {"p": "${WORKSPACE}/$${HOME}"}),
        # step 4: bound strings of 8 characters or more
        ("${_}", {"s": "abcdefgh", "t": "abcdefg"}, {"s8": "abcdefgh", "s7": "abcdefg"}, None),
        # old member order first, then new members; unpinned _meta left out
        ("${_}", {"b": 1, "_meta": {"k": 1}}, {}, {"b": 1}),
        ({"b": 1, "a": 2}, {"a": 2, "b": 1, "c": 3}, {}, {"b": 1, "a": 2, "c": 3}),
        ({"_meta": {"k": 1}}, {"_meta": {"k": 2}}, {}, {"_meta": {"k": 2}}),
    ],
)
def test_generalisation_order(
    old: JSON, actual: JSON, bindings: dict[str, JSON], new: JSON | None
) -> None:
    got = generalise(old, actual, bindings)
    if new is None:
        assert got == {"s": "${s8}", "t": "abcdefg"}
    else:
        assert dumps(got) == dumps(new)


@pytest.mark.req("TX-RECORD-02")
def test_masks_and_ignore_pointers() -> None:
    masks = read_masks({"masks": [{"pointer": "/r/*/id", "placeholder": "${_:int}"}]})
    assert masks == (Mask(("r", "*", "id"), "${_:int}"),)
    actual: JSON = {"r": [{"id": 1}, {"id": "two"}], "t": 0}
    gen = Generaliser(HOST, {}, masks, [("t",)])
    assert gen.value("${_}", actual) == {"r": [{"id": "${_:int}"}, {"id": "two"}]}
    assert gen.warnings == ["mask ${_:int} does not fit the value at /r/1/id"]


@pytest.mark.req("TX-RECORD-03")
def test_any_typed_placeholders_follow_first_use() -> None:
    types: dict[str, str | None] = {}
    assert not any_typed({"a": "${sid:uuid}", "b": "x-${_}"}, types)
    assert any_typed({"a": "${v}"}, types)
    assert any_typed({"a": "${v}"}, types), "a later use keeps the first type"
    assert not any_typed({"a": "${sid}", "b": "${WORKSPACE}"}, types)
    assert any_typed(["${_:any}"], types)
