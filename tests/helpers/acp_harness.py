"""An in-process `AcpServer` driven through its endpoint, for the ACP unit tests that need a
real configuration, a real store and the execution each session resolved.

`harness_factory` builds servers over a `config.toml` written from `config_text` (a demo and a
scripted provider, risk profile `r`, runtime profile `t`); it records every execution the
resolver builds (through the public resolve observer) and shuts every server down at the end.
The `make_harness` fixture of tests/unit/acp/conftest.py hands it to the tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import wait_for
from zeroclaw_ref.acp.server import AcpServer
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.core.clock import FixedClock
from zeroclaw_ref.core.ids import RandomIds
from zeroclaw_ref.core.jsontypes import JSONObject
from zeroclaw_ref.engine.execution import ResolvedAgentExecution
from zeroclaw_ref.engine.resolve import add_resolve_observer, remove_resolve_observer
from zeroclaw_ref.store.sessions import SessionStore

Message = dict[str, Any]

RISK_FULL = 'level = "full"\n'
AGENT = 'model_provider = "{provider}"\nrisk_profile = "r"\nruntime_profile = "t"\n{extra}'


def config_text(
    agents: dict[str, str], risk: str = "", provider: str = "demo", extra: str = ""
) -> str:
    """A demo (or scripted, `script = "model.json"`) provider, profile `r`, runtime `t`."""
    text = (
        '[providers.demo]\nkind = "demo"\n'
        '[providers.s]\nkind = "scripted"\nscript = "model.json"\n'
        f"[risk_profiles.r]\n{risk}[runtime_profiles.t]\n{extra}"
    )
    for alias, more in agents.items():
        text += f"[agents.{alias}]\n" + AGENT.format(provider=provider, extra=more)
    return text


@dataclass
class Harness:
    """One in-process server; answers and notifications are collected as parsed JSON."""

    server: AcpServer
    out: list[Message]
    store: SessionStore | None
    executions: list[ResolvedAgentExecution]
    hooks: list[Callable[[Message], None]] = field(default_factory=list)

    def send(self, message: Message) -> None:
        self.server.endpoint.dispatch(json.dumps(message).encode())

    def answer(self, msg_id: object) -> Message:
        def found() -> list[Message]:
            return [m for m in list(self.out) if m.get("id") == msg_id and "method" not in m]

        wait_for(lambda: bool(found()), f"the answer to {msg_id!r}", detail=lambda: str(self.out))
        return found()[0]

    def call(self, msg_id: int, method: str, params: JSONObject) -> Message:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return self.answer(msg_id)

    def new(self, msg_id: int, **params: Any) -> tuple[str, ResolvedAgentExecution]:
        before = len(self.executions)
        answer = self.call(msg_id, "session/new", dict(params))
        assert "result" in answer, answer
        assert len(self.executions) == before + 1  # one execution resolved for this session
        return str(answer["result"]["sessionId"]), self.executions[-1]

    def updates(self, sid: str) -> list[Message]:
        return [
            m["params"]["update"]
            for m in list(self.out)
            if m.get("method") == "session/update" and m["params"]["sessionId"] == sid
        ]

    def requests(self, method: str = "session/request_permission") -> list[Message]:
        return [m for m in list(self.out) if m.get("method") == method and "id" in m]


MakeHarness = Callable[..., Harness]


@contextmanager
def harness_factory(tmp_path: Path) -> Iterator[MakeHarness]:
    """`make(text, store=True, script=None)` builds one harness; all are shut down on exit."""
    made: list[Harness] = []
    observers: list[Callable[[ResolvedAgentExecution], None]] = []

    def make(text: str, *, store: bool = True, script: object = None) -> Harness:
        cfg = tmp_path / "cfg"
        cfg.mkdir(exist_ok=True)
        (cfg / "config.toml").write_text(text)
        if script is not None:
            (cfg / "model.json").write_text(json.dumps(script))
        else:
            (cfg / "model.json").write_text('{"turns": []}')
        config = load_config(cfg, tmp_path / "data", {})
        opened = SessionStore.open(tmp_path / "data") if store else None
        out: list[Message] = []
        executions: list[ResolvedAgentExecution] = []
        hooks: list[Callable[[Message], None]] = []

        def send(line: str) -> None:
            message = json.loads(line)
            for hook in list(hooks):
                hook(message)
            out.append(message)

        server = AcpServer(config, send, RandomIds(), FixedClock(), store=opened)
        observers.append(executions.append)
        add_resolve_observer(executions.append)
        harness = Harness(server, out, opened, executions, hooks)
        made.append(harness)
        return harness

    try:
        yield make
    finally:
        for callback in observers:
            remove_resolve_observer(callback)
        for harness in made:
            harness.server.shutdown(5)
            if harness.store is not None:
                harness.store.close()
