"""`session/list` and `session/delete` of the stable ACP v1 schema, over the session store.

Implements ZC-LIST-01 to ZC-LIST-05 and ZC-DEL-01 to ZC-DEL-03 (stated in
fixtures/requirements.json; fixtures/CONTRACT.md records where they depart from acp.md).

Design note.
  Goals: a client that follows the stable schema can page through every stored session,
  optionally only those of one working directory, and delete the ones it no longer needs,
  without ever being handed a session that another request of this connection is using.
  Plan: both methods exist only while the store is open — the server registers them, and
  advertises `sessionCapabilities.list` and `.delete`, only then, so without a store they are
  unknown methods (−32601) like any other the agent does not offer. Pages are cut by keyset
  (`last_activity`, row id), newest first: the cursor names the last session handed out, so
  sessions created between two pages never shift or repeat a later page. The cursor is opaque
  to the client: URL-safe base64 of a small JSON array that also holds the `cwd` filter, so a
  cursor is only good for the listing it came from.
  Caveats: a session whose turn completes between two pages moves to the front and is not
  seen again in that walk. The store keeps no title, so `SessionInfo.title` is never sent;
  the agent alias travels in `_meta.zeroclaw.agentAlias`.
"""

from __future__ import annotations

import base64
import binascii
import json
import os

from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.core.scrub import clean_output
from zeroclaw_ref.store.db import StoreError
from zeroclaw_ref.store.sessions import ListedSession, SessionStore
from zeroclaw_ref.wire.errors import RpcError

PAGE_SIZE = 50  # [ZC-LIST-03] sessions per page
CURSOR_VERSION = 1

CWD_NOT_STRING = "Invalid parameter: cwd must be a string"
CWD_NOT_ABSOLUTE = "Invalid parameter: cwd must be an absolute path"
INVALID_CURSOR = "Invalid parameter: cursor is not one this agent returned for this listing"


def list_sessions(store: SessionStore, params: JSONObject, page_size: int = PAGE_SIZE) -> JSON:
    """[ZC-LIST-02] [ZC-LIST-03] [ZC-LIST-04] one page of stored sessions.

    Raises:
        RpcError: −32602 for a bad `cwd` or `cursor`; −32603 when the store cannot be read.
    """
    cwd = _cwd_filter(params.get("cwd"))
    after = _decode_cursor(params.get("cursor"), cwd)
    workspaces = None if cwd is None else _spellings(cwd)
    try:
        rows = store.list_page(workspaces, after, page_size + 1)
    except StoreError as exc:
        raise RpcError.internal_error(f"Failed to list sessions: {clean_output(str(exc))}") from exc
    page = rows[:page_size]
    result: JSONObject = {"sessions": [_info(row) for row in page]}
    if len(rows) > page_size:
        result["nextCursor"] = _encode_cursor(page[-1], cwd)  # [ZC-LIST-03] only when more
    return result


def delete_session(store: SessionStore, session_id: str) -> JSON:
    """[ZC-DEL-01] [ZC-DEL-03] remove the stored rows of a session this server is not using.

    The caller has already refused a session that is in use here (ZC-DEL-02).

    Raises:
        RpcError: −32000 `Session not found: <id>` when no row has that id; −32603 when the
            store cannot delete.
    """
    try:
        deleted = store.delete(session_id)  # [ACP-STORE-16] turns go by cascade, uploads stay
    except StoreError as exc:
        raise RpcError.internal_error(
            f"Failed to delete session: {clean_output(str(exc))}"
        ) from exc
    if not deleted:
        raise RpcError.session_not_found(session_id)  # [ACP-TR-22]
    return {}


def _info(row: ListedSession) -> JSONObject:
    """[ZC-LIST-02] a `SessionInfo`: id, stored workspace, last activity, and our alias."""
    return {
        "sessionId": row.session_id,
        "cwd": row.workspace_dir,
        "updatedAt": row.last_activity,
        "_meta": {"zeroclaw": {"agentAlias": row.agent_alias}},
    }


def _cwd_filter(value: JSON) -> str | None:
    """[ZC-LIST-04] an absent or null `cwd` lists every session; otherwise an absolute path."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise RpcError.invalid_params(CWD_NOT_STRING)
    if not value.startswith("/"):
        raise RpcError.invalid_params(CWD_NOT_ABSOLUTE)
    return value


def _spellings(cwd: str) -> tuple[str, ...]:
    """The stored workspace is canonical (ACP-NEW-09): match the path as given and resolved.

    A path no stored row can hold (a NUL, a lone surrogate) matches nothing.
    """
    try:
        cwd.encode("utf-8")
        resolved = os.path.realpath(cwd)
    except (UnicodeEncodeError, ValueError):
        return ()
    return (cwd,) if resolved == cwd else (cwd, resolved)


def _encode_cursor(last: ListedSession, cwd: str | None) -> str:
    text = json.dumps([CURSOR_VERSION, last.last_activity, last.row_id, cwd], ensure_ascii=True)
    return base64.urlsafe_b64encode(text.encode("ascii")).decode("ascii").rstrip("=")


def _decode_cursor(value: JSON, cwd: str | None) -> tuple[str, int] | None:
    """[ZC-LIST-05] None for the first page; a cursor this listing did not hand out is −32602."""
    if value is None:
        return None
    invalid = RpcError.invalid_params(INVALID_CURSOR)
    if not isinstance(value, str) or not value or len(value) > 4096:
        raise invalid
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        decoded = json.loads(raw.decode("ascii"))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise invalid from None
    match decoded:
        case [int() as version, str() as activity, int() as row_id, (str() | None) as scope]:
            pass
        case _:
            raise invalid
    if version != CURSOR_VERSION or scope != cwd or not 0 <= row_id < 2**63:
        raise invalid
    if _encode_cursor(ListedSession(row_id, "", "", "", activity), scope) != value:
        raise invalid  # only the exact text we issue: no padding or alphabet variants
    return activity, row_id
