-- The TTL claim in PostgreSQL's own syntax (an alias for the table, a
-- cast): SQLite refuses to prepare it, PostgreSQL runs it. The same
-- contract as ttl.sql.
INSERT INTO event_claims AS c
  (fingerprint, source, level, message, first_seen, last_seen, count, claimed_at)
VALUES (:fp, :source, :level, :message, :ts, :ts, 1, :now)
ON CONFLICT (fingerprint) DO UPDATE SET
  claimed_at = EXCLUDED.claimed_at,
  last_seen  = EXCLUDED.last_seen,
  count      = c.count + 1::bigint
WHERE c.claimed_at IS NULL OR c.claimed_at < :cutoff;
