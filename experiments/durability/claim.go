package durability

import (
	"slices"
	"strconv"
	"strings"

	"idemlab/experiments/results"
	"idemlab/experiments/subject/builtin"
	wc "idemlab/worker/claim"
	we "idemlab/worker/explore"
	"idemlab/worker/protocol"
)

// PatternClaim is article 003's TTL claim followed by its downstream write,
// run by explore's claiming worker, which has crash points between the
// commits.
const PatternClaim = "claim-ttl"

// DBClaims is the claim pattern's file.
const DBClaims = "claims.sqlite3"

// TableClaims is article 003's table.
const TableClaims = wc.TableClaims

// ClaimTTLMS is the claim subject's TTL. It is long, so the probe right
// after the cut surely runs inside it; the re-claim shifts its clock past
// it instead of waiting.
const ClaimTTLMS = builtin.ClaimTTLMS

// Roles after the cut in a claim trial: a probe claims inside the TTL,
// where a surviving claim must hold it off, then a re-claim after the TTL
// finishes the work if nobody did.
const (
	RoleProbe   = "probe"
	RoleReclaim = "reclaim"
)

// Holders name the claiming processes; each writes "ext-" + holder as its
// external id, so the final row says who did the downstream work.
const (
	HolderDelivery = "delivery"
	HolderProbe    = "probe"
	HolderReclaim  = "reclaim"
)

// claimHolders maps a claim trial's role to its holder.
var claimHolders = map[string]string{RoleFirst: HolderDelivery, RoleProbe: HolderProbe, RoleReclaim: HolderReclaim}

// ClaimOf parses the single row of a claim file's rows; ok is false when
// there is not exactly one well-formed row.
func ClaimOf(r Rows) (wc.Cells, bool) {
	if len(r[TableClaims]) != 1 {
		return wc.Cells{}, false
	}
	return wc.ParseLine(r[TableClaims][0])
}

// classifyClaim adds the claim's invariants to tags:
//
//   - lost-claim: the first process's committed claim is not in the file
//     the next process opens;
//   - lost-downstream: downstream fields, once committed, are gone or
//     replaced, by the cut or by a later winner writing its own;
//   - duplicate: two wins less than a TTL apart, the first process's win
//     read from the rows it left, the later ones from their reports;
//   - missing: the work is still not done at the end.
func classifyClaim(f Facts, tags map[string]bool) {
	b, _ := ClaimOf(f.Before)
	a, _ := ClaimOf(f.After)
	fin, _ := ClaimOf(f.Final)
	tags[TagLostClaim] = b.ClaimedAt != "" && a.ClaimedAt != b.ClaimedAt
	// The first downstream write that stood after the cut must stand at
	// the end: FollowUps lists the later writers in order.
	first := a.ExternalID
	if first == "" && len(f.FollowUps) > 0 {
		first = f.FollowUps[0]
	}
	tags[TagLostDownstream] = b.ExternalID != "" && (a.ExternalID != b.ExternalID || a.Classification != b.Classification) ||
		first != "" && fin.ExternalID != first
	wins := slices.Clone(f.Wins)
	if t, err := strconv.ParseInt(b.ClaimedAt, 10, 64); err == nil {
		wins = append(wins, t)
	}
	slices.Sort(wins)
	for i := 1; i < len(wins); i++ {
		tags[TagDuplicate] = tags[TagDuplicate] || wins[i]-wins[i-1] <= ClaimTTLMS
	}
	tags[TagMissing] = fin.ExternalID == "" || fin.Classification == ""
}

// claimStep is one claim process as the fold sees it.
type claimStep struct {
	role string
	p    results.Process
	rep  protocol.Report
	ok   bool
}

// checkClaim cross-checks the claim workers' reports with the rows the
// parent read around them, and fills the facts the classifier takes from
// the reports: the later wins and downstream writes.
func (f *folder) checkClaim(t trialLine, steps []claimStep, facts *Facts) {
	c, l, st, o := &f.c, t.l, f.st, t.o
	b, _ := ClaimOf(o.Before)
	a, _ := ClaimOf(o.After)
	fin, okFin := ClaimOf(o.Final)
	if okFin && (fin.Fingerprint != st.EventID || fin.Classification != "" && fin.Classification != st.JobKey) {
		c.Obs(l, results.Field("final", TableClaims, 0), "is %q, not a row of fingerprint %s with classification %s", o.Final[TableClaims][0], st.EventID, st.JobKey)
	}
	for _, s := range steps {
		if !s.ok {
			continue
		}
		holder := claimHolders[s.role]
		if s.p.ExitCode == protocol.ExitCrash {
			// A crashed delivery left exactly what its points say; one cut
			// inside a sync may also have left the commit it was inside.
			passed := func(pt string) bool { return slices.Contains(s.rep.Points, pt) }
			claimed, followed := b.ClaimedAt != "", b.ExternalID == wc.ExternalIDFor(holder)
			_, inSync := ParseSyncPoint(o.Point)
			if passed(we.PointClaimed) && !claimed || passed(we.PointClaimFollowUp) && !followed ||
				!inSync && (passed(we.PointClaimed) != claimed || passed(we.PointClaimFollowUp) != followed) {
				c.Proc(s.p, "stdout", "passed %q, but the file it left has claimed_at %q and external_id %q", s.rep.Points, b.ClaimedAt, b.ExternalID)
			}
			continue
		}
		if s.p.ExitCode != protocol.ExitACK {
			continue
		}
		var r we.ClaimResult
		if err := results.DecodeStrict(s.rep.Result, &r); err != nil {
			c.Proc(s.p, "stdout", "the report's result is not a claim result: %v", err)
			continue
		}
		if r.Holder != holder {
			c.Proc(s.p, "stdout", "the worker says it is %q, the %s's holder is %q", r.Holder, s.role, holder)
		}
		if r.FollowedUp && (!r.Claim.Won || r.ExternalID != wc.ExternalIDFor(holder)) || r.FoundDone && (!r.Claim.Won || r.FollowedUp) {
			c.Proc(s.p, "stdout", "won %v, followed up %v with %q, found done %v: not a claim's possible report", r.Claim.Won, r.FollowedUp, r.ExternalID, r.FoundDone)
		}
		switch s.role {
		case RoleFirst:
			if !r.Claim.Won || b.ClaimedAt != strconv.FormatInt(r.Claim.NowMS, 10) || !r.FollowedUp || b.ExternalID != r.ExternalID {
				c.Proc(s.p, "stdout", "the delivery says won %v at %d, followed up %v, but the file it left has claimed_at %q and external_id %q", r.Claim.Won, r.Claim.NowMS, r.FollowedUp, b.ClaimedAt, b.ExternalID)
			}
			continue
		case RoleProbe:
			held := false
			if t, err := strconv.ParseInt(a.ClaimedAt, 10, 64); err == nil {
				held = r.Claim.NowMS-t <= ClaimTTLMS
			}
			if r.Claim.Won == held {
				c.Proc(s.p, "stdout", "the probe says won %v at %d, but the claim after the cut is %q (TTL %d ms)", r.Claim.Won, r.Claim.NowMS, a.ClaimedAt, ClaimTTLMS)
			}
		case RoleReclaim:
			if !r.Claim.Won {
				c.Proc(s.p, "stdout", "the re-claim lost, but it claims after the TTL of every earlier claim")
			}
		}
		if r.Claim.Won {
			facts.Wins = append(facts.Wins, r.Claim.NowMS)
		}
		if r.FollowedUp {
			facts.FollowUps = append(facts.FollowUps, r.ExternalID)
		}
	}
	// The final fields are some winner's: the delivery's kept through the
	// cut, or a later process's that says it wrote them.
	if fin.ExternalID != "" && fin.ExternalID != a.ExternalID && !slices.Contains(facts.FollowUps, fin.ExternalID) {
		c.Obs(l, results.Field("final", TableClaims), "external_id %q was neither in the file after the cut nor written by a later process (%q)", fin.ExternalID, facts.FollowUps)
	}
}

// claimShape checks the claim trial's rows: at most one row, the only
// fingerprint delivered.
func (f *folder) claimShape(t trialLine) {
	c, l, st, o := &f.c, t.l, f.st, t.o
	for _, name := range []string{"before", "after", "final"} {
		r := map[string]Rows{"before": o.Before, "after": o.After, "final": o.Final}[name]
		if n := len(r[TableClaims]); n > 1 {
			c.Obs(l, name, "%d claim rows, but the fingerprint is the primary key", n)
		}
		for i, row := range r[TableClaims] {
			if !strings.HasPrefix(row, st.EventID+"|") || len(strings.Split(row, "|")) != 5 {
				c.Obs(l, results.Field(name, TableClaims, i), "is %q, not a row of fingerprint %s", row, st.EventID)
			}
		}
	}
}
