package claim

import (
	"time"

	wc "idemlab/worker/claim"
)

// TenYearsMS is how far a forged caller timestamp lies, in milliseconds.
const TenYearsMS = int64(10 * 365 * 24 * time.Hour / time.Millisecond)

// Race is one release of N racing workers on the round's file. Times are
// relative to the round's base instant T, the parent's clock when the
// round starts.
type Race struct {
	// Name is "A", "B", ... in order.
	Name string `json:"name"`
	// By is the claim the racers use; empty means the claim under test.
	By wc.Variant `json:"by,omitempty"`
	// ClockMS is the workers' clock offset, or with Pinned the exact now
	// relative to T.
	ClockMS int64 `json:"clock_ms"`
	// Pinned pins every worker's clock to T+ClockMS. Only the boundary
	// rounds pin: no real clock hits one exact millisecond.
	Pinned bool `json:"pinned,omitempty"`
	// CallerMS is the caller's event timestamp relative to T. An honest
	// caller sends the same instant the worker's clock shows.
	CallerMS int64 `json:"caller_ms"`
	// FollowUp makes the winner write the downstream fields.
	FollowUp bool `json:"follow_up,omitempty"`
	// Solo runs the race with one process instead of N: it is the earlier
	// claim that sets the row up for the race under test, and one real
	// process makes it at a seventh of the cost.
	Solo bool `json:"solo,omitempty"`
}

// Racers is the number of processes in the race.
func (r Race) Racers(workers int) int {
	if r.Solo {
		return 1
	}
	return workers
}

// Round is one row of the table: a fresh file in a schema layout
// and one or more races on it, each checked after it ends.
type Round struct {
	ID     string           `json:"id"`
	Title  string           `json:"title"`
	Schema wc.SchemaVersion `json:"schema"`
	Races  []Race           `json:"races"`
	// Kinds are the claims for which the round means something.
	Kinds []wc.Variant `json:"kinds"`
}

// Rounds builds the rounds for a TTL. The clock offsets keep half a TTL of
// margin on either side of every decision that is not the boundary itself,
// so that the milliseconds a real race takes never change an outcome.
func Rounds(ttl time.Duration) []Round {
	l := ttl.Milliseconds()
	after := l + l/2
	// The legacy claim ignores time and NULLs, so the rounds about those
	// say nothing about it and leave it out.
	both := []wc.Variant{wc.Legacy, wc.TTL}
	ttlOnly := []wc.Variant{wc.TTL}
	return []Round{
		{ID: "1-fresh", Title: "fresh row", Schema: wc.SchemaNew, Kinds: both, Races: []Race{
			{Name: "A", FollowUp: true},
		}},
		{ID: "2-within-ttl", Title: "claimed again within the TTL", Schema: wc.SchemaNew, Kinds: both, Races: []Race{
			{Name: "A", Solo: true}, {Name: "B"},
		}},
		{ID: "3-after-ttl", Title: "claimed again after the TTL", Schema: wc.SchemaNew, Kinds: both, Races: []Race{
			{Name: "A", Solo: true}, {Name: "B", ClockMS: after, CallerMS: after},
		}},
		{ID: "4-null-claimed-at", Title: "row left by the legacy claim, claimed_at NULL", Schema: wc.SchemaNew, Kinds: ttlOnly, Races: []Race{
			{Name: "A", Solo: true, By: wc.Legacy}, {Name: "B"},
		}},
		{ID: "5-at-boundary", Title: "claimed again exactly at the TTL", Schema: wc.SchemaNew, Kinds: ttlOnly, Races: []Race{
			{Name: "A", Solo: true, Pinned: true}, {Name: "B", Pinned: true, ClockMS: l, CallerMS: l},
		}},
		{ID: "5-past-boundary", Title: "claimed again 1 ms after the TTL", Schema: wc.SchemaNew, Kinds: ttlOnly, Races: []Race{
			{Name: "A", Solo: true, Pinned: true}, {Name: "B", Pinned: true, ClockMS: l + 1, CallerMS: l + 1},
		}},
		{ID: "6-forged-future", Title: "within the TTL, caller timestamp 10 years ahead", Schema: wc.SchemaNew, Kinds: ttlOnly, Races: []Race{
			{Name: "A", Solo: true}, {Name: "B", CallerMS: TenYearsMS},
		}},
		{ID: "6-forged-past", Title: "after the TTL, caller timestamp 10 years behind", Schema: wc.SchemaNew, Kinds: ttlOnly, Races: []Race{
			{Name: "A", Solo: true}, {Name: "B", ClockMS: after, CallerMS: after - TenYearsMS},
		}},
		{ID: "7-old-schema", Title: "old schema without claimed_at: first claim, then within the TTL", Schema: wc.SchemaOld, Kinds: both, Races: []Race{
			{Name: "A"}, {Name: "B"},
		}},
		{ID: "8-reclaim-keeps-downstream", Title: "winner writes downstream fields, then a re-claim after the TTL", Schema: wc.SchemaNew, Kinds: both, Races: []Race{
			{Name: "A", Solo: true, FollowUp: true}, {Name: "B", ClockMS: after, CallerMS: after},
		}},
	}
}

func (r Round) hasKind(v wc.Variant) bool {
	for _, k := range r.Kinds {
		if k == v {
			return true
		}
	}
	return false
}
