package redelivery_test

import (
	"strings"
	"testing"
	"time"

	"idemlab/worker/redelivery"
)

// TestNotices: a hold sends a notice at every full step that leaves more
// than a step to go; counted by hand.
func TestNotices(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		hold, every time.Duration
		want        int
	}{
		{2000 * ms, 250 * ms, 7},
		{2000 * ms, 500 * ms, 3},
		{2001 * ms, 500 * ms, 4},
		{500 * ms, 500 * ms, 0},
		{2000 * ms, 0, 0},
		{0, 500 * ms, 0},
	}
	for _, tt := range tests {
		if got := redelivery.Notices(tt.hold, tt.every); got != tt.want {
			t.Errorf("Notices(%s, %s) = %d, want %d", tt.hold, tt.every, got, tt.want)
		}
	}
}

// TestConsumeArgsClaimTTL: -claim-ttl round-trips with the ttl-claim
// pattern, and is refused without it, as the pattern is without a TTL.
func TestConsumeArgsClaimTTL(t *testing.T) {
	deliver := func(p redelivery.Pattern) redelivery.Args {
		return redelivery.Args{DB: "f.db", Pattern: p, Event: redelivery.Event{ID: "e", JobKey: "k"}}
	}
	a := redelivery.ConsumeArgs{Deliver: deliver(redelivery.TTLClaim), ClaimTTL: 250 * time.Millisecond}
	a.Sub.URL, a.Sub.Stream, a.Sub.Consumer, a.Sub.FetchWait = "nats://127.0.0.1:4222", "S", "c", time.Second
	sub := a.Sub.Argv()
	got, err := redelivery.ParseConsumeArgs(a.Argv())
	if err != nil || got != a {
		t.Errorf("ParseConsumeArgs(%q) = %+v, %v; want %+v", a.Argv(), got, err, a)
	}
	for _, argv := range [][]string{
		append(append(deliver(redelivery.SeparateCommit).Argv(), sub...), "-claim-ttl", "250ms"),
		append(deliver(redelivery.TTLClaim).Argv(), sub...),
	} {
		if _, err := redelivery.ParseConsumeArgs(argv); err == nil || !strings.Contains(err.Error(), "-claim-ttl") {
			t.Errorf("ParseConsumeArgs(%q): %v, want an error naming -claim-ttl", argv, err)
		}
	}
}
