package review

import (
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
)

// shards checks what results.json says about shards: a shard's folder
// names its part once for the folder and again in every scenario's
// --shard; a merged folder's blocks are shards 1 to n, in order, of one
// executable, and cover the record files exactly.
func (c *check) shards() {
	r := c.f.Results
	switch {
	case r.Shard != nil && len(r.Shards) > 0:
		c.add(results.ResultsFile, "shard", "is set beside shards: a folder is one shard's or merged from shards, not both")
	case r.Shard != nil:
		if !r.Shard.Valid() {
			c.add(results.ResultsFile, "shard", "%d/%d is not a shard", r.Shard.Index, r.Shard.Count)
			return
		}
		for _, s := range r.Scenarios {
			if got := s.Overrides[scenario.ShardFlag.Name]; got != r.Shard.String() {
				c.add(results.ResultsFile, results.Field("scenarios", results.Key(s.Name), "overrides", "shard"), "is %q, but the folder is shard %s", got, r.Shard)
			}
		}
	case len(r.Shards) > 0:
		c.merged(r)
	}
}

func (c *check) merged(r *results.Results) {
	n := len(r.Shards)
	obs, procs := 0, 0
	for i, s := range r.Shards {
		field := results.Field("shards", i)
		if s.Index != i+1 || s.Count != n {
			c.add(results.ResultsFile, field, "is shard %d/%d, want %d/%d: a merged folder lists shards 1 to n in order", s.Index, s.Count, i+1, n)
		}
		if s.Code.ExecutableSHA256 != r.Code.ExecutableSHA256 {
			c.add(results.ResultsFile, field+".code.executable_sha256", "is %s, but the merged folder's executable is %s: every shard runs one binary", s.Code.ExecutableSHA256, r.Code.ExecutableSHA256)
		}
		obs += s.Observations
		procs += s.Processes
	}
	if n > shard.MaxCount {
		c.add(results.ResultsFile, "shards", "lists %d shards, at most %d", n, shard.MaxCount)
	}
	if obs != len(c.f.Observations) {
		c.add(results.ObservationsFile, "", "has %d lines, but the shards' blocks in %s count %d", len(c.f.Observations), results.ResultsFile, obs)
	}
	if procs != len(c.f.Processes) {
		c.add(results.ProcessesFile, "", "has %d lines, but the shards' blocks in %s count %d", len(c.f.Processes), results.ResultsFile, procs)
	}
	for _, s := range r.Scenarios {
		if v, ok := s.Overrides[scenario.ShardFlag.Name]; ok {
			c.add(results.ResultsFile, results.Field("scenarios", results.Key(s.Name), "overrides", "shard"), "is %q, but a merged folder holds the whole plan", v)
		}
	}
}

// processIDs are the ids the process lines must carry, in order: from 1 in
// a folder of one run, from the part's first id in a shard's, and block by
// block in a merged one.
func (c *check) processIDs() []int {
	r := c.f.Results
	want := make([]int, len(c.f.Processes))
	first := 1
	if r.Shard != nil && r.Shard.Valid() {
		first = r.Shard.FirstProcessID()
	}
	for i := range want {
		want[i] = first + i
	}
	if len(r.Shards) == 0 {
		return want
	}
	i := 0
	for _, s := range r.Shards {
		p := shard.Part{Index: s.Index, Count: s.Count}
		for j := 0; j < s.Processes && i < len(want); j++ {
			want[i] = p.FirstProcessID() + j
			i++
		}
	}
	return want
}
