"""The endpoint: dispatch, reply suppression, outbound correlation (acp.md §1.3–§1.5)."""

from __future__ import annotations

import json
import threading

import pytest

from zeroclaw_ref.core.cancel import CANCELLED
from zeroclaw_ref.rpc.endpoint import DEFERRED, Call, Endpoint
from zeroclaw_ref.rpc.writer import Writer
from zeroclaw_ref.wire.errors import RpcError
from zeroclaw_ref.wire.jsonrpc import Response


def _endpoint(handlers: dict[str, object]) -> tuple[Endpoint, list[dict[str, object]]]:
    out: list[dict[str, object]] = []
    endpoint = Endpoint(handlers, lambda line: out.append(json.loads(line)))  # type: ignore[arg-type]
    return endpoint, out


def test_results_errors_and_unknown_methods_are_answered_with_the_request_id() -> None:
    def boom(call: Call) -> object:
        raise RpcError.session_not_found("x")

    ep, out = _endpoint({"ok": lambda c: {"v": 1}, "err": boom})
    ep.dispatch(b'{"jsonrpc":"2.0","id":"a","method":"ok"}')
    ep.dispatch(b'{"jsonrpc":"2.0","id":2,"method":"err"}')
    ep.dispatch(b'{"jsonrpc":"2.0","id":3,"method":"nope"}')
    assert out == [
        {"jsonrpc": "2.0", "id": "a", "result": {"v": 1}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "Session not found: x"}},
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "Method not found: nope"}},
    ]


@pytest.mark.req("ACP-TR-14", "ACP-TR-19", "ACP-TR-20")
def test_notifications_run_but_are_never_answered() -> None:
    seen: list[str] = []

    def err(call: Call) -> object:
        seen.append(call.method)
        raise RpcError.missing_session_id()

    ep, out = _endpoint({"err": err})
    ep.dispatch(b'{"jsonrpc":"2.0","method":"err"}')
    ep.dispatch(b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}')
    ep.dispatch(b'{"jsonrpc":"2.0","method":"_zed/anything"}')
    assert seen == ["err"] and out == []


def test_a_handler_bug_is_logged_and_answered_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(call: Call) -> object:
        raise KeyError("secret internals")

    ep, out = _endpoint({"m": broken})
    ep.dispatch(b'{"jsonrpc":"2.0","id":1,"method":"m"}')
    assert out[0]["error"] == {"code": -32603, "message": "Internal error while handling m"}
    assert "Traceback" not in json.dumps(out)
    assert "secret internals" in caplog.text


def test_a_deferred_call_is_answered_once_later() -> None:
    held: list[Call] = []
    ep, out = _endpoint({"slow": lambda c: (held.append(c), DEFERRED)[1]})
    ep.dispatch(b'{"jsonrpc":"2.0","id":9,"method":"slow"}')
    assert out == []
    held[0].reply({"done": True})
    held[0].reply({"again": True})
    assert out == [{"jsonrpc": "2.0", "id": 9, "result": {"done": True}}]


@pytest.mark.req("ACP-TR-23", "ACP-TR-24", "ACP-PERM-16")
def test_outbound_ids_count_from_zero_and_match_only_as_strings() -> None:
    ep, out = _endpoint({"zc-out-1": lambda c: "client request"})
    first = ep.request("session/request_permission", {})
    second = ep.request("session/request_permission", {})
    assert (first.id, second.id) == ("zc-out-0", "zc-out-1")
    ep.dispatch(b'{"jsonrpc":"2.0","id":0,"result":{}}')  # number 0 is not "zc-out-0"
    assert not first.slot.filled
    ep.dispatch(b'{"jsonrpc":"2.0","id":"zc-out-0","result":{"outcome":1}}')
    reply = first.slot.get(1)
    assert isinstance(reply, Response) and reply.result == {"outcome": 1}
    # A client *request* that happens to use our id format is an ordinary request.
    ep.dispatch(b'{"jsonrpc":"2.0","id":"zc-out-1","method":"zc-out-1"}')
    assert out[-1] == {"jsonrpc": "2.0", "id": "zc-out-1", "result": "client request"}
    assert not second.slot.filled


@pytest.mark.req("ACP-TR-26", "ACP-TR-35")
def test_abandoned_requests_drop_their_late_answers() -> None:
    ep, _ = _endpoint({})
    pending = ep.request("m", {})
    ep.abandon(pending.id)
    assert pending.slot.get(1) is CANCELLED
    ep.dispatch(f'{{"jsonrpc":"2.0","id":"{pending.id}","result":{{}}}}'.encode())
    other = ep.request("m", {})
    ep.abandon_all()
    assert other.slot.get(1) is CANCELLED


@pytest.mark.req("ACP-TR-07")
def test_blank_and_crlf_lines() -> None:
    ep, out = _endpoint({"ok": lambda c: 1})
    ep.dispatch(b"   \r")
    ep.dispatch(b'{"jsonrpc":"2.0","id":1,"method":"ok"}\r')
    assert out == [{"jsonrpc": "2.0", "id": 1, "result": 1}]


@pytest.mark.req("ACP-TR-10")
def test_non_ascii_text_is_written_unescaped() -> None:
    lines: list[str] = []
    ep = Endpoint({"ok": lambda c: {"t": "héllo ✓ 日本"}}, lines.append)  # type: ignore[dict-item]
    ep.dispatch(b'{"jsonrpc":"2.0","id":1,"method":"ok"}')
    assert lines == ['{"jsonrpc":"2.0","id":1,"result":{"t":"héllo ✓ 日本"}}']


@pytest.mark.req("ACP-TR-29", "ACP-TR-34")
@pytest.mark.parametrize("joins", [False, True], ids=["frames", "stream"])
def test_the_writer_alone_writes_whole_lines_in_per_producer_order(joins: bool) -> None:
    chunks: list[tuple[str, bytes]] = []
    writer = Writer(
        lambda data: chunks.append((threading.current_thread().name, data)), joins=joins
    )

    def produce(tag: str) -> None:
        for i in range(200):
            writer.send(f'{{"p":"{tag}","i":{i}}}')

    producers = [threading.Thread(target=produce, args=(t,)) for t in "abc"]
    for t in producers:
        t.start()
    for t in producers:
        t.join()
    writer.close()
    assert {name for name, _ in chunks} == {"writer"}
    # Every write ends on a line boundary; a frame sink gets exactly one line per call.
    assert all(data.endswith(b"\n") for _, data in chunks)
    if not joins:
        assert all(data.count(b"\n") == 1 for _, data in chunks)
    seen = [json.loads(line) for _, data in chunks for line in data.splitlines()]
    assert len(seen) == 600
    for tag in "abc":
        assert [m["i"] for m in seen if m["p"] == tag] == list(range(200))


@pytest.mark.req("ACP-TR-29", "ACP-TR-35")
def test_a_stream_writer_joins_what_is_already_queued_and_still_flushes_on_close() -> None:
    """Lines queued while the writer is busy leave in one write, whole and in order; lines
    queued before close() are written, nothing after it."""
    release = threading.Event()
    entered = threading.Event()
    chunks: list[bytes] = []

    def sink(data: bytes) -> None:
        entered.set()
        assert release.wait(5)
        chunks.append(data)

    writer = Writer(sink, joins=True)
    writer.send('{"n":0}')
    assert entered.wait(5)  # the writer holds line 0 in the sink
    for n in range(1, 4):
        writer.send(f'{{"n":{n}}}')
    release.set()
    writer.close()
    writer.send('{"n":99}')  # after close: never written
    assert chunks == [b'{"n":0}\n', b'{"n":1}\n{"n":2}\n{"n":3}\n']
