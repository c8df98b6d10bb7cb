-- A wrong claim: it stamps claimed_at but never takes a row again, so an
-- event whose first holder died stays claimed for as long as the row lives.
INSERT INTO event_claims
  (fingerprint, source, level, message, first_seen, last_seen, count, claimed_at)
VALUES (:fp, :source, :level, :message, :ts, :ts, 1, :now)
ON CONFLICT (fingerprint) DO NOTHING;
