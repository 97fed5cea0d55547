-- The scheduler's job store (policy.md §4.7, POL-PATH-19, POL-PATH-20).
-- No BEGIN/COMMIT here: Database.migrate() wraps the file in one transaction.

-- One row per scheduled agent job. Timestamps are RFC 3339 UTC text with a `Z` suffix and
-- second precision, so text comparison orders them.
CREATE TABLE IF NOT EXISTS jobs (
  id                 TEXT    PRIMARY KEY,
  agent              TEXT    NOT NULL,
  name               TEXT,
  schedule_json      TEXT    NOT NULL,
  prompt             TEXT    NOT NULL,
  allowed_tools_json TEXT,
  delete_after_run   INTEGER NOT NULL,
  approved           INTEGER NOT NULL,
  created_at         TEXT    NOT NULL,
  next_run_at        TEXT,
  last_run_at        TEXT,
  last_status        TEXT
);

CREATE INDEX IF NOT EXISTS jobs_agent ON jobs (agent, created_at, id);
CREATE INDEX IF NOT EXISTS jobs_next_run ON jobs (next_run_at);

-- One row per run; kept after its job is deleted, so no foreign key. `run_id` is not a key:
-- deterministic mode numbers ids per process, so two processes may mint the same one.
CREATE TABLE IF NOT EXISTS runs (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id      TEXT NOT NULL,
  job_id      TEXT NOT NULL,
  started_at  TEXT NOT NULL,
  finished_at TEXT NOT NULL,
  status      TEXT NOT NULL,
  output      TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS runs_job ON runs (job_id, started_at);
