-- The ACP session store (acp.md §8.2, ACP-STORE-06).
-- IF NOT EXISTS: a file written by another ZeroClaw version keeps its tables (ACP-STORE-07).
-- No BEGIN/COMMIT here: Database.migrate() wraps the file in one transaction.

-- One row per session; column-compatible with ZeroClaw 0.8.4.
CREATE TABLE IF NOT EXISTS acp_sessions (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  session_uuid  TEXT    NOT NULL UNIQUE,
  agent_alias   TEXT    NOT NULL,
  workspace_dir TEXT    NOT NULL,
  token_count   INTEGER NOT NULL DEFAULT 0,
  killed_at     TEXT,
  created_at    TEXT    NOT NULL,
  last_activity TEXT    NOT NULL,
  plan_json     TEXT
);

-- One row per completed turn: its ConversationMessages and its update log (ACP-STORE-09).
CREATE TABLE IF NOT EXISTS acp_turns (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id    INTEGER NOT NULL REFERENCES acp_sessions(id) ON DELETE CASCADE,
  turn_index    INTEGER NOT NULL,
  messages_json TEXT    NOT NULL,
  updates_json  TEXT    NOT NULL,
  created_at    TEXT    NOT NULL,
  UNIQUE (session_id, turn_index)
);
