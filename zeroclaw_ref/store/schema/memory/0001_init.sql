-- One agent's long-term memory (policy.md §11, POL-MEM-01).
-- IF NOT EXISTS: reopening an existing file keeps its rows.
-- No BEGIN/COMMIT here: Database.migrate() wraps the file in one transaction.

-- Timestamps are UTC RFC 3339 text; session_id is the conversation that last wrote the entry.
CREATE TABLE IF NOT EXISTS memories (
  key        TEXT PRIMARY KEY,
  content    TEXT NOT NULL,
  category   TEXT NOT NULL,
  session_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
