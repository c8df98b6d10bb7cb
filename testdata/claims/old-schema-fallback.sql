-- The claim on the old schema, which has no claimed_at: only the first
-- caller inserts the row; every later caller loses.
INSERT INTO event_claims
  (fingerprint, source, level, message, first_seen, last_seen, count)
VALUES (:fp, :source, :level, :message, :ts, :ts, 1)
ON CONFLICT (fingerprint) DO NOTHING;
