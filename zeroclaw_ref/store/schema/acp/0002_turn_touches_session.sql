-- A stored turn refreshes its session's last_activity inside the INSERT's own transaction, so
-- the common turn (no plan) is one statement (acp.md ACP-STORE-09; bench/acp_prompt_rtt).
CREATE TRIGGER IF NOT EXISTS acp_turns_touch_session
AFTER INSERT ON acp_turns
BEGIN
  UPDATE acp_sessions SET last_activity = NEW.created_at WHERE id = NEW.session_id;
END;
