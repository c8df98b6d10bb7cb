// Package review checks and renders a results folder for reviewers. It
// knows no scenario: the caller hands it the registry, and every verdict
// is derived again through scenario.Evaluate, the same function the run
// used, from the folder's own records.
package review

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/suite"
)

// Options say what Verify compares the folder with.
type Options struct {
	Registry scenario.Registry
	// InputPath, when set, is an input file that must hash to the recorded
	// input; the folder's own copy is always checked.
	InputPath string
	// ExePath, when set, is an executable that must hash to the recorded
	// one.
	ExePath string
	// SourceRoot is a source tree to compare with the recorded working
	// tree hash; empty skips that comparison with a notice.
	SourceRoot string
	Limits     results.Limits
}

// Outcome is what Verify found. The folder is consistent when Findings is
// empty; Notices are checks that could not be made, or facts a reviewer
// should know, such as overrides.
type Outcome struct {
	Findings []results.Finding
	Notices  []string
	Folder   *results.Folder
	// Derived is results.json as the records give it.
	Derived *results.Results
	// CodeChanged says that the given executable or source tree differs
	// from the recorded one.
	CodeChanged []string
	// Executables are the executables the folder's processes ran, by
	// what started them (BuiltInWorkers, or a user's program's argv[0]),
	// each the first hash its process lines record; empty before format
	// 5. Merge compares them between shards.
	Executables map[string]string
}

// OK says whether the folder is consistent.
func (o *Outcome) OK() bool { return len(o.Findings) == 0 }

// RunPassed says whether the recorded run met its expectations, as the
// records give it.
func (o *Outcome) RunPassed() bool { return o.Derived != nil && o.Derived.Pass }

// Verify checks a folder without trusting it: the input copy against the
// recorded hash, the settings against the input and the recorded
// overrides, and every derived figure, pass flag and extra table against
// what scenario.Evaluate derives from the records.
func Verify(ctx context.Context, dir string, opts Options) (*Outcome, error) {
	f, err := results.Load(dir, opts.Limits)
	if err != nil {
		return nil, fmt.Errorf("%w: %w; pass the results folder an experiment wrote", errclass.ErrUsage, err)
	}
	out := &Outcome{Folder: f}
	out.Findings = append(out.Findings, f.Findings...)
	if f.Results == nil {
		return out, nil
	}
	c := &check{ctx: ctx, out: out, f: f, opts: opts}
	if !c.format() {
		return out, nil
	}
	in, ok := c.input()
	c.attachments()
	c.code()
	c.shards()
	c.processes()
	c.scenarios(in, ok)
	return out, nil
}

type check struct {
	// ctx bounds the plans verify makes again.
	ctx  context.Context
	out  *Outcome
	f    *results.Folder
	opts Options
	// format is the folder's format version.
	formatVersion int
}

func (c *check) add(file, field, format string, args ...any) {
	c.out.Findings = append(c.out.Findings, results.Finding{File: file, Field: field, Message: fmt.Sprintf(format, args...)})
}

func (c *check) notice(format string, args ...any) {
	c.out.Notices = append(c.out.Notices, fmt.Sprintf(format, args...))
}

// format reads the folder's format version. A newer one than this build
// writes cannot be judged by its rules, so nothing else is checked; an older
// one is judged by today's rules, which read every older record alike, and
// the reviewer is told what changed since.
func (c *check) format() bool {
	v := c.f.Results.Format
	if v == 0 {
		v = 1
	}
	c.formatVersion = v
	switch {
	case v > results.FormatVersion:
		c.add(results.ResultsFile, "format", "is %d, but this idemlab reads formats up to %d; verify it with the idemlab that wrote it, or a newer one", v, results.FormatVersion)
		return false
	case v < results.FormatVersion:
		for n := v + 1; n <= results.FormatVersion; n++ {
			c.notice("the folder is format %d, this idemlab writes format %d; format %d: %s", v, results.FormatVersion, n, results.FormatChanges[n])
		}
	}
	c.shape()
	return true
}

// shape checks that the folder holds nothing its format predates: an
// older format is judged by laxer rules, so a folder must not claim one
// falsely.
func (c *check) shape() {
	r, v := c.f.Results, c.formatVersion
	claim := func(since int, what string) {
		if v < since {
			c.add(results.ResultsFile, "format", "is %d, but the folder holds %s, which format %d introduced", v, what, since)
		}
	}
	if len(r.Attachments) > 0 {
		claim(2, "attachments")
	}
	for _, a := range r.Attachments {
		if a.Carried {
			claim(5, "attachments carried beside the files the plans read")
			break
		}
	}
	if len(r.AttachmentsLeftOut) > 0 {
		claim(5, "attachments_left_out")
	}
	if r.Shard != nil {
		claim(3, "shard")
	}
	if len(r.Shards) > 0 {
		claim(3, "shards")
	}
	for _, p := range c.f.Processes {
		if p.ExecutableSHA256 != "" {
			claim(5, fmt.Sprintf("%s line %d's executable_sha256", results.ProcessesFile, p.N))
			break
		}
	}
	for _, s := range r.Scenarios {
		if i := slices.IndexFunc(s.Conditions, func(c results.ConditionResult) bool { return c.Scheduled }); i >= 0 {
			claim(results.FormatScheduled, fmt.Sprintf("scenarios[%s].conditions[%s].scheduled", s.Name, s.Conditions[i].Name))
			break
		}
	}
}

// input checks the folder's input copy and, when given, --input, and
// returns the input the settings are derived from.
func (c *check) input() (suite.Input, bool) {
	r := c.f.Results
	var in suite.Input
	ok := false
	if c.f.Input != nil {
		parsed, err := suite.ParseInput(results.InputCopyFile, c.f.Input, c.opts.Registry)
		switch {
		case parsed.SHA256 != r.Inputs.SHA256 && err == nil:
			field, msg := c.editedField(parsed)
			c.add(results.InputCopyFile, field, "%s (the copy hashes to %s, but results.json inputs.sha256 records %s: it was edited after the run)", msg, parsed.SHA256, r.Inputs.SHA256)
		case parsed.SHA256 != r.Inputs.SHA256:
			c.add(results.InputCopyFile, "", "hashes to %s, but results.json inputs.sha256 records %s, and no longer reads as an input file: %s", parsed.SHA256, r.Inputs.SHA256, strings.TrimPrefix(err.Error(), errclass.ErrUsage.Error()+": "))
		case err != nil:
			c.add(results.InputCopyFile, "", "%v", err)
		default:
			in, ok = parsed, true
		}
	}
	if c.opts.InputPath != "" {
		b, err := readRegular(c.opts.InputPath)
		if err != nil {
			return in, false
		}
		parsed, err := suite.ParseInput(c.opts.InputPath, b, c.opts.Registry)
		if parsed.SHA256 != r.Inputs.SHA256 {
			first := ""
			if err == nil {
				field, msg := c.editedField(parsed)
				first = fmt.Sprintf("; its first difference from what the run used: %s %s", strings.TrimSpace(field+":"), msg)
			}
			c.add(results.ResultsFile, "inputs.sha256", "records %s, but --input %s hashes to %s: the folder was not made from that file%s", r.Inputs.SHA256, c.opts.InputPath, parsed.SHA256, first)
			return in, ok
		}
		if err == nil && !ok {
			in, ok = parsed, true
		}
	}
	if !ok && c.f.Input == nil && c.opts.InputPath == "" {
		c.notice("the folder carries no %s and no --input was given, so the settings could not be derived again", results.InputCopyFile)
	}
	return in, ok
}

// editedField names the first field where an input copy that no longer
// hashes to the recorded input differs from what the run used. It plans
// each recorded scenario from the copy with the recorded overrides and
// compares the settings with the recorded ones; a settings field that the
// section holds under the same path is named by its input path
// ("redelivery.event_id"), any other by the section and the settings path.
func (c *check) editedField(in suite.Input) (field, msg string) {
	used := map[string]bool{}
	for _, rs := range c.f.Results.Scenarios {
		used[rs.Name] = true
		s, ok := c.opts.Registry.Lookup(rs.Name)
		if !ok {
			continue
		}
		plans, err := suite.PlanAll(c.ctx, []scenario.Scenario{s}, in, rs.Overrides, c.f, suite.RecordedMachine(c.f.Results.Environment))
		if err != nil {
			return rs.Name, fmt.Sprintf("gives no valid plan with the recorded overrides: %v", err)
		}
		diffs := derivedDiffs(rs.Settings, scenario.Marshal(plans[0].Plan.Settings()))
		if len(diffs) == 0 {
			continue
		}
		path := scenario.ParsePath(diffs[0].Path)
		ran := diffs[0].A
		if v, ok := scenario.Lookup(rs.Settings, path); ok {
			ran = results.Compact(v)
		}
		if v, ok := scenario.Lookup(in.Sections[rs.Name], path); ok {
			return rs.Name + diffs[0].Path, fmt.Sprintf("is %s, but the run used %s", results.Compact(v), ran)
		}
		return rs.Name, fmt.Sprintf("gives settings%s %s, but the run used %s", diffs[0].Path, diffs[0].B, ran)
	}
	var unused []string
	for name := range in.Sections {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		return "", fmt.Sprintf("gives the settings the run recorded for every scenario it ran, so it differs in a section the run did not use (%s) or in spacing", strings.Join(unused, ", "))
	}
	return "", "gives the settings the run recorded for every scenario it ran, so it differs only in spacing or order"
}

func readRegular(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fs.ErrInvalid
	}
	return os.ReadFile(path)
}

// attachments checks every copy the folder carries against its recorded
// hash, the ones the plans read (which deriving reads again) and the ones
// carried beside them (which nothing else reads), and lists what the run
// left out.
func (c *check) attachments() {
	for i, a := range c.f.Results.Attachments {
		if _, err := c.f.ReadFile(a.Name); err != nil {
			c.add(results.ResultsFile, results.Field("attachments", i), "%v", err)
		}
	}
	if n := len(c.f.Results.AttachmentsLeftOut); n > 0 {
		c.notice("the run left out %d file(s) beside the ones its plans read (attachments_left_out in %s): %s", n, results.ResultsFile, strings.Join(c.f.Results.AttachmentsLeftOut[:min(3, n)], "; "))
	}
}

// code compares the recorded code identity with what the reviewer has.
func (c *check) code() {
	r := c.f.Results
	if c.opts.ExePath != "" {
		sum, err := results.HashFile(c.opts.ExePath)
		switch {
		case err != nil:
			c.add("--exe", c.opts.ExePath, "cannot hash it: %v", err)
		case sum != r.Code.ExecutableSHA256 && c.temporaryExecutable() != "":
			c.notice("--exe %s cannot be the executable that made this folder: the run's executable was %s, a temporary binary the go command built (go run or go test) and deleted afterwards, so no file can hash to it; the code is identified by the working tree hash instead, which verify compares when run inside the idemlab source tree", c.opts.ExePath, c.temporaryExecutable())
		case sum != r.Code.ExecutableSHA256:
			c.out.CodeChanged = append(c.out.CodeChanged, fmt.Sprintf("--exe %s hashes to %s, the run's executable to %s", c.opts.ExePath, sum, r.Code.ExecutableSHA256))
		default:
			c.notice("--exe %s is the executable that made this folder (sha256 %s)", c.opts.ExePath, sum)
		}
	}
	switch {
	case r.Code.WorkingTree == nil:
		c.notice("the run recorded no working tree hash (%s)", r.Code.WorkingTreeNote)
	case c.opts.SourceRoot == "":
		c.notice("working tree hash not compared: no idemlab source tree in the working folder")
	default:
		got, err := results.SourceTreeHash(c.opts.SourceRoot)
		if err != nil {
			c.notice("working tree hash not compared: %v", err)
			return
		}
		if got.Method != r.Code.WorkingTree.Method {
			c.notice("working tree hash not compared: the run hashed its tree by another rule than this idemlab's (format 5 hashes every file the build reads: cgo sources, headers and embedded files too; earlier formats only Go files, go.mod and go.sum)")
			return
		}
		if got.SHA256 != r.Code.WorkingTree.SHA256 || got.Files != r.Code.WorkingTree.Files {
			c.out.CodeChanged = append(c.out.CodeChanged, fmt.Sprintf("the working tree here hashes to %s over %d files; the run's working tree at start hashed to %s over %d files", got.SHA256, got.Files, r.Code.WorkingTree.SHA256, r.Code.WorkingTree.Files))
			return
		}
		c.notice("the working tree here hashes to %s over %d files, as the run's did at start: the same source", got.SHA256, got.Files)
	}
}

// temporaryExecutable is the run's executable, as its workers' command
// lines name it, when that was a temporary build of the go command; ""
// otherwise, or when no process was recorded.
func (c *check) temporaryExecutable() string {
	if len(c.f.Processes) == 0 || len(c.f.Processes[0].Argv) == 0 {
		return ""
	}
	if exe := c.f.Processes[0].Argv[0]; results.TemporaryBuild(exe) {
		return exe
	}
	return ""
}

// scenarios derives every scenario again and compares.
func (c *check) scenarios(in suite.Input, haveInput bool) {
	r := c.f.Results
	derived := &results.Results{Pass: true}
	seen := map[string]bool{}
	claimed := map[string]bool{}
	for i, rs := range r.Scenarios {
		base := results.Field("scenarios", results.Key(rs.Name))
		if seen[rs.Name] {
			c.add(results.ResultsFile, results.Field("scenarios", i, "name"), "scenario %q appears twice", rs.Name)
			continue
		}
		seen[rs.Name] = true
		s, ok := c.opts.Registry.Lookup(rs.Name)
		if !ok {
			c.add(results.ResultsFile, base+".name", "%q is not a scenario of this idemlab (known: %s)", rs.Name, strings.Join(c.opts.Registry.Names(), ", "))
			continue
		}
		for name := range rs.Overrides {
			claimed[name] = true
		}
		if v, changed := c.recordsChanged(rs.Name); changed {
			c.add(results.ResultsFile, base, "was recorded in format %d; format %d changed its records (%s), so this idemlab cannot derive it again: verify it with the idemlab that made it", c.formatVersion, v, results.FormatRecords[v][rs.Name])
			derived.Scenarios = append(derived.Scenarios, rs)
			derived.Pass = derived.Pass && rs.Pass
			continue
		}
		if haveInput {
			c.settings(s, rs, in)
		}
		d := scenario.Evaluate(s, rs.Overrides, rs.Settings, c.f.Records(rs.Name))
		c.compare(base, rs, d)
		derived.Scenarios = append(derived.Scenarios, d)
		derived.Pass = derived.Pass && d.Pass
	}
	if r.Pass != derived.Pass {
		c.add(results.ResultsFile, "pass", "is %v, but the records give %v", r.Pass, derived.Pass)
	}
	for _, l := range c.f.Observations {
		if !seen[l.Scenario] {
			c.add(results.ObservationsFile, fmt.Sprintf("line %d: scenario", l.N), "%q is not a scenario of %s", l.Scenario, results.ResultsFile)
		}
	}
	want := c.processIDs()
	for i, p := range c.f.Processes {
		if p.ID != want[i] {
			c.add(results.ProcessesFile, fmt.Sprintf("line %d: id", p.N), "is %d, want %d: ids are given in order from %d, so a line is missing, added or moved", p.ID, want[i], want[0])
		}
		if !seen[p.Scenario] {
			c.add(results.ProcessesFile, fmt.Sprintf("line %d: scenario", p.N), "%q is not a scenario of %s", p.Scenario, results.ResultsFile)
		}
	}
	c.out.Derived = derived
}

// settings derives the scenario's settings from the input section and the
// recorded overrides, and compares them with the recorded settings.
func (c *check) settings(s scenario.Scenario, rs results.ScenarioResult, in suite.Input) {
	base := results.Field("scenarios", results.Key(rs.Name))
	plans, err := suite.PlanAll(c.ctx, []scenario.Scenario{s}, in, rs.Overrides, c.f, suite.RecordedMachine(c.f.Results.Environment))
	if err != nil {
		c.add(results.ResultsFile, base+".overrides", "the input and the recorded overrides give no valid plan: %v", err)
		return
	}
	want := scenario.Marshal(plans[0].Plan.Settings())
	for _, d := range results.DiffPaths(base+".settings", want, rs.Settings) {
		if movedParallel(base+".settings", d) {
			c.notice("%s: %s as recorded; how many trials ran at once is how the run was scheduled, not what it tested, and a newer run records it beside the settings (parallel), so it is not derived", d.Path, d.B)
			continue
		}
		if v, ok := c.rederived(d.Path); ok {
			c.notice("%s: %s as recorded, %s from the input by format %d's rule; format %d changed how it is derived", d.Path, d.B, d.A, v, v)
			continue
		}
		c.add(results.ResultsFile, d.Path, "is %s, but the input and the recorded overrides give %s", d.B, d.A)
	}
	names := make([]string, 0, len(rs.Overrides))
	for n := range rs.Overrides {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		section := rs.Name
		if slices.Contains(backend.RecordedFlags, n) {
			section = backend.SectionName
		}
		c.notice("scenario %s ran with --%s %s, which overrides the input file's %s section", rs.Name, n, rs.Overrides[n], section)
	}
}

// compare reports every field where the recorded result differs from the
// derived one.
func (c *check) compare(base string, rec, der results.ScenarioResult) {
	type view struct {
		Conditions []results.ConditionResult `json:"conditions"`
		Extra      any                       `json:"extra,omitempty"`
		Plan       *results.PlanResult       `json:"plan,omitempty"`
		Pass       bool                      `json:"pass"`
	}
	a := view{Conditions: withoutFindings(rec.Conditions), Extra: rawOrNil(rec.Extra), Plan: rec.Plan, Pass: rec.Pass}
	b := view{Conditions: withoutFindings(der.Conditions), Extra: rawOrNil(der.Extra), Plan: der.Plan, Pass: der.Pass}
	if c.formatVersion < results.FormatScheduled {
		// The folder's format records no scheduled flag; shape refuses
		// one that claims to.
		for i := range b.Conditions {
			b.Conditions[i].Scheduled = false
		}
	}
	c.compareFindings(base, rec, der)
	for _, d := range results.DiffPaths(base, a, b) {
		if v, ok := c.rederived(d.Path); ok {
			c.notice("%s: %s as recorded, %s by format %d's rule; format %d changed how it is derived", d.Path, d.A, d.B, v, v)
			continue
		}
		c.add(results.ResultsFile, conditionPath(d.Path, rec), "is %s, but the records give %s", d.A, d.B)
	}
}

// recordsChanged says whether a version after the folder's changed the
// scenario's records, and which.
func (c *check) recordsChanged(name string) (int, bool) {
	for v := c.formatVersion + 1; v <= results.FormatVersion; v++ {
		if _, ok := results.FormatRecords[v][name]; ok {
			return v, true
		}
	}
	return 0, false
}

// rederived says whether a field's derivation changed after the folder's
// format, and in which version.
func (c *check) rederived(path string) (int, bool) {
	for v := c.formatVersion + 1; v <= results.FormatVersion; v++ {
		for _, prefix := range results.FormatDerivations[v] {
			if hasPathPrefix(path, prefix) {
				return v, true
			}
		}
	}
	return 0, false
}

// derivedDiffs are the differences of the recorded settings from the
// derived ones, (recorded as A, derived as B), less a parallel an older
// folder records inside them (movedParallel).
func derivedDiffs(recorded, derived json.RawMessage) []results.FieldDiff {
	var out []results.FieldDiff
	for _, d := range results.DiffPaths("", derived, recorded) {
		if !movedParallel("", d) {
			out = append(out, results.FieldDiff{Path: d.Path, A: d.B, B: d.A})
		}
	}
	return out
}

// movedParallel says whether d, a difference under the settings path
// settings between the derived (A) and the recorded (B) settings, is a
// parallel the folder records inside its settings (explore's or an
// article file's, a pattern's) and the derivation no longer gives: a
// folder made before parallel moved beside the settings.
func movedParallel(settings string, d results.FieldDiff) bool {
	if d.A != "(absent)" {
		return false
	}
	rest, ok := strings.CutPrefix(d.Path, settings)
	if !ok {
		return false
	}
	if in, ok := strings.CutPrefix(rest, ".articles["); ok {
		i := strings.Index(in, "]")
		if i < 1 || strings.Trim(in[:i], "0123456789") != "" {
			return false
		}
		rest = in[i+1:]
	}
	return rest == ".parallel"
}

// hasPathPrefix is strings.HasPrefix where "[*]" in prefix matches any
// index in path.
func hasPathPrefix(path, prefix string) bool {
	for {
		before, after, wild := strings.Cut(prefix, "[*]")
		if !strings.HasPrefix(path, before) {
			return false
		}
		if !wild {
			return true
		}
		rest := path[len(before):]
		end := strings.IndexByte(rest, ']')
		if !strings.HasPrefix(rest, "[") || end < 0 {
			return false
		}
		path, prefix = rest[end+1:], after
	}
}

// compareFindings reports each finding the records give that the stored
// result does not hold, in its own words (the file and field of the
// contradiction), and each stored finding the records no longer give. A
// finding both hold is a failed run, not a disagreement.
func (c *check) compareFindings(base string, rec, der results.ScenarioResult) {
	stored := map[results.Finding]int{}
	for _, f := range rec.AllFindings() {
		stored[f]++
	}
	for _, f := range der.AllFindings() {
		if stored[f] > 0 {
			stored[f]--
			continue
		}
		c.out.Findings = append(c.out.Findings, f)
	}
	for _, f := range rec.AllFindings() {
		if stored[f] > 0 {
			stored[f]--
			c.add(results.ResultsFile, base+".findings", "records %q, but the records do not give it", f.String())
		}
	}
}

func withoutFindings(cs []results.ConditionResult) []results.ConditionResult {
	out := make([]results.ConditionResult, len(cs))
	for i, c := range cs {
		c.Findings = nil
		out[i] = c
	}
	return out
}

// conditionPath names conditions by name rather than index in a path.
func conditionPath(p string, rec results.ScenarioResult) string {
	for i, cr := range rec.Conditions {
		idx := fmt.Sprintf(".conditions[%d]", i)
		if strings.Contains(p, idx) {
			return strings.Replace(p, idx, ".conditions["+cr.Name+"]", 1)
		}
	}
	return p
}

func rawOrNil(b []byte) any {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	return jsonRaw(b)
}

type jsonRaw []byte

func (j jsonRaw) MarshalJSON() ([]byte, error) { return j, nil }

// Verdict classifies an outcome as an error for the exit code: findings
// first, then a failed run, then changed code.
func Verdict(o *Outcome, dir string) error {
	switch {
	case !o.OK():
		return fmt.Errorf("%w: %s: %d finding(s), listed above; each names the file and the field", errclass.ErrFindings, dir, len(o.Findings))
	case !o.RunPassed():
		return fmt.Errorf("%w: %s is consistent, but its run failed its expectations (pass: false)", errclass.ErrRunFailed, dir)
	case len(o.CodeChanged) > 0:
		return fmt.Errorf("%w: %s verifies, but %s", errclass.ErrCodeChanged, dir, strings.Join(o.CodeChanged, "; "))
	}
	return nil
}
