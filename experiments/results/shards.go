package results

import "slices"

// FirstShard is the lowest shard of the records' observations: in a
// merged folder, the shard whose discovery runs (which every shard makes)
// stand for the plan's; 0 for the records of one run.
func (r Records) FirstShard() int {
	first := 0
	for i, l := range r.Observations {
		if i == 0 || l.Shard < first {
			first = l.Shard
		}
	}
	return first
}

// SameDiscovery checks that the discovery run of line l found what the
// first shard's found: got against want, what naming the figure ("discovery
// passed"). Every shard of a plan runs the same discovery, so a difference
// says the shards ran different code or inputs.
func SameDiscovery[T comparable](c *Checker, l Line, first int, what string, got, want []T) {
	if !slices.Equal(got, want) {
		c.Obs(l, "", "shard %d's %s %v, but shard %d's %v: the shards ran different code or inputs", l.Shard, what, got, first, want)
	}
}
