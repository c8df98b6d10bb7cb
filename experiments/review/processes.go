package review

import (
	"fmt"
	"time"

	"idemlab/experiments/harness"
	"idemlab/experiments/results"
)

// BuiltInWorkers is the key of Outcome.Executables for the processes the
// run started from its own executable.
const BuiltInWorkers = "built-in workers"

// ranAs is the key of Outcome.Executables a process's executable is
// recorded under.
func ranAs(p results.Process) string {
	if !harness.External(p.Worker) {
		return BuiltInWorkers
	}
	if len(p.Argv) == 0 {
		return p.Worker
	}
	return p.Worker + " " + p.Argv[0]
}

// maxLeadIn bounds the harness's own time before a run's first process
// and after its last: setting up (a throwaway PostgreSQL cluster starts in
// seconds) and deriving the verdicts take far less.
const maxLeadIn = time.Hour

// maxListed bounds the findings one check makes of many lines alike; the
// rest are counted in one more.
const maxListed = 5

// processes checks what each process line says of the executable it ran
// and of the run's times: a built-in worker ran the run's own executable,
// named by one path per shard; every start of one path hashes alike; and
// the run's times hold its processes', closely.
func (c *check) processes() {
	if c.formatVersion < 5 {
		c.notice("the folder is format %d: its process lines carry no executable_sha256 (format 5 records one per process), so which executable each process ran is not checked", c.formatVersion)
	} else {
		c.executables()
	}
	c.workerPaths()
	c.runTimes()
}

// executables checks each process's executable_sha256: present, one hash
// per path in a shard, and a built-in worker's the run's executable. When
// every worker disagrees with results.json alike, the one finding is
// results.json's.
func (c *check) executables() {
	r := c.f.Results
	type key struct {
		shard int
		path  string
	}
	first := map[key]results.Process{}
	var odd []results.Process
	workers := 0
	ran := map[string]bool{}
	for _, p := range c.f.Processes {
		if p.ExecutableSHA256 == "" {
			c.add(results.ProcessesFile, procField(p, "executable_sha256"), "is absent: a format %d folder records the hash of the executable each process ran", c.formatVersion)
			continue
		}
		if c.out.Executables == nil {
			c.out.Executables = map[string]string{}
		}
		if _, ok := c.out.Executables[ranAs(p)]; !ok {
			c.out.Executables[ranAs(p)] = p.ExecutableSHA256
		}
		if len(p.Argv) > 0 {
			k := key{p.Shard, p.Argv[0]}
			if q, seen := first[k]; !seen {
				first[k] = p
			} else if q.ExecutableSHA256 != p.ExecutableSHA256 {
				c.add(results.ProcessesFile, procField(p, "executable_sha256"), "is %s, but line %d started %q too and records %s: one path hashes alike within a run", p.ExecutableSHA256, q.N, p.Argv[0], q.ExecutableSHA256)
			}
		}
		if harness.External(p.Worker) {
			continue
		}
		workers++
		ran[p.ExecutableSHA256] = true
		if p.ExecutableSHA256 != r.Code.ExecutableSHA256 {
			odd = append(odd, p)
		}
	}
	if len(odd) > 0 && len(odd) == workers && len(ran) == 1 {
		c.add(results.ResultsFile, "code.executable_sha256", "is %s, but every built-in worker in %s ran an executable that hashes to %s: the run's executable is the one its workers ran", r.Code.ExecutableSHA256, results.ProcessesFile, odd[0].ExecutableSHA256)
		return
	}
	for i, p := range odd {
		if i == maxListed {
			c.add(results.ProcessesFile, "executable_sha256", "%d more built-in worker line(s) record an executable other than the run's", len(odd)-maxListed)
			break
		}
		c.add(results.ProcessesFile, procField(p, "executable_sha256"), "is %s, but results.json code.executable_sha256 records %s: a built-in worker runs the run's own executable", p.ExecutableSHA256, r.Code.ExecutableSHA256)
	}
}

// workerPaths checks that every built-in worker of a shard (of the run,
// when not merged) names one executable in argv[0]: the run starts its
// workers from its own executable, and paths differ only between
// machines.
func (c *check) workerPaths() {
	first := map[int]results.Process{}
	n := 0
	for _, p := range c.f.Processes {
		if harness.External(p.Worker) || len(p.Argv) == 0 {
			continue
		}
		q, seen := first[p.Shard]
		if !seen {
			first[p.Shard] = p
			continue
		}
		if p.Argv[0] != q.Argv[0] {
			if n++; n > maxListed {
				continue
			}
			c.add(results.ProcessesFile, procField(p, "argv[0]"), "is %q, but line %d started the run's workers from %q: every built-in worker of a run is its own executable", p.Argv[0], q.N, q.Argv[0])
		}
	}
	if n > maxListed {
		c.add(results.ProcessesFile, "argv[0]", "%d more built-in worker line(s) name another executable", n-maxListed)
	}
}

// runTimes checks that the run's started_at and finished_at parse and
// hold every process's window, and a merged folder's each shard's. The
// run's times are recorded to the second, truncated, so finished_at may
// fall up to a second before the last process's end.
func (c *check) runTimes() {
	r := c.f.Results
	spans := []struct {
		field, start, end string
		shard             int
	}{{"", r.StartedAt, r.FinishedAt, -1}}
	for i, s := range r.Shards {
		spans = append(spans, struct {
			field, start, end string
			shard             int
		}{results.Field("shards", i) + ".", s.StartedAt, s.FinishedAt, s.Index})
	}
	for _, sp := range spans {
		start, err1 := time.Parse(time.RFC3339Nano, sp.start)
		end, err2 := time.Parse(time.RFC3339Nano, sp.end)
		switch {
		case err1 != nil:
			c.add(results.ResultsFile, sp.field+"started_at", "%q is not an RFC 3339 time", sp.start)
			continue
		case err2 != nil:
			c.add(results.ResultsFile, sp.field+"finished_at", "%q is not an RFC 3339 time", sp.end)
			continue
		case end.Before(start):
			c.add(results.ResultsFile, sp.field+"finished_at", "is %s, before started_at %s", sp.end, sp.start)
			continue
		}
		var early, late *results.Process
		var earlyAt, lateAt time.Time
		for i, p := range c.f.Processes {
			if sp.shard >= 0 && p.Shard != sp.shard {
				continue
			}
			s, e, ok := results.Window(p)
			if !ok {
				continue // results.Windows reports it.
			}
			if early == nil || s.Before(earlyAt) {
				early, earlyAt = &c.f.Processes[i], s
			}
			if late == nil || e.After(lateAt) {
				late, lateAt = &c.f.Processes[i], e
			}
		}
		if early == nil {
			continue
		}
		switch {
		case earlyAt.Before(start):
			c.add(results.ResultsFile, sp.field+"started_at", "is %s, after %s line %d started (%s): a run starts before its processes", sp.start, results.ProcessesFile, early.N, early.StartedAt)
		case earlyAt.Sub(start) > maxLeadIn:
			c.add(results.ResultsFile, sp.field+"started_at", "is %s, %s before its first process (%s line %d, %s): the harness starts its first process within %s of the run's start", sp.start, earlyAt.Sub(start).Round(time.Second), results.ProcessesFile, early.N, early.StartedAt, maxLeadIn)
		}
		switch {
		case lateAt.After(end.Add(time.Second)):
			c.add(results.ResultsFile, sp.field+"finished_at", "is %s, before %s line %d ended (%s): a run finishes after its processes", sp.end, results.ProcessesFile, late.N, late.EndedAt)
		case end.Sub(lateAt) > maxLeadIn:
			c.add(results.ResultsFile, sp.field+"finished_at", "is %s, %s after its last process ended (%s line %d, %s): the harness finishes within %s of its last process", sp.end, end.Sub(lateAt).Round(time.Second), results.ProcessesFile, late.N, late.EndedAt, maxLeadIn)
		}
	}
}

func procField(p results.Process, field string) string {
	return fmt.Sprintf("line %d (process %d): %s", p.N, p.ID, field)
}
