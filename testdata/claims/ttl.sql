-- The TTL claim: insert the event, or take the row again when its claim is
-- NULL (a row from before the migration) or older than the TTL. The same
-- contract as the TTL claim idemlab ships, written independently.
INSERT INTO event_claims
  (fingerprint, source, level, message, first_seen, last_seen, count, claimed_at)
VALUES (:fp, :source, :level, :message, :ts, :ts, 1, :now)
ON CONFLICT (fingerprint) DO UPDATE SET
  claimed_at = :now,
  last_seen  = :ts,
  count      = event_claims.count + 1
WHERE event_claims.claimed_at IS NULL OR event_claims.claimed_at < :cutoff;
