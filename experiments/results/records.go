package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"

	"idemlab/worker/protocol"
)

// Records are one scenario's lines of observations.jsonl and
// raw-processes.jsonl: the evidence its fold reads.
type Records struct {
	Observations []Line
	Processes    []Process
	// Shards is the number of shard folders a merged folder joined; 0 for
	// the records of one run.
	Shards int
	// Format is the format of the folder the records were read from (1
	// where results.json names none); 0 for records with no results.json
	// yet, a run's own, which are of this build's format.
	Format int
	byID   map[int]int
}

func (r *Records) index() {
	r.byID = make(map[int]int, len(r.Processes))
	for i, p := range r.Processes {
		if _, dup := r.byID[p.ID]; !dup {
			r.byID[p.ID] = i
		}
	}
}

// Since says whether the records are of format v or newer: a check of
// evidence that format v began to record holds an older folder to the
// rule of its time.
func (r Records) Since(v int) bool { return r.Format == 0 || r.Format >= v }

// NewRecords builds records from lines, as a test's hand-made history.
func NewRecords(obs []Line, procs []Process) Records {
	r := Records{Observations: obs, Processes: procs}
	r.index()
	return r
}

// Split parts the records by condition: those of the conditions mine
// holds, and the rest, each in file order with the shard count and the
// format of r, so a fold of either part holds it to the rule of r's time.
func (r Records) Split(mine func(condition string) bool) (in, rest Records) {
	in, rest = r, r
	in.Observations, rest.Observations = partition(r.Observations, func(l Line) bool { return mine(l.Condition) })
	in.Processes, rest.Processes = partition(r.Processes, func(p Process) bool { return mine(p.Condition) })
	in.index()
	rest.index()
	return in, rest
}

// partition splits xs into those in says are in, and the rest, in order.
func partition[T any](xs []T, in func(T) bool) (yes, no []T) {
	for _, x := range xs {
		if in(x) {
			yes = append(yes, x)
		} else {
			no = append(no, x)
		}
	}
	return yes, no
}

// Process finds a process of this scenario by id.
func (r Records) Process(id int) (Process, bool) {
	i, ok := r.byID[id]
	if !ok {
		return Process{}, false
	}
	return r.Processes[i], true
}

// Checker collects findings while a fold walks the records. It also counts
// how often each process is referenced, so a process that no observation
// uses is reported.
type Checker struct {
	Findings []Finding
	used     map[int]int
}

// Add records one finding that belongs to no single condition.
func (c *Checker) Add(file, field, format string, args ...any) {
	c.add("", file, field, format, args...)
}

// AddTo records one finding about a condition's records.
func (c *Checker) AddTo(condition, file, field, format string, args ...any) {
	c.add(condition, file, field, format, args...)
}

func (c *Checker) add(condition, file, field, format string, args ...any) {
	c.Findings = append(c.Findings, Finding{File: file, Field: field, Condition: condition, Message: fmt.Sprintf(format, args...)})
}

// Obs records a finding about an observation line.
func (c *Checker) Obs(l Line, field, format string, args ...any) {
	f := fmt.Sprintf("line %d", l.N)
	if field != "" {
		f += ": " + field
	}
	c.add(l.Condition, ObservationsFile, f, format, args...)
}

// Proc records a finding about a process line.
func (c *Checker) Proc(p Process, field, format string, args ...any) {
	c.ProcFor(p, p.Condition, field, format, args...)
}

// ProcFor is Proc for a process that serves several conditions, such as a
// member of a pool: the finding fails the condition whose part of the
// process's work it is about.
func (c *Checker) ProcFor(p Process, condition, field, format string, args ...any) {
	f := fmt.Sprintf("line %d (process %d)", p.N, p.ID)
	if field != "" {
		f += ": " + field
	}
	c.add(condition, ProcessesFile, f, format, args...)
}

// Use looks up the process an observation line names and marks it used.
func (c *Checker) Use(r Records, l Line, id int) (Process, bool) {
	return c.UseFor(r, l, id, l.Condition)
}

// UseFor is Use for a process that serves lines of several conditions,
// such as a member of a pool, and is recorded under its own condition.
func (c *Checker) UseFor(r Records, l Line, id int, condition string) (Process, bool) {
	p, ok := r.Process(id)
	if !ok {
		c.Obs(l, "process_id", "process %d is not a process of scenario %s in %s", id, l.Scenario, ProcessesFile)
		return Process{}, false
	}
	if c.used == nil {
		c.used = map[int]int{}
	}
	c.used[id]++
	if p.Shard != l.Shard {
		c.Obs(l, "process_id", "process %d is in the records of shard %d, but this line is in shard %d's", id, p.Shard, l.Shard)
	}
	if p.Condition != condition {
		c.Obs(l, "process_id", "process %d ran for condition %q (%s line %d), not %q", id, p.Condition, ProcessesFile, p.N, condition)
	}
	return p, true
}

// Unused reports every process that no observation used, and every process
// used more often than max allows (0 means once).
func (c *Checker) Unused(r Records, max int) {
	if max <= 0 {
		max = 1
	}
	for _, p := range r.Processes {
		switch n := c.used[p.ID]; {
		case n == 0:
			c.Proc(p, "", "no observation refers to this process; every process a run starts is observed")
		case n > max:
			c.Proc(p, "", "referred to by %d observations, at most %d allowed", n, max)
		}
	}
}

// Report parses a process's report line and checks it against the
// process record: the worker named, the exit code and the crash point the
// harness chose. ok is false when there is no usable report.
func (c *Checker) Report(p Process) (protocol.Report, bool) {
	rep, err := protocol.ParseReport(p.Stdout)
	if err != nil {
		c.Proc(p, "stdout", "%s: %v", p.Label, err)
		return rep, false
	}
	if rep.Worker != p.Worker {
		c.Proc(p, "stdout", "the report names worker %q, the record says %q", rep.Worker, p.Worker)
	}
	// The chosen point is named, or, for a cut inside a sync, numbered.
	env, crashAt := protocol.EnvCrashAt, p.Env[protocol.EnvCrashAt]
	if cut, err := protocol.ParseSyncCut(p.Env[protocol.EnvCutAtSync]); err == nil && cut.N > 0 {
		env, crashAt = protocol.EnvCutAtSync, cut.Point()
	}
	switch {
	case p.ExitCode == protocol.ExitCrash && rep.CrashedAt != crashAt:
		c.Proc(p, "exit_code", "17 (crash) at %q, but the harness set %s=%q", rep.CrashedAt, env, p.Env[env])
	case p.ExitCode != protocol.ExitCrash && rep.CrashedAt != "":
		c.Proc(p, "exit_code", "%d, but the report says it crashed at %q (a crash exits 17)", p.ExitCode, rep.CrashedAt)
	case p.ExitCode != protocol.ExitCrash && crashAt != "" && p.Signal == "":
		c.Proc(p, "env", "%s=%q was set, but the worker exited %d without crashing", env, p.Env[env], p.ExitCode)
	}
	return rep, true
}

// Window parses a process's started_at and ended_at. ok is false when
// either does not parse as an RFC 3339 time.
func Window(p Process) (start, end time.Time, ok bool) {
	s, err1 := time.Parse(time.RFC3339Nano, p.StartedAt)
	e, err2 := time.Parse(time.RFC3339Nano, p.EndedAt)
	return s, e, err1 == nil && err2 == nil
}

// Lingering judges, in every scenario's records, the processes that
// outlived their group's leader: each is a finding on the process that
// led the group, since a worker's processes end with it (one that lingers
// after its delivery ended, a double fork, can go on changing what the
// parent then reads). The group must be the one the harness made for the
// process, which the process leads. It is pure: the run and verify call
// it alike.
func Lingering(r Records) []Finding {
	var c Checker
	for _, p := range r.Processes {
		l := p.Lingered
		if l == nil {
			continue
		}
		if l.Group != p.PID {
			c.Proc(p, "lingered.group", "is %d, but the group the harness made for this process is led by it, pid %d", l.Group, p.PID)
		}
		if len(l.Processes) == 0 {
			c.Proc(p, "lingered.processes", "is empty: a lingered record names the processes that outlived the leader")
			continue
		}
		names := make([]string, len(l.Processes))
		for i, q := range l.Processes {
			names[i] = fmt.Sprintf("pid %d (%s)", q.PID, q.Comm)
		}
		c.Proc(p, "lingered", "%d process(es) of its group %d were still running after it exited: %s; the harness killed them. A worker's processes end with it",
			len(l.Processes), l.Group, strings.Join(names, ", "))
	}
	return c.Findings
}

// Windows checks every process's times, in every scenario's records: a
// start and an end that parse, an end not before the start, and a
// duration_ms that is not negative and agrees with them (duration_ms is
// measured on the monotonic clock, the window on the wall clock; they
// agree within 2 ms).
func Windows(r Records) []Finding {
	var c Checker
	for _, p := range r.Processes {
		s, e, ok := Window(p)
		switch {
		case !ok:
			c.Proc(p, "started_at", "%q to %q is not a process window", p.StartedAt, p.EndedAt)
			continue
		case e.Before(s):
			c.Proc(p, "ended_at", "is %s, before started_at %s", p.EndedAt, p.StartedAt)
		}
		if p.DurationMS < 0 {
			c.Proc(p, "duration_ms", "is %v: a duration is not negative", p.DurationMS)
		} else if d := float64(e.Sub(s).Microseconds()) / 1000; math.Abs(d-p.DurationMS) > 2 {
			c.Proc(p, "duration_ms", "is %v, but started_at to ended_at is %v ms", p.DurationMS, d)
		}
	}
	return c.Findings
}

// Argv checks a process's command line against the one its observation
// implies. The fold builds want from the settings and from what the
// observation recorded of the run's own choices, such as its temporary
// database path, which the fold checks for consistency separately.
func (c *Checker) Argv(p Process, worker string, want []string) {
	got := p.Argv
	if len(got) < 2 || got[1] != "worker" {
		c.Proc(p, "argv", "%q is not a worker command line", got)
		return
	}
	if p.Worker != worker {
		c.Proc(p, "worker", "is %q, want %q", p.Worker, worker)
	}
	tail := got[2:]
	full := append([]string{worker}, want...)
	if !reflect.DeepEqual(tail, full) {
		c.Proc(p, "argv", "is %q, the settings give %q", tail, full)
	}
}

// Env checks the variables the harness set for a process.
func (c *Checker) Env(p Process, want map[string]string) {
	got := p.Env
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		c.Proc(p, "env", "is %s, the condition gives %s", Compact(got), Compact(want))
	}
}

// DecodeStrict decodes raw JSON into v, refusing unknown fields, so a fold
// reads exactly the shape its scenario writes.
func DecodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Canon turns any JSON-encodable value into the generic form encoding/json
// decodes to, so typed and decoded values compare equal.
func Canon(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// FieldDiff is one leaf at which two JSON values differ.
type FieldDiff struct {
	Path string
	A, B string
}

// DiffPaths lists the leaf paths at which two JSON values differ, each with
// both values, so a finding can name the exact field.
func DiffPaths(path string, a, b any) []FieldDiff {
	ca, err1 := Canon(a)
	cb, err2 := Canon(b)
	if err1 != nil || err2 != nil {
		return []FieldDiff{{Path: path, A: "(not JSON)", B: "(not JSON)"}}
	}
	var out []FieldDiff
	var walk func(p string, x, y any)
	walk = func(p string, x, y any) {
		switch xv := x.(type) {
		case map[string]any:
			yv, ok := y.(map[string]any)
			if !ok {
				break
			}
			keys := map[string]bool{}
			for k := range xv {
				keys[k] = true
			}
			for k := range yv {
				keys[k] = true
			}
			ks := make([]string, 0, len(keys))
			for k := range keys {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			for _, k := range ks {
				walk(p+"."+k, xv[k], yv[k])
			}
			return
		case []any:
			yv, ok := y.([]any)
			if !ok {
				break
			}
			if len(xv) != len(yv) {
				out = append(out, FieldDiff{Path: p, A: fmt.Sprintf("%d items", len(xv)), B: fmt.Sprintf("%d items", len(yv))})
				return
			}
			for i := range xv {
				walk(fmt.Sprintf("%s[%d]", p, i), xv[i], yv[i])
			}
			return
		}
		if !reflect.DeepEqual(x, y) {
			out = append(out, FieldDiff{Path: p, A: compactOrAbsent(x), B: compactOrAbsent(y)})
		}
	}
	walk(path, ca, cb)
	return out
}

func compactOrAbsent(v any) string {
	if v == nil {
		return "(absent)"
	}
	return CompactN(v, 120)
}

// Compact renders a value as one line of JSON, cut at 120 bytes.
func Compact(v any) string { return CompactN(v, 120) }

// CompactN renders v as JSON on one line, cut to max bytes with "..." at
// the end. HTML characters are not escaped, so "<" reads as "<".
func CompactN(v any, max int) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	s := string(bytes.TrimRight(b.Bytes(), "\n"))
	if len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}
