package scenario

import (
	"encoding/json"
	"fmt"
	"strings"

	"idemlab/experiments/results"
	"idemlab/experiments/shard"
)

// ShardFlag is the experiment flag of a scenario whose trials can be split
// across machines; a scenario that takes it lists it in its Flags and
// records the part in its settings under shard.SettingsKey.
var ShardFlag = Flag{Name: "shard", Usage: "run only shard i of n of the trials (1-based, e.g. 2/4), every discovery run included; join the shard folders with idemlab merge"}

// ShardOverride reads --shard from the overrides: nil when not given.
func ShardOverride(overrides map[string]string) (*shard.Part, error) {
	s, ok := overrides[ShardFlag.Name]
	if !ok {
		return nil, nil
	}
	p, err := shard.Parse(s)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// missingShown is how many missing trials a finding names before it
// counts the rest.
const missingShown = 5

// JudgePlan checks the trials the records hold against the plan the fold
// derived, for a scenario that can be split: each trial once, each in the
// shard that runs it, none foreign, and every trial the folder should hold
// there. It returns the plan's figures for results.json when the folder
// is a shard's (its settings name a part) or a merged one (its records
// come from shards); nil otherwise, so a folder of one whole run is
// written as before.
func JudgePlan(settings json.RawMessage, rec results.Records, f Folded) (*results.PlanResult, []results.Finding) {
	if f.Plan == nil {
		return nil, nil
	}
	part, err := shard.FromSettings(settings)
	if err != nil {
		return nil, []results.Finding{{File: results.ResultsFile, Field: "settings", Message: err.Error()}}
	}
	var out []results.Finding
	add := func(t shard.Trial, format string, args ...any) {
		out = append(out, results.Finding{File: results.ObservationsFile, Field: "trial " + t.ID, Condition: t.Condition, Message: fmt.Sprintf(format, args...)})
	}
	inPlan := map[string]bool{}
	for _, t := range f.Plan {
		inPlan[t.ID] = true
	}
	seen := map[string]int{}
	for _, r := range f.Ran {
		if !inPlan[r.ID] {
			add(r.Trial, "is not a trial of the plan the settings and the discovery runs give")
			continue
		}
		if prev, dup := seen[r.ID]; dup {
			add(r.Trial, "is recorded twice (%s and %s); every trial runs once", shardName(prev), shardName(r.Shard))
			continue
		}
		seen[r.ID] = r.Shard
		switch {
		case part != nil && !part.Runs(r.ID):
			add(r.Trial, "is in the folder of shard %s, but shard %d/%d runs it", part, shard.Of(r.ID, part.Count), part.Count)
		case part == nil && !shard.Holds(nil, rec.Shards, r.Shard, r.ID):
			add(r.Trial, "is in the block of shard %d, but shard %d/%d runs it", r.Shard, shard.Of(r.ID, rec.Shards), rec.Shards)
		}
	}
	missing := map[string][]string{}
	var conds []string
	for _, t := range f.Plan {
		if _, ok := seen[t.ID]; ok || !part.Runs(t.ID) {
			continue
		}
		if missing[t.Condition] == nil {
			conds = append(conds, t.Condition)
		}
		missing[t.Condition] = append(missing[t.Condition], t.ID)
	}
	for _, c := range conds {
		ids := missing[c]
		shown := strings.Join(ids[:min(len(ids), missingShown)], ", ")
		if len(ids) > missingShown {
			shown += fmt.Sprintf(" and %d more", len(ids)-missingShown)
		}
		out = append(out, results.Finding{File: results.ObservationsFile, Field: "condition " + c, Condition: c, Message: fmt.Sprintf("%d trial(s) of the plan are not recorded: %s", len(ids), shown)})
	}
	if part == nil && rec.Shards == 0 {
		return nil, out
	}
	sum, err := shard.PlanHash(settings, f.Discovered, f.Plan)
	if err != nil {
		return nil, append(out, results.Finding{File: results.ResultsFile, Field: "settings", Message: err.Error()})
	}
	pr := &results.PlanResult{SHA256: sum, Trials: len(f.Plan), Count: rec.Shards}
	if part != nil {
		pr.Index, pr.Count, pr.Ran = part.Index, part.Count, []string{}
		for _, t := range f.Plan {
			if _, ok := seen[t.ID]; ok {
				pr.Ran = append(pr.Ran, t.ID)
			}
		}
	}
	return pr, out
}

func shardName(i int) string {
	if i == 0 {
		return "this run"
	}
	return fmt.Sprintf("shard %d", i)
}
