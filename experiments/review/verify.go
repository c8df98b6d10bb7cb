package review

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"sort"
	"strings"

	"idemlab/experiments/harness"
	"idemlab/worker/protocol"
)

// Options say what Verify compares the folder with.
type Options struct {
	// InputPath is the input file whose SHA-256 must equal the recorded one.
	InputPath string
	// SourceRoot is the module's source tree; empty skips the code hash
	// check with a notice, as when the binary runs away from its source.
	SourceRoot string
	Limits     Limits
}

// Outcome is what Verify found. The folder verifies when Findings is empty;
// Notices are checks that could not be made and say why.
type Outcome struct {
	Findings []Finding
	Notices  []string
	// Folder is the loaded folder, for callers that go on to rerun it.
	Folder *Folder
}

// OK says whether the folder verified.
func (o *Outcome) OK() bool { return len(o.Findings) == 0 }

// Verify loads dir and checks it: schema, hashes, internal consistency and
// the per-scenario plug-ins. It returns an error only for bad arguments
// (wrapping harness.ErrUsage); a bad folder gives findings.
func Verify(dir string, opts Options) (*Outcome, error) {
	inputSum, err := hashInput(opts.InputPath)
	if err != nil {
		return nil, err
	}
	f, err := Load(dir, opts.Limits)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", harness.ErrUsage, err)
	}
	out := &Outcome{Folder: f}
	out.Findings = append(out.Findings, f.Findings...)
	out.Notices = append(out.Notices, f.Notices...)
	if f.Results == nil {
		return out, nil
	}
	c := &checker{f: f}
	c.hashes(inputSum, opts)
	cf, cn := consistency(f)
	c.findings = append(c.findings, cf...)
	c.notices = append(c.notices, cn...)
	out.Findings = append(out.Findings, c.findings...)
	out.Notices = append(out.Notices, c.notices...)
	return out, nil
}

// consistency runs every check that needs only the folder: processes,
// observations, pass agreement and each scenario's plug-in.
func consistency(f *Folder) ([]Finding, []string) {
	c := &checker{f: f}
	c.scen = c.scenarioNames()
	c.processes()
	c.observations()
	c.passes()
	for _, s := range f.Results.Scenarios {
		if p, ok := plugins[s.Name]; ok && p.check != nil {
			c.findings = append(c.findings, p.check(f, s)...)
			continue
		}
		c.notice("scenario %s: no verify plug-in; only the generic checks ran (schema, hashes, processes, exit codes, pass agreement)", s.Name)
		c.genericPass(s)
	}
	return c.findings, c.notices
}

func hashInput(path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%w: --input: a file name is required", harness.ErrUsage)
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w: --input %s: does not exist", harness.ErrUsage, path)
		}
		return "", fmt.Errorf("%w: --input %s: %v", harness.ErrUsage, path, errors.Unwrap(err))
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w: --input %s: not a regular file", harness.ErrUsage, path)
	}
	sum, err := harness.HashFile(path)
	if err != nil {
		return "", fmt.Errorf("%w: --input %s: %v", harness.ErrUsage, path, err)
	}
	return sum, nil
}

type checker struct {
	f        *Folder
	scen     map[string]harness.ScenarioResult
	findings []Finding
	notices  []string
}

func (c *checker) add(file, fld, format string, args ...any) {
	c.findings = append(c.findings, Finding{File: file, Field: fld, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) notice(format string, args ...any) {
	c.notices = append(c.notices, fmt.Sprintf(format, args...))
}

func (c *checker) hashes(inputSum string, opts Options) {
	r := c.f.Results
	if r.Inputs.SHA256 != inputSum {
		c.add(harness.ResultsFile, "inputs.sha256", "recorded %s, but --input %s hashes to %s", r.Inputs.SHA256, opts.InputPath, inputSum)
	}
	switch {
	case r.Code.Source == nil:
		c.notice("code hash check skipped: the run recorded no source tree hash (%s)", r.Code.SourceNote)
	case opts.SourceRoot == "":
		c.notice("code hash check skipped: no idemlab source tree found from the working folder")
	default:
		got, err := harness.SourceTreeHash(opts.SourceRoot)
		if err != nil {
			c.add(harness.ResultsFile, "code.source.sha256", "cannot hash the source tree %s: %v", opts.SourceRoot, err)
			return
		}
		if got.Method != r.Code.Source.Method {
			c.notice("code hash check skipped: recorded with another method (%q)", r.Code.Source.Method)
			return
		}
		if got.SHA256 != r.Code.Source.SHA256 || got.Files != r.Code.Source.Files {
			c.add(harness.ResultsFile, "code.source.sha256", "recorded %s over %d files, but the source tree here hashes to %s over %d files (the code changed since the run)",
				r.Code.Source.SHA256, r.Code.Source.Files, got.SHA256, got.Files)
		}
	}
	c.notice("executable hash not checked: a rebuilt binary differs byte for byte; the source tree hash stands for the code")
}

func (c *checker) scenarioNames() map[string]harness.ScenarioResult {
	m := map[string]harness.ScenarioResult{}
	for i, s := range c.f.Results.Scenarios {
		if _, dup := m[s.Name]; dup {
			c.add(harness.ResultsFile, field("scenarios", i, "name"), "scenario %q appears twice", s.Name)
		}
		m[s.Name] = s
		seen := map[string]bool{}
		for j, cond := range s.Conditions {
			if seen[cond.Name] {
				c.add(harness.ResultsFile, field("scenarios", key(s.Name), "conditions", j, "name"), "condition %q appears twice", cond.Name)
			}
			seen[cond.Name] = true
		}
	}
	return m
}

// processes checks the process records on their own: ids in order, known
// scenarios, and a stdout that keeps the worker protocol for the exit code.
func (c *checker) processes() {
	scen := c.scen
	for i, p := range c.f.Processes {
		line := fmt.Sprintf("line %d", c.f.ProcessLines[i])
		if p.ID != i+1 {
			c.add(harness.ProcessesFile, line+": id", "is %d, want %d: ids are given in order from 1, so a line is missing, added or moved", p.ID, i+1)
		}
		if _, ok := scen[p.Scenario]; !ok {
			c.add(harness.ProcessesFile, line+": scenario", "%q is not a scenario of %s", p.Scenario, harness.ResultsFile)
		}
		switch {
		case p.KilledBy != "" || p.Signal != "":
			continue
		case p.ExitCode == protocol.ExitACK, p.ExitCode == protocol.ExitCrash, p.ExitCode == protocol.ExitStepFailed:
		default:
			c.add(harness.ProcessesFile, line+": exit_code", "%d is not an outcome the harness accepts (0, %d or %d); a run with it would have failed", p.ExitCode, protocol.ExitCrash, protocol.ExitStepFailed)
			continue
		}
		rep, err := harness.ParseReport(p.Stdout)
		if err != nil {
			c.add(harness.ProcessesFile, line+": stdout", "%v", err)
			continue
		}
		if rep.Worker != p.Worker {
			c.add(harness.ProcessesFile, line+": stdout", "report names worker %q, record says %q", rep.Worker, p.Worker)
		}
		crashAt := p.Env[protocol.EnvCrashAt]
		if p.ExitCode == protocol.ExitCrash && rep.CrashedAt != crashAt {
			c.add(harness.ProcessesFile, line+": exit_code", "17 (crash) but the report crashed at %q while %s=%q was set", rep.CrashedAt, protocol.EnvCrashAt, crashAt)
		}
		if p.ExitCode != protocol.ExitCrash && rep.CrashedAt != "" {
			c.add(harness.ProcessesFile, line+": exit_code", "%d, but the report says it crashed at %q (a crash exits 17)", p.ExitCode, rep.CrashedAt)
		}
	}
}

// observations checks every observation line against the results and the
// processes it names.
func (c *checker) observations() {
	scen := c.scen
	for _, l := range c.f.Observations {
		line := fmt.Sprintf("line %d", l.N)
		sname, _ := l.Data["scenario"].(string)
		s, ok := scen[sname]
		if !ok {
			c.add(harness.ObservationsFile, line+": scenario", "%q is not a scenario of %s", sname, harness.ResultsFile)
			continue
		}
		// Some scenarios observe more than their listed conditions (a
		// mutant table in extra, for instance), so whether every
		// observation's condition is listed is left to the plug-ins.
		_ = s
		cname, hasCond := l.Data["condition"].(string)
		for _, id := range processIDs(l.Data) {
			p, pline, ok := c.f.process(id)
			if !ok {
				c.add(harness.ObservationsFile, line+": process_id", "process %d is not in %s", id, harness.ProcessesFile)
				continue
			}
			if p.Scenario != sname || (hasCond && p.Condition != "" && p.Condition != cname) {
				c.add(harness.ObservationsFile, line+": process_id", "process %d belongs to %s/%s (%s line %d), not %s/%s", id, p.Scenario, p.Condition, harness.ProcessesFile, pline, sname, cname)
			}
		}
		if id, ok := singleProcessID(l.Data); ok {
			if code, ok := observedExitCode(l.Data); ok {
				if p, pline, found := c.f.process(id); found && p.ExitCode != code {
					c.add(harness.ObservationsFile, line+": exit_code", "%d, but process %d exited %d (%s line %d)", code, id, p.ExitCode, harness.ProcessesFile, pline)
				}
			}
		}
	}
}

func hasCondition(s harness.ScenarioResult, name string) bool {
	for _, c := range s.Conditions {
		if c.Name == name {
			return true
		}
	}
	return false
}

// processIDs collects the process ids an observation refers to, under the
// field names the scenarios use: process_id, process_ids, and the same
// inside nested objects.
func processIDs(v any) []int {
	var out []int
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				switch {
				case k == "process_id":
					if n, ok := asInt(t[k]); ok {
						out = append(out, n)
					}
				case k == "process_ids":
					if xs, ok := t[k].([]any); ok {
						for _, x := range xs {
							if n, ok := asInt(x); ok {
								out = append(out, n)
							}
						}
					}
				default:
					walk(t[k])
				}
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(v)
	return out
}

func singleProcessID(m map[string]any) (int, bool) {
	ids := processIDs(m)
	if len(ids) != 1 {
		return 0, false
	}
	_, top := m["process_id"]
	return ids[0], top
}

// observedExitCode finds the exit code an observation states for its one
// process, at the top level or in its "observed" object.
func observedExitCode(m map[string]any) (int, bool) {
	if n, ok := asInt(m["exit_code"]); ok {
		return n, true
	}
	if o, ok := m["observed"].(map[string]any); ok {
		return asInt(o["exit_code"])
	}
	return 0, false
}

func asInt(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}

// passes checks that each scenario's pass is the conjunction of its
// conditions and the overall pass the conjunction of the scenarios.
func (c *checker) passes() {
	r := c.f.Results
	all := true
	for _, s := range r.Scenarios {
		want := true
		for _, cond := range s.Conditions {
			want = want && cond.Pass
			if cond.Pass && cond.Diff != "" {
				c.add(harness.ResultsFile, field("scenarios", key(s.Name), "conditions", key(cond.Name), "diff"), "is set although pass is true")
			}
			if !cond.Pass && cond.Diff == "" {
				c.add(harness.ResultsFile, field("scenarios", key(s.Name), "conditions", key(cond.Name), "diff"), "is empty although pass is false")
			}
		}
		if s.Pass != want {
			c.add(harness.ResultsFile, field("scenarios", key(s.Name), "pass"), "is %v, but its conditions give %v", s.Pass, want)
		}
		all = all && s.Pass
	}
	if r.Pass != all {
		c.add(harness.ResultsFile, "pass", "is %v, but the scenarios give %v", r.Pass, all)
	}
}

// genericPass is the fallback for a scenario without a plug-in: a condition
// passes exactly when its observed value equals its expected value.
func (c *checker) genericPass(s harness.ScenarioResult) {
	for _, cond := range s.Conditions {
		equal := jsonEqual(cond.Expected, cond.Observed)
		if equal != cond.Pass {
			c.add(harness.ResultsFile, field("scenarios", key(s.Name), "conditions", key(cond.Name), "pass"),
				"is %v, but expected and observed are %s", cond.Pass, map[bool]string{true: "equal", false: "different"}[equal])
		}
	}
}

// canon turns any JSON-encodable value into the generic form that
// encoding/json decodes to, so typed and decoded values compare equal.
func canon(v any) (any, error) {
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

func jsonEqual(a, b any) bool {
	ca, err1 := canon(a)
	cb, err2 := canon(b)
	return err1 == nil && err2 == nil && reflect.DeepEqual(ca, cb)
}

// fieldDiff is one leaf at which two JSON values differ.
type fieldDiff struct {
	Path string
	A, B string
}

// diffPaths lists the leaf paths at which two JSON values differ, each with
// both values, so a finding can name the exact field.
func diffPaths(path string, a, b any) []fieldDiff {
	ca, err1 := canon(a)
	cb, err2 := canon(b)
	if err1 != nil || err2 != nil {
		return []fieldDiff{{Path: path, A: "(not JSON)", B: "(not JSON)"}}
	}
	var out []fieldDiff
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
				out = append(out, fieldDiff{Path: p, A: fmt.Sprintf("%d items", len(xv)), B: fmt.Sprintf("%d items", len(yv))})
				return
			}
			for i := range xv {
				walk(fmt.Sprintf("%s[%d]", p, i), xv[i], yv[i])
			}
			return
		}
		if !reflect.DeepEqual(x, y) {
			out = append(out, fieldDiff{Path: p, A: compact(x), B: compact(y)})
		}
	}
	walk(path, ca, cb)
	return out
}

// compact renders a JSON value on one short line, for findings.
func compact(v any) string {
	if v == nil {
		return "(absent)"
	}
	return compactN(v, 120)
}

// compactN renders v as JSON on one line, cut to max bytes with "..." at
// the end.
func compactN(v any, max int) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}

// decodeStrict re-decodes a generic value into a typed one, refusing
// unknown fields, so a plug-in reads exactly the shape its scenario writes.
func decodeStrict(v any, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}
