package scenario_test

import (
	"encoding/json"
	"strings"
	"testing"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
)

// plan20 is a plan of twenty trials over two conditions.
func plan20() []shard.Trial {
	var out []shard.Trial
	for _, c := range []string{"a", "b"} {
		for i := range 10 {
			out = append(out, shard.Trial{Condition: c, ID: shard.TrialID(c, i)})
		}
	}
	return out
}

// ranBy lists the plan's trials that pick gives a shard, as recorded by
// line shard line.
func ranBy(plan []shard.Trial, line int, pick func(id string) bool) []shard.Ran {
	var out []shard.Ran
	for _, t := range plan {
		if pick(t.ID) {
			out = append(out, shard.Ran{Trial: t, Shard: line})
		}
	}
	return out
}

func TestJudgePlan(t *testing.T) {
	plan := plan20()
	part2 := &shard.Part{Index: 2, Count: 3}
	whole := `{"seed":1}`
	asShard := `{"seed":1,"shard":{"index":2,"count":3}}`
	all := func(string) bool { return true }
	merged := func() []shard.Ran {
		var out []shard.Ran
		for i := 1; i <= 3; i++ {
			out = append(out, ranBy(plan, i, func(id string) bool { return shard.Of(id, 3) == i })...)
		}
		return out
	}
	tests := []struct {
		name     string
		settings string
		shards   int
		ran      []shard.Ran
		want     []string // substrings, one per finding
		wantPlan bool
	}{
		{name: "whole run, complete", settings: whole, ran: ranBy(plan, 0, all)},
		{name: "whole run, a trial missing", settings: whole, ran: ranBy(plan, 0, func(id string) bool { return id != "b#3" }), want: []string{"1 trial(s) of the plan are not recorded: b#3"}},
		{name: "shard, its part", settings: asShard, ran: ranBy(plan, 0, part2.Runs), wantPlan: true},
		{name: "shard, a trial of another", settings: asShard, ran: ranBy(plan, 0, func(id string) bool { return part2.Runs(id) || id == firstNot(plan, part2) }), want: []string{"but shard"}, wantPlan: true},
		{name: "shard, one of its own missing", settings: asShard, ran: ranBy(plan, 0, func(id string) bool { return part2.Runs(id) && id != firstOf(plan, part2) }), want: []string{"not recorded: " + firstOf(plan, part2)}, wantPlan: true},
		{name: "merged, complete", settings: whole, shards: 3, ran: merged(), wantPlan: true},
		{name: "merged, a trial twice", settings: whole, shards: 3, ran: append(merged(), shard.Ran{Trial: plan[0], Shard: shard.Of(plan[0].ID, 3)}), want: []string{"recorded twice"}, wantPlan: true},
		{name: "merged, a trial in the wrong block", settings: whole, shards: 3, ran: moved(merged(), plan[0].ID), want: []string{"is in the block of shard"}, wantPlan: true},
		{name: "foreign trial", settings: whole, ran: append(ranBy(plan, 0, all), shard.Ran{Trial: shard.Trial{Condition: "a", ID: "a#99"}}), want: []string{"not a trial of the plan"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := results.Records{Shards: tt.shards}
			pr, findings := scenario.JudgePlan(json.RawMessage(tt.settings), rec, scenario.Folded{Plan: plan, Ran: tt.ran, Discovered: map[string][]string{}})
			if len(findings) != len(tt.want) {
				t.Fatalf("%d findings, want %d: %v", len(findings), len(tt.want), findings)
			}
			for i, w := range tt.want {
				if !strings.Contains(findings[i].Message, w) || findings[i].Condition == "" {
					t.Errorf("finding %q (condition %q), want one of a condition saying %q", findings[i].Message, findings[i].Condition, w)
				}
			}
			if (pr != nil) != tt.wantPlan {
				t.Fatalf("plan result %+v, want one: %v", pr, tt.wantPlan)
			}
			if pr != nil && pr.Trials != len(plan) {
				t.Errorf("plan of %d trials, want %d", pr.Trials, len(plan))
			}
			if pr != nil && tt.settings == asShard && len(tt.want) == 0 && len(pr.Ran) != len(ranBy(plan, 0, part2.Runs)) {
				t.Errorf("ran %d trials, want the part's %d", len(pr.Ran), len(ranBy(plan, 0, part2.Runs)))
			}
		})
	}
}

func firstOf(plan []shard.Trial, p *shard.Part) string {
	for _, t := range plan {
		if p.Runs(t.ID) {
			return t.ID
		}
	}
	return ""
}

func firstNot(plan []shard.Trial, p *shard.Part) string {
	for _, t := range plan {
		if !p.Runs(t.ID) {
			return t.ID
		}
	}
	return ""
}

// moved puts trial id in the block of the next shard.
func moved(ran []shard.Ran, id string) []shard.Ran {
	out := append([]shard.Ran{}, ran...)
	for i := range out {
		if out[i].ID == id {
			out[i].Shard = out[i].Shard%3 + 1
		}
	}
	return out
}
