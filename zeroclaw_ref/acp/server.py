"""AcpServer: the method table, the active set and capacity (acp.md §2, §3, §4.1, §5.8, §7).

Goals: every handler runs on the reader thread and finishes its synchronous part before the
next message is read (ACP-TR-30); none of them waits for a turn or a client (ACP-TR-31).

Plan: one server per connection (stdio process or gateway WebSocket). Sessions are published
in `_active`; `session/stop` and `session/close` move them to `_draining` until their worker
ends (drained sessions no longer count against `max_sessions`, acp.md §3.4). `_reserved` counts
creations in progress (ACP-NEW-16). One lock guards the three; it is never held while calling
out.

Configuration: `self.config` is the snapshot of the connection (what `initialize` reports,
the capacity and the idle timeout). Each session is built from `ServerOptions.config_source`
when the front door gives one: the stdio server passes its `ConfigStore`, so `session/new`,
`session/load` and `session/resume` see the file as it is now, while sessions already built keep
the execution they were resolved with (config.md CFG-LOAD-10, policy.md POL-BUNDLE-06).

Design: the turn engine, the policy seam and the session modules are imported when the first
session is built, not at start. `initialize` then answers without them, which is about a
third of the start-up time (bench/acp_startup); the first `session/new` pays it instead.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zeroclaw_ref import __version__
from zeroclaw_ref.config.model import ConfigSnapshot
from zeroclaw_ref.core.clock import Clock, rfc3339
from zeroclaw_ref.core.ids import IdFactory
from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.core.scrub import clean_output
from zeroclaw_ref.rpc.endpoint import DEFERRED, Call, Deferred, Endpoint, Handler
from zeroclaw_ref.sandbox.probe import describe as describe_sandbox
from zeroclaw_ref.store.db import StoreError
from zeroclaw_ref.store.sessions import SessionStore
from zeroclaw_ref.wire import acp as wire
from zeroclaw_ref.wire.errors import RpcError

from .intake import BLANK_TURN, is_blank, render_prompt, session_id_of
from .workspace import agent_workspace, canonical_cwd, requested_cwd, restored_workspace

if TYPE_CHECKING:  # imported for real on the first session (module note)
    from zeroclaw_ref.engine.turn import TurnEngine

    from .replay import Seed
    from .session import AcpSession

log = logging.getLogger(__name__)

ALIAS_KEYS = ("agentAlias", "agent_alias", "agent")
NO_ALIAS = "session/new requires `agentAlias` (alias of a configured [agents.<alias>] entry)"


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """What the front door decides per connection."""

    connection_agent: str | None = None  # gateway `?agent=` (ACP-NEW-06); None on stdio
    # [CFG-LOAD-10] the current snapshot, asked for as each session is built; None: `config`
    config_source: Callable[[], ConfigSnapshot] | None = None
    list_page_size: int = 50  # [ZC-LIST-03] sessions per session/list page (tests set fewer)


class AcpServer:
    """One ACP server instance (acp.md §0.5)."""

    def __init__(
        self,
        config: ConfigSnapshot,
        send_line: Callable[[str], None],
        ids: IdFactory,
        clock: Clock,
        options: ServerOptions = ServerOptions(),
        store: SessionStore | None = None,
    ) -> None:
        self.config = config
        self.store = store  # None: no store could be opened (ACP-STORE-04)
        self.ids = ids
        self.clock = clock
        self.options = options
        self._engine: TurnEngine | None = None
        self._lock = threading.Lock()
        self._active: dict[str, AcpSession] = {}
        self._draining: dict[str, AcpSession] = {}
        self._reserved = 0
        self._restoring: set[str] = set()
        methods: dict[str, Handler] = {
            wire.METHOD_INITIALIZE: self._initialize,
            wire.METHOD_SESSION_NEW: self._session_new,
            wire.METHOD_SESSION_PROMPT: self._session_prompt,
            wire.METHOD_SESSION_CANCEL: self._session_cancel,
            wire.METHOD_SESSION_STOP: self._session_stop,
            wire.METHOD_SESSION_CLOSE: self._session_close,
            wire.METHOD_SESSION_LOAD: self._session_restore,
            wire.METHOD_SESSION_RESUME: self._session_restore,
            wire.METHOD_SESSION_UPDATE: self._session_event,
            wire.METHOD_SESSION_EVENT: self._session_event,
        }
        if store is not None:  # [ZC-LIST-01] [ZC-DEL-01] offered, and advertised, with a store
            methods[wire.METHOD_SESSION_LIST] = self._session_list
            methods[wire.METHOD_SESSION_DELETE] = self._session_delete
        self.endpoint = Endpoint(methods, send_line)

    @property
    def engine(self) -> TurnEngine:
        """The turn engine every session of this server shares (made on first use)."""
        if self._engine is None:
            from zeroclaw_ref.engine.turn import TurnEngine

            self._engine = TurnEngine(self.ids)
        return self._engine

    @engine.setter
    def engine(self, engine: TurnEngine) -> None:
        self._engine = engine

    # --- initialize (acp.md §2) ------------------------------------------------------------

    def _initialize(self, call: Call) -> JSON:
        """[ACP-INIT-01..10] the same result for any params, any number of times."""
        capabilities: JSONObject = {
            "loadSession": self.store is not None,  # [ACP-INIT-04]
            "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": False, "sse": False},
        }
        if self.store is not None:
            # [ZC-LIST-01] [ZC-DEL-01] list and delete join resume and close (CONTRACT.md)
            capabilities["sessionCapabilities"] = {
                "resume": {},
                "close": {},
                "list": {},
                "delete": {},
            }
        meta: JSONObject = {}
        model = next(
            (p.model for p in self.config.providers.values() if p.model.strip()), None
        )  # [ACP-INIT-05] first provider in file order with a non-blank model
        if model is not None:
            meta["defaultModel"] = model
        meta["maxSessions"] = self.config.acp.max_sessions  # [ACP-INIT-06]
        meta["sessionTimeoutSecs"] = self.config.acp.session_timeout_secs
        meta["sandbox"] = describe_sandbox(self.config.sandbox)  # [ZC-SBX-06]
        return {
            "protocolVersion": wire.PROTOCOL_VERSION,  # [ACP-INIT-02]
            "agentCapabilities": capabilities,
            "agentInfo": {
                "name": wire.AGENT_NAME,
                "title": wire.AGENT_TITLE,
                "version": __version__,
            },
            "authMethods": [],  # [ACP-INIT-10]
            "_meta": {"zeroclaw": meta},
        }

    # --- session/new (acp.md §3) -----------------------------------------------------------

    def _session_config(self) -> ConfigSnapshot:
        """[CFG-LOAD-10] the snapshot to build a session from, taken right before resolve()."""
        source = self.options.config_source
        return source() if source is not None else self.config

    def _choose_alias(self, params: JSONObject, config: ConfigSnapshot) -> str:
        """[ACP-NEW-02..05] the first applicable step decides; its alias is then validated."""
        alias: str | None = None
        for key in ALIAS_KEYS:
            if key in params:
                value = params[key]
                alias = value.strip() or None if isinstance(value, str) else None
                break
        if alias is None and self.options.connection_agent:
            alias = self.options.connection_agent.strip() or None  # step 2 (gateway only)
        if alias is None and config.acp.default_agent:
            alias = config.acp.default_agent.strip() or None  # step 3
        if alias is None and len(config.agents) == 1:
            alias = next(iter(config.agents))  # step 4, disabled agents counted
        if alias is None:
            raise RpcError.invalid_params(NO_ALIAS)
        from zeroclaw_ref.engine.resolve import not_dispatchable_text, unknown_agent_text

        agent = config.agents.get(alias)
        if agent is None:
            raise RpcError.invalid_params(unknown_agent_text(alias))
        if not agent.dispatchable:
            raise RpcError.invalid_params(not_dispatchable_text(alias))
        return alias

    def _session_new(self, call: Call) -> JSON:
        """[ACP-NEW-17] alias, validation, workspace, capacity, runtime, publication."""
        params = call.params
        config = self._session_config()
        alias = self._choose_alias(params, config)
        cwd = requested_cwd(params)
        workspace = canonical_cwd(cwd) if cwd is not None else None
        if workspace is not None and workspace == config.config_dir.resolve():
            workspace = None  # [ACP-NEW-11] the install-root placeholder means "omitted"
        agent_ws = agent_workspace(config.agent_workspace(alias))  # [ACP-NEW-14]
        workspace = workspace or agent_ws  # [ACP-NEW-12] [ACP-NEW-13]
        self._reserve()
        try:
            session = self._build_session(config, alias, workspace)
        finally:
            with self._lock:
                self._reserved -= 1
        return {"sessionId": session.id, "workspaceDir": str(workspace)}  # [ACP-NEW-15]

    def _reserve(self) -> None:
        """[ACP-NEW-16] active sessions plus reservations against max_sessions."""
        maximum = self.config.acp.max_sessions
        with self._lock:
            if len(self._active) + self._reserved >= maximum:
                raise RpcError.session_limit_reached(maximum)
            self._reserved += 1

    def _build_session(
        self,
        config: ConfigSnapshot,
        alias: str,
        workspace: Path,
        session_id: str | None = None,
        seed: Seed | None = None,
    ) -> AcpSession:
        """Resolve the runtime, persist a new session (restores are already stored), publish."""
        from zeroclaw_ref.engine.resolve import PathRequest, ResolveError, resolve

        from .approver import AcpApprover
        from .session import AcpSession

        new = session_id is None
        session_id = session_id or self._fresh_id()
        approver = AcpApprover(self.endpoint, session_id, self.ids, workspace, config)
        try:
            execution = resolve(
                config,
                alias,
                PathRequest("acp", approver=approver, session_workspace=workspace),
                self.ids,
            )  # [POL-PATH-03] [POL-PATH-06] one execution per session, empty allow list
        except ResolveError as exc:
            raise RpcError.internal_error(
                f"Failed to create agent: {clean_output(str(exc))}"
            ) from exc  # [ACP-NEW-18]
        if new and self.store is not None:
            try:  # [ACP-NEW-19] [ACP-STORE-08] stored before it is published
                self.store.insert_session(
                    session_id, alias, str(workspace), rfc3339(self.clock.now())
                )
            except StoreError as exc:
                execution.close()
                raise RpcError.internal_error(
                    f"Failed to persist session: {clean_output(str(exc))}"
                ) from exc
        session = AcpSession(
            session_id,
            workspace,
            execution,
            self.engine,
            self.clock,
            self,
            history=seed.history if seed else None,
            stored=self.store is not None,
            ids=self.ids,
        )
        approver.attach(session.send_out_of_band)
        with self._lock:
            self._active[session_id] = session  # [ACP-NEW-22]
        session.start()
        return session

    def persist_turn(self, session_id: str, messages: str, updates: str, plan: str | None) -> None:
        """[ACP-STORE-09] one transaction per completed turn, before its result is sent.

        Raises:
            StoreError: the session logs it and still answers end_turn (ACP-STORE-13).
        """
        assert self.store is not None
        self.store.append_turn(session_id, messages, updates, plan, rfc3339(self.clock.now()))

    def _fresh_id(self) -> str:
        """[ACP-NEW-20] a UUID v4 naming no active, draining (or stored) session."""
        while True:
            candidate = self.ids.new("session")
            with self._lock:
                taken = candidate in self._active or candidate in self._draining
            if not taken and self.store is not None:
                try:
                    taken = self.store.exists(candidate)
                except StoreError:
                    taken = False  # a store that cannot answer cannot hold the id either
            if not taken:
                return candidate

    # --- session/prompt (acp.md §4) --------------------------------------------------------

    def _session_prompt(self, call: Call) -> JSON | Deferred:
        """[ACP-PROMPT-01] id, active, slot, prompt validation, blank check — in that order."""
        session_id = session_id_of(call.params)
        session = self._active_session(session_id)
        token = session.try_take_turn()
        if token is None:
            raise RpcError.session_busy(session_id)  # [ACP-PROMPT-03] never queued
        try:
            text = render_prompt(call.params.get("prompt"), session.workspace)
            if is_blank(text):
                raise RpcError.internal_error(BLANK_TURN)  # [ACP-PROMPT-12]
        except BaseException:
            session.release_turn()  # [ACP-PROMPT-02]
            raise
        session.run_turn(call, text, token)  # [ACP-PROMPT-23]
        return DEFERRED

    # --- cancel, stop, close (acp.md §7) ---------------------------------------------------

    def _session_cancel(self, call: Call) -> JSON:
        """[ACP-CANCEL-01..04] fire the running turn's signal; never an error for an id."""
        session_id = session_id_of(call.params)
        with self._lock:
            session = self._active.get(session_id) or self._draining.get(session_id)
        if session is not None:
            session.cancel_turn()
        return {}

    def _session_stop(self, call: Call) -> JSON | Deferred:
        """[ACP-STOP-01..06] leave the active set now; answer after the running turn."""
        session_id = session_id_of(call.params)
        session = self._take_active(session_id)
        session.drain(call, {"sessionId": session_id, "stopped": True})
        return DEFERRED

    def _session_close(self, call: Call) -> JSON | Deferred:
        """[ACP-CLOSE-01..05] cancel, deactivate, keep the record; no store: not found."""
        session_id = session_id_of(call.params)
        if self.store is None:
            raise RpcError.session_not_found(session_id)  # [ACP-CLOSE-02]
        with self._lock:
            running = self._active.get(session_id) or self._draining.get(session_id)
        if running is not None:
            running.cancel_turn()  # [ACP-CLOSE-03] first, whatever the state
        session = self._take_active(session_id)
        session.drain(call, {})
        return DEFERRED

    def _session_restore(self, call: Call) -> JSON:
        """[ACP-LOAD-01..13] [ACP-RESUME-01..03] restore a stored session; `session/load`
        replays its update log, `session/resume` sends no update at all."""
        session_id = session_id_of(call.params)  # (1) [ACP-LOAD-01] nothing else is read
        if self.store is None:
            raise RpcError.session_not_found(session_id)  # (2) [ACP-STORE-04]
        self._reserve()  # (3) [ACP-LOAD-03] released on every later failure
        try:
            with self._lock:
                busy = (
                    session_id in self._active
                    or session_id in self._draining
                    or session_id in self._restoring
                )
                if not busy:
                    self._restoring.add(session_id)
            if busy:  # (4) [ACP-STOP-04]
                raise RpcError.invalid_params(
                    f"Session already active: {session_id}. Call session/close first."
                )
            try:
                self._restore(call, session_id)
            finally:
                with self._lock:
                    self._restoring.discard(session_id)
        finally:
            with self._lock:
                self._reserved -= 1
        return {}

    def _restore(self, call: Call, session_id: str) -> None:
        from .replay import replay_updates, restore_alias, seed_history, trimmed_params

        assert self.store is not None
        config = self._session_config()  # [CFG-LOAD-10] [POL-PATH-06] the agent as it is now
        try:
            stored = self.store.load(session_id)
        except StoreError as exc:  # (5)
            raise RpcError.internal_error(f"Failed to load session: {exc}") from exc
        if stored is None:
            raise RpcError.session_not_found(session_id)  # (6)
        # (7) [ACP-LOAD-05] gone, or no longer the canonical directory that was stored
        workspace = restored_workspace(stored.workspace_dir)
        try:
            alias = restore_alias(config, stored.agent_alias, session_id)  # (8)
        except LookupError as exc:
            raise RpcError.internal_error(f"Failed to create agent: {exc}") from exc
        limit = config.runtime_profiles[config.agents[alias].runtime_profile]
        seed = seed_history([t.messages_json for t in stored.turns], limit.max_history_messages)
        session = self._build_session(config, alias, workspace, session_id, seed)
        if stored.plan_json is not None:
            session.restore_plan(stored.plan_json)  # [ACP-RESUME-02] runtime state only
        if seed.dropped_messages:
            self.send_trimmed(trimmed_params(session_id, seed))  # [ACP-LOAD-07] first
        if call.method == wire.METHOD_SESSION_LOAD:
            updates = [t.updates_json for t in stored.turns]
            for update in replay_updates(updates, workspace):  # [ACP-LOAD-09..12]
                self.send_update(session_id, update)

    # --- session/list, session/delete (stable ACP v1; acp/listing.py) ---------------------

    def _session_list(self, call: Call) -> JSON:
        """[ZC-LIST-02..05] one page of the stored sessions, active ones included."""
        from .listing import list_sessions

        assert self.store is not None  # registered only with a store
        return list_sessions(self.store, call.params, self.options.list_page_size)

    def _session_delete(self, call: Call) -> JSON:
        """[ZC-DEL-01..03] delete a stored session unless this server is using it."""
        from .listing import delete_session

        assert self.store is not None  # registered only with a store
        session_id = session_id_of(call.params)
        with self._lock:
            in_use = (
                session_id in self._active
                or session_id in self._draining
                or session_id in self._restoring
            )
        if in_use:  # [ZC-DEL-02]
            raise RpcError.invalid_params(
                f"Session is active: {session_id}. Call session/close before session/delete."
            )
        return delete_session(self.store, session_id)

    # --- inbound session/update, session/event (acp.md §5.8) -------------------------------

    def _session_event(self, call: Call) -> JSON:
        """[ACP-UPD-27..30] acknowledge, refresh activity, inject nothing."""
        session_id = session_id_of(call.params)
        session = self._active_session(session_id)
        session.touch()
        event_type: JSON = call.params.get("type")
        if not isinstance(event_type, str):
            update = call.params.get("update")
            kind = update.get("sessionUpdate") if isinstance(update, dict) else None
            event_type = kind if isinstance(kind, str) else "unknown"
        return {"sessionId": session_id, "status": "processed", "type": event_type}

    # --- helpers ---------------------------------------------------------------------------

    def _active_session(self, session_id: str) -> AcpSession:
        with self._lock:
            session = self._active.get(session_id)
        if session is None:
            raise RpcError.session_not_found(session_id)  # [ACP-PROMPT-04] draining = gone
        return session

    def _take_active(self, session_id: str) -> AcpSession:
        with self._lock:
            session = self._active.pop(session_id, None)
            if session is None:
                raise RpcError.session_not_found(session_id)
            self._draining[session_id] = session
        return session

    def session_gone(self, session: AcpSession) -> None:
        """Called by a worker as it ends: the session is gone from memory (ACP-TR-38)."""
        with self._lock:
            self._draining.pop(session.id, None)
            if self._active.get(session.id) is session:
                del self._active[session.id]
        session.execution.close()

    def send_update(self, session_id: str, update: JSONObject) -> None:
        """[ACP-UPD-01] one `session/update` notification carrying `update`."""
        self.endpoint.notify(
            wire.METHOD_SESSION_UPDATE, {"sessionId": session_id, "update": update}
        )

    def send_trimmed(self, params: JSONObject) -> None:
        """[ACP-UPD-15]"""
        self.endpoint.notify(wire.METHOD_HISTORY_TRIMMED, params)

    # --- idle sessions (acp.md §7.4) ------------------------------------------------------

    def reap_idle(self) -> list[str]:
        """[ACP-REAP-01] [ACP-REAP-02] silently drop idle sessions older than the timeout."""
        limit = self.config.acp.session_timeout_secs
        now = self.clock.now()
        reaped: list[str] = []
        with self._lock:
            for session in list(self._active.values()):
                stale = (now - session.last_active).total_seconds() > limit
                if stale and session.drain_if_idle():
                    del self._active[session.id]
                    self._draining[session.id] = session
                    reaped.append(session.id)
        return reaped

    # --- shutdown (acp.md §1.7) ------------------------------------------------------------

    def shutdown(self, budget: float) -> None:
        """[ACP-TR-35] cancel every turn, resolve pending requests, drain workers in budget."""
        with self._lock:
            active = list(self._active.values())
            everyone = active + list(self._draining.values())
            self._active.clear()
            self._draining.update({s.id: s for s in active})
        for session in everyone:
            session.cancel_turn()
        self.endpoint.abandon_all()
        for session in active:
            session.drain(None, None)
        end = time.monotonic() + budget
        for session in everyone:
            if not session.join(max(0.0, end - time.monotonic())):
                log.warning("session %s did not finish within %.0fs", session.id, budget)
