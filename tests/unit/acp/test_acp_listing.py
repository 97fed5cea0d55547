"""session/list and session/delete of the stable ACP v1 schema, in process (acp/listing.py).

Each answer is also checked against the pinned official schema, so the shapes are the
schema's and not only ours.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for
from zeroclaw_ref.acp.listing import CWD_NOT_ABSOLUTE, CWD_NOT_STRING, INVALID_CURSOR
from zeroclaw_ref.acp.server import AcpServer, ServerOptions
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.conformance.core.schema import Conversation, validator
from zeroclaw_ref.core.clock import SystemClock
from zeroclaw_ref.core.ids import RandomIds
from zeroclaw_ref.store.db import StoreError
from zeroclaw_ref.store.sessions import SessionStore

REPO = Path(__file__).resolve().parents[3]
CONFIG = (
    '[providers.demo]\nkind = "demo"\nmodel = "demo"\n\n[risk_profiles.default]\n\n'
    '[runtime_profiles.default]\n\n[agents.main]\nmodel_provider = "demo"\n'
    'risk_profile = "default"\nruntime_profile = "default"\n'
)
Message = dict[str, Any]


class Client:
    """One in-process server; every frame it sends is judged by the official schema."""

    def __init__(self, tmp: Path, store: bool = True, page: int = 2) -> None:
        cfg = tmp / "cfg"
        cfg.mkdir(parents=True, exist_ok=True)
        (cfg / "config.toml").write_text(CONFIG)
        config = load_config(cfg, tmp / "data", {})
        self.store = SessionStore.open(tmp / "data") if store else None
        self.out: list[Message] = []
        judge = validator(REPO / "fixtures", required=True)
        assert judge is not None
        self.talk: Conversation = judge.conversation()
        self.server = AcpServer(
            config,
            self._receive,
            RandomIds(),
            SystemClock(),
            ServerOptions(list_page_size=page),
            self.store,
        )
        self._next = 0

    def _receive(self, line: str) -> None:
        message = json.loads(line)
        assert self.talk.received(message) == [], message
        self.out.append(message)

    def call(self, method: str, params: Message | None = None) -> Message:
        self._next += 1
        msg_id = self._next
        request: Message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            request["params"] = params
        self.talk.sent(request)
        self.server.endpoint.dispatch(json.dumps(request).encode())

        def answered() -> list[Message]:
            return [m for m in list(self.out) if m.get("id") == msg_id and "method" not in m]

        wait_for(lambda: bool(answered()), f"the answer to {method}", detail=lambda: str(self.out))
        return answered()[0]

    def result(self, method: str, params: Message | None = None) -> Any:
        answer = self.call(method, params)
        assert "result" in answer, answer
        return answer["result"]

    def error(self, method: str, params: Message | None = None) -> tuple[int, str]:
        answer = self.call(method, params)
        assert "error" in answer, answer
        return answer["error"]["code"], answer["error"]["message"]

    def walk(self, params: Message | None = None) -> list[list[str]]:
        """Every page of a listing, as lists of session ids."""
        pages: list[list[str]] = []
        cursor: str | None = None
        while True:
            asked = dict(params or {}) | ({"cursor": cursor} if cursor else {})
            page = self.result("session/list", asked)
            pages.append([s["sessionId"] for s in page["sessions"]])
            cursor = page.get("nextCursor")
            if cursor is None:
                return pages


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Client]:
    made = Client(tmp_path)
    yield made
    made.server.shutdown(5)
    assert made.store is not None
    made.store.close()


def _stored(client: Client, sid: str, workspace: Path, when: str, alias: str = "main") -> None:
    assert client.store is not None
    client.store.insert_session(sid, alias, str(workspace), when)


@pytest.mark.req("ZC-LIST-01", "ZC-DEL-01")
def test_list_and_delete_are_advertised_and_served_only_with_a_store(tmp_path: Path) -> None:
    with_store = Client(tmp_path / "a")
    caps = with_store.result("initialize", {"protocolVersion": 1})["agentCapabilities"]
    assert caps["sessionCapabilities"] == {"resume": {}, "close": {}, "list": {}, "delete": {}}
    without = Client(tmp_path / "b", store=False)
    caps = without.result("initialize", {"protocolVersion": 1})["agentCapabilities"]
    assert "sessionCapabilities" not in caps
    for method in ("session/list", "session/delete"):
        assert without.error(method, {"sessionId": "x"}) == (-32601, f"Method not found: {method}")
    for made in (with_store, without):
        made.server.shutdown(5)
    assert with_store.store is not None
    with_store.store.close()


@pytest.mark.req("ACP-TR-18")
@pytest.mark.parametrize(
    "method", ["authenticate", "logout", "session/set_mode", "session/set_config_option"]
)
def test_stable_methods_we_do_not_offer_are_method_not_found(client: Client, method: str) -> None:
    params = {"sessionId": "s", "modeId": "m", "configId": "c", "value": "v", "methodId": "x"}
    assert client.error(method, params) == (-32601, f"Method not found: {method}")


@pytest.mark.req("ZC-LIST-02")
def test_an_empty_store_lists_no_session_and_no_cursor(client: Client) -> None:
    assert client.result("session/list", {}) == {"sessions": []}
    assert client.result("session/list") == {"sessions": []}  # params absent
    assert client.result("session/list", {"cwd": None, "cursor": None}) == {"sessions": []}


@pytest.mark.req("ZC-LIST-02")
def test_each_entry_is_a_session_info_with_our_alias_in_meta(
    client: Client, tmp_path: Path
) -> None:
    _stored(client, "s-1", tmp_path, "2026-01-02T03:04:05Z", alias="main")
    page = client.result("session/list", {})
    assert page == {
        "sessions": [
            {
                "sessionId": "s-1",
                "cwd": str(tmp_path),
                "updatedAt": "2026-01-02T03:04:05Z",
                "_meta": {"zeroclaw": {"agentAlias": "main"}},
            }
        ]
    }


@pytest.mark.req("ZC-LIST-02")
def test_a_live_session_is_listed_with_its_workspace(client: Client, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sid = client.result("session/new", {"cwd": str(workspace), "mcpServers": []})["sessionId"]
    sessions = client.result("session/list", {})["sessions"]
    assert [(s["sessionId"], s["cwd"]) for s in sessions] == [(sid, str(workspace.resolve()))]


@pytest.mark.req("ZC-LIST-03")
def test_pages_run_newest_first_ties_newest_row_first_and_the_last_has_no_cursor(
    client: Client, tmp_path: Path
) -> None:
    _stored(client, "old", tmp_path, "2026-01-01T00:00:00Z")
    _stored(client, "tie-a", tmp_path, "2026-01-02T00:00:00Z")
    _stored(client, "tie-b", tmp_path, "2026-01-02T00:00:00Z")
    _stored(client, "new", tmp_path, "2026-01-03T00:00:00Z")
    _stored(client, "mid", tmp_path, "2026-01-01T12:00:00Z")
    assert client.walk() == [["new", "tie-b"], ["tie-a", "mid"], ["old"]]


@pytest.mark.req("ZC-LIST-03")
def test_a_session_stored_between_two_pages_shifts_nothing(client: Client, tmp_path: Path) -> None:
    for n in range(4):
        _stored(client, f"s{n}", tmp_path, f"2026-01-0{n + 1}T00:00:00Z")
    first = client.result("session/list", {})
    assert [s["sessionId"] for s in first["sessions"]] == ["s3", "s2"]
    _stored(client, "newcomer", tmp_path, "2026-02-01T00:00:00Z")
    second = client.result("session/list", {"cursor": first["nextCursor"]})
    assert [s["sessionId"] for s in second["sessions"]] == ["s1", "s0"]
    assert "nextCursor" not in second


@pytest.mark.req("ZC-LIST-04")
def test_the_cwd_filter_matches_the_stored_workspace_as_given_or_resolved(
    client: Client, tmp_path: Path
) -> None:
    real, other = tmp_path / "real", tmp_path / "other"
    real.mkdir()
    other.mkdir()
    (tmp_path / "link").symlink_to(real)
    _stored(client, "in-real", real, "2026-01-01T00:00:00Z")
    _stored(client, "in-other", other, "2026-01-02T00:00:00Z")
    _stored(client, "in-real-2", real, "2026-01-03T00:00:00Z")
    assert client.walk({"cwd": str(real)}) == [["in-real-2", "in-real"]]
    assert client.walk({"cwd": str(tmp_path / "link")}) == [["in-real-2", "in-real"]]
    assert client.walk({"cwd": str(tmp_path / "nowhere")}) == [[]]
    assert client.walk({"cwd": "/a\udcff"}) == [[]]  # no stored row can hold this name
    assert client.walk({"cwd": None}) == [["in-real-2", "in-other"], ["in-real"]]


@pytest.mark.req("ZC-LIST-04")
@pytest.mark.parametrize(
    ("cwd", "text"),
    [("relative/dir", CWD_NOT_ABSOLUTE), ("", CWD_NOT_ABSOLUTE), (7, CWD_NOT_STRING)],
)
def test_a_cwd_that_is_not_an_absolute_path_is_invalid_params(
    client: Client, cwd: object, text: str
) -> None:
    assert client.error("session/list", {"cwd": cwd}) == (-32602, text)


@pytest.mark.req("ZC-LIST-05")
def test_a_cursor_this_listing_did_not_hand_out_is_invalid_params(
    client: Client, tmp_path: Path
) -> None:
    for n in range(3):
        _stored(client, f"s{n}", tmp_path, f"2026-01-0{n + 1}T00:00:00Z")
    cursor = client.result("session/list", {})["nextCursor"]
    assert client.result("session/list", {"cursor": cursor})["sessions"][0]["sessionId"] == "s0"
    bad = ["", "garbage!", "bm90IGpzb24", cursor + "==", cursor[:-2], 5, ["x"], "A" * 5000]
    for value in bad:
        assert client.error("session/list", {"cursor": value}) == (-32602, INVALID_CURSOR), value
    # a cursor is good only for the filter it came from
    scoped = client.result("session/list", {"cwd": str(tmp_path)})["nextCursor"]
    assert client.error("session/list", {"cursor": scoped}) == (-32602, INVALID_CURSOR)
    assert client.error("session/list", {"cursor": cursor, "cwd": str(tmp_path)})[0] == -32602


@pytest.mark.req("ZC-LIST-02")
def test_a_store_that_cannot_be_read_is_an_internal_error(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object) -> list[object]:
        raise StoreError("disk I/O error")

    assert client.store is not None
    monkeypatch.setattr(client.store, "list_page", broken)
    assert client.error("session/list", {}) == (-32603, "Failed to list sessions: disk I/O error")


@pytest.mark.req("ZC-DEL-01", "ZC-DEL-03", "ACP-TR-21", "ACP-TR-22")
def test_delete_removes_a_stored_session_and_answers_not_found_after(
    client: Client, tmp_path: Path
) -> None:
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    (uploads / "kept.txt").write_text("x")
    _stored(client, "gone", tmp_path, "2026-01-01T00:00:00Z")
    _stored(client, "stays", tmp_path, "2026-01-02T00:00:00Z")
    assert client.result("session/delete", {"sessionId": "gone"}) == {}
    assert client.walk() == [["stays"]]
    assert client.error("session/delete", {"sessionId": "gone"}) == (
        -32000,
        "Session not found: gone",
    )
    assert client.error("session/load", {"sessionId": "gone"})[0] == -32000
    assert client.error("session/delete", {})[0] == -32602  # no id
    assert client.result("session/delete", {"session_id": "stays"}) == {}
    assert (uploads / "kept.txt").read_text() == "x"  # only the rows go


@pytest.mark.req("ZC-DEL-02")
def test_a_session_in_use_here_is_refused_until_closed(client: Client, tmp_path: Path) -> None:
    sid = client.result("session/new", {"cwd": str(tmp_path), "mcpServers": []})["sessionId"]
    code, text = client.error("session/delete", {"sessionId": sid})
    assert (code, text) == (
        -32602,
        f"Session is active: {sid}. Call session/close before session/delete.",
    )
    assert client.walk() == [[sid]]  # refused: nothing deleted
    assert client.result("session/close", {"sessionId": sid}) == {}
    assert client.result("session/delete", {"sessionId": sid}) == {}
    assert client.walk() == [[]]


@pytest.mark.req("ZC-DEL-03")
def test_a_store_that_cannot_delete_is_an_internal_error(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(_sid: str) -> bool:
        raise StoreError("database is locked")

    assert client.store is not None
    monkeypatch.setattr(client.store, "delete", broken)
    assert client.error("session/delete", {"sessionId": "s"}) == (
        -32603,
        "Failed to delete session: database is locked",
    )
