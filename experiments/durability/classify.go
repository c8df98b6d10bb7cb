package durability

import (
	"maps"
	"slices"
	"strings"

	"idemlab/experiments/receiver"
	wb "idemlab/worker/batch"
	wc "idemlab/worker/claim"
	"idemlab/worker/protocol"
	"idemlab/worker/wire"
)

// Facts are what the classifier needs of one trial, all taken from the
// records: the parent's reads, the receiver's log and the exit codes.
type Facts struct {
	Pattern   string
	EventID   string
	JobID     string
	Items     int
	FirstExit int
	// LaterExits are the exit codes of the processes after the cut.
	LaterExits []int
	Before     Rows
	After      Rows
	Final      Rows
	Integrity  []string
	Sends      []receiver.Entry
	// Wins are the claim times of the claim processes after the cut that
	// say they won; FollowUps the external ids of those that say they
	// wrote the downstream fields, in order.
	Wins      []int64
	FollowUps []string
}

// Classify turns one trial's facts into an outcome; the oracle's sets are
// written in the same tags.
func Classify(f Facts) (outcome string, rowsLost int) {
	tags := map[string]bool{}
	if len(f.Integrity) != 1 || f.Integrity[0] != "ok" {
		tags[TagCorrupt] = true
	}
	for _, tb := range slices.Sorted(maps.Keys(f.Before)) {
		rowsLost += lost(f.Before[tb], f.After[tb])
	}
	if rowsLost > 0 {
		if f.FirstExit == protocol.ExitACK {
			tags[TagLostAcked] = true
		} else {
			tags[TagRolledBack] = true
		}
	}
	for _, c := range f.LaterExits {
		if c != protocol.ExitACK {
			tags[TagError] = true
		}
	}
	switch f.Pattern {
	case PatternClaim:
		classifyClaim(f, tags)
	case PatternBatch:
		accepted := map[string]int{}
		for _, s := range f.Sends {
			if s.Accepted() {
				accepted[s.Job+":"+s.Item+":"+s.Step]++
			}
		}
		for i := 1; i <= f.Items; i++ {
			k := wire.Key{Job: f.JobID, Item: wb.ItemID(i), Step: wb.StepNotify}.String()
			tags[TagDuplicate] = tags[TagDuplicate] || accepted[k] > 1
			tags[TagMissing] = tags[TagMissing] || accepted[k] == 0
		}
		done := map[string]bool{}
		for _, r := range f.Final[TableJournal] {
			p := strings.Split(r, "|")
			if len(p) >= 4 && wb.IsSideEffect(p[2]) && p[3] == string(wb.Succeeded) {
				done[p[1]] = true
			}
		}
		for i := 1; i <= f.Items; i++ {
			tags[TagMissing] = tags[TagMissing] || !done[wb.ItemID(i)]
		}
	default:
		jobs, processed := len(f.Final[TableJobs]), len(f.Final[TableProcessed])
		tags[TagDuplicate] = jobs > 1
		tags[TagMissing] = jobs == 0 || processed == 0
	}
	return Join(tags), rowsLost
}

// lost counts rows of before that after lacks, as multisets.
func lost(before, after []string) int { return len(missing(before, after)) }

// missing lists the rows of before that after lacks, as multisets.
func missing(before, after []string) []string {
	have := map[string]int{}
	for _, r := range after {
		have[r]++
	}
	var out []string
	for _, r := range before {
		if have[r] > 0 {
			have[r]--
		} else {
			out = append(out, r)
		}
	}
	return out
}

// LostRows lists, per table, the rows of before that after lacks, as
// multisets; a table that lost nothing is left out.
func LostRows(before, after Rows) Rows {
	out := Rows{}
	for _, tb := range slices.Sorted(maps.Keys(before)) {
		if m := missing(before[tb], after[tb]); len(m) > 0 {
			out[tb] = m
		}
	}
	return out
}

// ClaimedAtMark stands for a claim row's claimed_at in the lost rows a
// trial derives: the time is the worker's clock, which a rerun does not
// give again; the observation keeps it as read.
const ClaimedAtMark = "<claimed_at>"

// StableRows is rows with what a rerun cannot give again replaced by a
// mark: a claim's claimed_at. The other patterns' rows are the inputs'.
func StableRows(rows Rows) Rows {
	out := Rows{}
	for tb, rs := range rows {
		out[tb] = slices.Clone(rs)
		if tb != TableClaims {
			continue
		}
		for i, r := range rs {
			if c, ok := wc.ParseLine(r); ok && c.ClaimedAt != "" {
				c.ClaimedAt = ClaimedAtMark
				out[tb][i] = c.Line()
			}
		}
	}
	return out
}
