"""`acp sessions list|delete`: inspect and prune the ACP session store (acp.md §8.7).

Implements ACP-STORE-15 to ACP-STORE-17 and the matching rows of acp.md Table 14-3. The
store is located as the server does (the caller passes the data dir) and a missing
store file reads as empty without being created.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from zeroclaw_ref.store.db import StoreError
from zeroclaw_ref.store.sessions import SessionStore

# What a command does once the store is open (None: no store file).
_Action = Callable[[SessionStore | None], int]

USAGE = "usage: zeroclaw_ref acp sessions {list | delete <sessionId>} [--config-dir DIR]"


def run_sessions(argv_rest: list[str], data_dir: Path, out: TextIO, err: TextIO) -> int:
    """Run `list` or `delete <id>` and return the exit status (0, 1, or 2 for usage)."""
    match argv_rest:
        case ["list"]:
            return _with_store(data_dir, err, lambda store: _list(store, out))
        case ["delete", session_id]:
            return _with_store(data_dir, err, lambda store: _delete(store, session_id, out, err))
        case _:
            print(USAGE, file=err)
            return 2


def _with_store(data_dir: Path, err: TextIO, action: _Action) -> int:
    try:
        # [ACP-STORE-17] an inspection command never creates the store
        store = SessionStore.open_existing(data_dir)
    except StoreError as exc:
        print(f"ERROR: Failed to open ACP session store: {exc}", file=err)
        return 1
    try:
        return action(store)
    except StoreError as exc:
        # Design: a read or delete that fails after opening reports with the same line; the
        # spec names no other text, and the operator's remedy is the same.
        print(f"ERROR: Failed to open ACP session store: {exc}", file=err)
        return 1
    finally:
        if store is not None:
            store.close()


def _list(store: SessionStore | None, out: TextIO) -> int:
    # [ACP-STORE-17] a missing store file is an empty store
    rows = store.list_sessions() if store is not None else []
    for row in rows:
        # [ACP-STORE-15] id, alias, workspace, last activity as stored, tab-separated
        print(
            f"{row.session_id}\t{row.agent_alias}\t{row.workspace_dir}\t{row.last_activity}",
            file=out,
        )
    return 0


def _delete(store: SessionStore | None, session_id: str, out: TextIO, err: TextIO) -> int:
    # [ACP-STORE-16] uploads/ is left untouched: only the rows go
    if store is None or not store.delete(session_id):
        print(f"Session not found: {session_id}", file=err)
        return 1
    print(f"Deleted {session_id}", file=out)
    return 0
