package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"idemlab/experiments/results"
	"idemlab/experiments/subject"
	wc "idemlab/worker/claim"
	we "idemlab/worker/explore"
	"idemlab/worker/store"
)

// TableClaims is article 003's table.
const TableClaims = wc.TableClaims

// ClaimTTLMS is the claim pattern's TTL. It is long, so a probe right
// after a crash is surely inside it; the re-claim after it shifts its
// clock instead of waiting, as the claim scenario does.
const ClaimTTLMS = 60_000

// Holders of the claim pattern's processes; each names its external id.
const (
	HolderDelivery = "delivery"
	HolderProbe    = "probe"
	HolderRecovery = "recovery"
	RoleProbe      = "probe"
	StepProbe      = "probe"
)

// ClaimOutcome names who wrote the downstream fields.
func ClaimOutcome(holder string) string { return "done-by-" + holder }

// OutcomeNotDone is a claim whose downstream fields were never written.
const OutcomeNotDone = "not-done"

// ClaimArgs are the arguments of the claiming process holder, its clock
// offset by offset ms (past the TTL for a re-claim), on the file or
// server of f and st's backend.
func ClaimArgs(st subject.Params, f subject.Files, holder string, offset int64) we.ClaimArgs {
	return we.ClaimArgs{DB: f.DB, Fingerprint: st.EventID, Holder: holder, Classification: st.JobKey, TTLMS: ClaimTTLMS, OffsetMS: offset, Backend: st.Backend}
}

func claimArgs(st subject.Params, f subject.Files, holder string, offset int64) []string {
	return ClaimArgs(st, f, holder, offset).Argv()
}

// claimTables is the claim table's DDL, one layout on either dialect.
func claimTables(store.Dialect) string { return wc.NewDDL() }

// readClaimsOn lists the claim table through st.
func readClaimsOn(ctx context.Context, st store.Store) (subject.State, error) {
	c, err := wc.ReadClaims(ctx, st)
	if err != nil {
		return nil, err
	}
	return subject.State(c.Lines()), nil
}

// Claim is article 003's TTL claim and its downstream write. A
// recovery first probes inside the TTL, where a live claim must hold,
// then re-claims after it and finishes the work if nobody did.
func Claim() subject.Subject {
	return subject.Subject{
		Name:       "claim-ttl",
		Worker:     we.ClaimName,
		TrialShare: 12,
		Points: func(subject.Params) []string {
			return []string{we.PointClaimSchema, we.PointClaimed, we.PointClaimFollowUp}
		},
		Args: func(st subject.Params, f subject.Files) []string { return claimArgs(st, f, HolderDelivery, 0) },
		Recovery: func(st subject.Params, f subject.Files, done []string, _ subject.State) (subject.Action, bool) {
			switch len(done) {
			case 0:
				return subject.Action{Step: StepProbe, Role: RoleProbe, Worker: we.ClaimName, Args: claimArgs(st, f, HolderProbe, 0)}, true
			case 1:
				return subject.Action{Step: subject.StepRecovery, Role: subject.RoleRecovery, Worker: we.ClaimName, Args: claimArgs(st, f, HolderRecovery, ClaimTTLMS+1)}, true
			}
			return subject.Action{}, false
		},
		Read:   readClaims,
		Tables: claimTables,
		ReadOn: readClaimsOn,
		CheckRows: func(st subject.Params, s subject.State) []string {
			var bad []string
			if _, ok := s[TableClaims]; !ok {
				bad = append(bad, fmt.Sprintf("table %s is missing", TableClaims))
			}
			for i, r := range s[TableClaims] {
				c, ok := wc.ParseLine(r)
				if !ok || c.Fingerprint != st.EventID || (c.Classification != "" && c.Classification != st.JobKey) {
					bad = append(bad, fmt.Sprintf("%s[%d] is %q, not a row of fingerprint %s", TableClaims, i, r, st.EventID))
				}
			}
			if len(s[TableClaims]) > 1 {
				bad = append(bad, fmt.Sprintf("%d rows, but the fingerprint is the primary key", len(s[TableClaims])))
			}
			for t := range s {
				if t != TableClaims {
					bad = append(bad, fmt.Sprintf("table %s is not a table of the pattern", t))
				}
			}
			return bad
		},
		Classify: func(_ subject.Params, s subject.State) string {
			c, ok := claimOf(s)
			if !ok || c.ExternalID == "" {
				return OutcomeNotDone
			}
			return ClaimOutcome(strings.TrimPrefix(c.ExternalID, "ext-"))
		},
		Clean: claimModel(),
		Invariants: []subject.Invariant{
			{Name: "one-winner-per-ttl", Check: oneWinnerPerTTL},
			{Name: "downstream-kept", Check: downstreamKept},
			{Name: "downstream-written", Check: downstreamWritten},
			{Name: "recovery-acknowledged", Check: recoveryAcknowledged},
		},
		Model: func(subject.Params) []string { return claimModel() },
		Account: func(st subject.Params, role, _ string, raw json.RawMessage, before, after subject.State) []string {
			var r we.ClaimResult
			if err := results.DecodeStrict(raw, &r); err != nil {
				return []string{fmt.Sprintf("the claim's result: %v", err)}
			}
			var out []string
			if want := map[string]string{subject.RoleDelivery: HolderDelivery, RoleProbe: HolderProbe, subject.RoleRecovery: HolderRecovery}[role]; r.Holder != want {
				out = append(out, fmt.Sprintf("the worker says it is %q, the step's holder is %q", r.Holder, want))
			}
			b, _ := claimOf(before)
			a, _ := claimOf(after)
			if won := a.ClaimedAt != b.ClaimedAt; r.Claim.Won != won || (won && a.ClaimedAt != strconv.FormatInt(r.Claim.NowMS, 10)) {
				out = append(out, fmt.Sprintf("the worker says won %v at %d, but claimed_at went from %q to %q", r.Claim.Won, r.Claim.NowMS, b.ClaimedAt, a.ClaimedAt))
			}
			if r.FollowedUp != (a.ExternalID == wc.ExternalIDFor(r.Holder) && b.ExternalID == "") || r.FoundDone != (r.Claim.Won && b.ExternalID != "") {
				out = append(out, fmt.Sprintf("the worker says followed up %v, found done %v, but external_id went from %q to %q", r.FollowedUp, r.FoundDone, b.ExternalID, a.ExternalID))
			}
			return out
		},
	}
}

// claimModel: a crash before the claim leaves the probe to win; after it,
// the live claim holds the probe off and the re-claim finishes; after the
// downstream write, the delivery's work stands. No crash is the last.
func claimModel() []string {
	return []string{ClaimOutcome(HolderProbe), ClaimOutcome(HolderRecovery), ClaimOutcome(HolderDelivery)}
}

// claimOf parses the single claim row of s; ok is false when there is not
// exactly one well-formed row.
func claimOf(s subject.State) (wc.Cells, bool) {
	if len(s[TableClaims]) != 1 {
		return wc.Cells{}, false
	}
	return wc.ParseLine(s[TableClaims][0])
}

// readClaims lists the claim table; a file or table a killed worker never
// created reads as empty.
func readClaims(ctx context.Context, path string) (subject.State, error) {
	return readWith(ctx, path, wc.Options(path, 5*time.Second), wc.ReadClaims)
}

// oneWinnerPerTTL says two successive claims (claimed_at changing between
// steps) lie more than the TTL apart: within one TTL window only one
// caller may win.
func oneWinnerPerTTL(h subject.History) []string {
	var out []string
	prev := int64(-1)
	for i, s := range h.Steps {
		c, ok := claimOf(s.Rows)
		if !ok || c.ClaimedAt == "" {
			continue
		}
		at, err := strconv.ParseInt(c.ClaimedAt, 10, 64)
		if err != nil {
			out = append(out, fmt.Sprintf("step %d: claimed_at %q is not a time", i+1, c.ClaimedAt))
			continue
		}
		if prev >= 0 && at != prev && at-prev <= ClaimTTLMS {
			out = append(out, fmt.Sprintf("step %d (%s) won at %d, %d ms after the win at %d, inside the TTL of %d ms", i+1, s.Role, at, at-prev, prev, ClaimTTLMS))
		}
		prev = at
	}
	return out
}

// downstreamKept says downstream fields, once committed, never change or
// vanish: a re-claim may take the row, not the work already done.
func downstreamKept(h subject.History) []string {
	var out []string
	var first wc.Cells
	for i, s := range h.Steps {
		c, _ := claimOf(s.Rows)
		if first.ExternalID != "" && (c.ExternalID != first.ExternalID || c.Classification != first.Classification) {
			out = append(out, fmt.Sprintf("step %d (%s) left downstream fields %q/%q, but %q/%q were committed before", i+1, s.Role, c.Classification, c.ExternalID, first.Classification, first.ExternalID))
		}
		if first.ExternalID == "" && c.ExternalID != "" {
			first = c
		}
	}
	return out
}

// downstreamWritten says the recovery leaves the work done.
func downstreamWritten(h subject.History) []string {
	last, ok := h.Final()
	if !ok {
		return []string{"no steps"}
	}
	if c, _ := claimOf(last.Rows); c.ExternalID == "" || c.Classification == "" {
		return []string{"after the recovery the downstream fields are still empty"}
	}
	return nil
}
