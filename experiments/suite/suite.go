// Package suite runs the chosen scenarios into one results folder. It owns
// the order of work that makes a run trustworthy: validate everything
// before any child runs, write into a staging folder, reach the verdict by
// folding what was recorded there, and rename the folder into place only
// when every file is complete. It knows no scenario by name.
package suite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"idemlab/experiments/backend"
	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/progress"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
	"idemlab/worker/powerfs"
)

// Options are the experiment command's settings.
type Options struct {
	Registry  scenario.Registry
	Out       string
	InputPath string
	// Scenarios to run; empty means all, in the registry's order.
	Scenarios []string
	// Overrides are the scenario flags given on the command line, by flag
	// name without dashes; each must apply to a chosen scenario.
	Overrides map[string]string
	// Executable is the harness binary re-executed for workers.
	Executable string
	// Workdir is where the source tree is looked for, for the code hash.
	Workdir string
	// TempDir holds the scenarios' scratch databases; empty means the
	// system default.
	TempDir string
	// Parallel is --parallel: how many trials of a scenario that runs
	// them side by side run at once; 0 leaves it to the input section
	// and the machine (scenario.ParallelOf). It is not an override: it
	// changes how the run is scheduled, not what it tests.
	Parallel int
	// Backend says where a PostgreSQL run's database lives (--dsn,
	// --keep); which backend runs is among the overrides.
	Backend backend.Options
	// OnBackend, when set, is called once the run's PostgreSQL server is
	// up, before the first scenario.
	OnBackend func(backend.Info)
	// Files, when set, is where plans read the files they name (a pattern
	// file); nil reads them from disk. verify --rerun sets the folder.
	Files scenario.Files
	// OnStart is called once with the scenarios and the processes each
	// plan counts, before the first process; OnScenario before each
	// scenario runs; OnProcess after each process is recorded.
	OnStart    func(parts []progress.Part)
	OnScenario func(name string)
	OnProcess  func(results.ProcessRecord)
	// Notice is where a plan's preflight says what it does that takes
	// time (scenario.PlanCaps.Preflight); nil discards it.
	Notice io.Writer
}

// Input is a decoded input file: its bytes, hash and sections.
type Input struct {
	Path     string
	Bytes    []byte
	SHA256   string
	Sections map[string]json.RawMessage
	// Backend is the top-level backend section; empty when the file has
	// none, which means SQLite.
	Backend json.RawMessage
}

// ReadInput reads an input file and splits it into sections, refusing a
// section no scenario of the registry owns.
func ReadInput(path string, reg scenario.Registry) (Input, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return Input{}, fmt.Errorf("%w: --input %s: %w; pass the input file with --input FILE", errclass.ErrUsage, path, err)
	}
	return ParseInput(path, b, reg)
}

// ParseInput splits input bytes into sections.
func ParseInput(path string, b []byte, reg scenario.Registry) (Input, error) {
	sum := sha256.Sum256(b)
	in := Input{Path: path, Bytes: b, SHA256: hex.EncodeToString(sum[:])}
	if err := scenario.DecodeStrict(b, &in.Sections); err != nil {
		return in, fmt.Errorf("%w: %s: %w", errclass.ErrUsage, path, err)
	}
	if b, ok := in.Sections[backend.SectionName]; ok {
		in.Backend = b
		delete(in.Sections, backend.SectionName)
		if _, err := backend.Resolve(b, nil); err != nil {
			return in, fmt.Errorf("%w: %s: %w", errclass.ErrUsage, path, err)
		}
	}
	for name := range in.Sections {
		if _, ok := reg.Lookup(name); !ok {
			return in, fmt.Errorf("%w: %s: %s: not a scenario nor %q (known: %s)", errclass.ErrUsage, path, name, backend.SectionName, strings.Join(reg.Names(), ", "))
		}
	}
	return in, nil
}

// Choose resolves scenario names in registry order. With no names it
// chooses every scenario that is not opt-in (scenario.Caps.OptIn): those
// run only when named.
func Choose(reg scenario.Registry, names []string) ([]scenario.Scenario, error) {
	if len(names) == 0 {
		var out []scenario.Scenario
		for _, s := range reg {
			if !s.Caps().OptIn {
				out = append(out, s)
			}
		}
		return out, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		if _, ok := reg.Lookup(n); !ok {
			hint := ""
			if strings.Contains(n, ",") {
				hint = "; repeat the flag for several, as --scenario redelivery --scenario batch"
			}
			return nil, fmt.Errorf("%w: --scenario %q: unknown (known: %s)%s", errclass.ErrUsage, n, strings.Join(reg.Names(), ", "), hint)
		}
		want[n] = true
	}
	var out []scenario.Scenario
	for _, s := range reg {
		if want[s.Name()] {
			out = append(out, s)
		}
	}
	return out, nil
}

// Planned is a chosen scenario with its plan and its overrides.
type Planned struct {
	Scenario  scenario.Scenario
	Plan      scenario.Plan
	Overrides map[string]string
	// Backend is the backend it runs on.
	Backend backend.Spec
	// Machine is the machine's fact it was planned with.
	Machine scenario.Machine
}

// ProbeMachine reads this machine's facts a plan depends on. Only a run's
// planning (experiment, and verify --rerun's run) calls it; verify, merge
// and report plan with the folder's record (RecordedMachine). Tests
// replace it.
var ProbeMachine = func() scenario.Machine { return scenario.Machine{FUSE: powerfs.Missing()} }

// RecordedMachine is the machine's fact a folder records in its
// environment. A folder of format 6 or older records none; it never
// planned a program's power class or the fs layer, so it reads as a
// machine with FUSE, which derives its settings as they were made.
func RecordedMachine(env results.Environment) scenario.Machine {
	if env.FUSE == results.FUSEAvailable {
		return scenario.Machine{}
	}
	return scenario.Machine{FUSE: env.FUSE}
}

// PlanAll decodes each chosen scenario's section with the overrides that
// apply to it, on the backend the input's backend section and the backend
// flags choose. A flag that applies to none of them is an error, and so
// is a scenario that cannot run on the chosen backend. The backend flags
// are recorded with every scenario's overrides, since its settings say
// which backend it ran on. files reads the further files a plan names;
// m is the machine's fact the plans depend on (ProbeMachine for a run,
// RecordedMachine for a folder). Work a plan does on a database runs
// under ctx, so a signal stops it.
func PlanAll(ctx context.Context, chosen []scenario.Scenario, in Input, overrides map[string]string, files scenario.Files, m scenario.Machine) ([]Planned, error) {
	bflags, overrides := backend.Split(overrides)
	spec, err := backend.Resolve(in.Backend, bflags)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errclass.ErrUsage, in.Path, err)
	}
	used := map[string]bool{}
	var out []Planned
	for _, s := range chosen {
		ov := map[string]string{}
		for _, f := range s.Flags() {
			if v, ok := overrides[f.Name]; ok {
				ov[f.Name] = v
				used[f.Name] = true
			}
		}
		req := scenario.PlanRequest{Backend: spec, Section: in.Sections[s.Name()], Overrides: ov, Files: files, Machine: m}
		p, err := s.Plan(ctx, req)
		if err != nil {
			return nil, planError(ctx, s, req, in.Path, err)
		}
		for k, v := range bflags {
			ov[k] = v
		}
		if len(ov) == 0 {
			ov = nil
		}
		out = append(out, Planned{Scenario: s, Plan: p, Overrides: ov, Backend: spec, Machine: m})
	}
	var stray []string
	for name := range overrides {
		if !used[name] {
			stray = append(stray, name)
		}
	}
	sort.Strings(stray)
	if len(stray) > 0 {
		var names []string
		for _, s := range chosen {
			names = append(names, s.Name())
		}
		return nil, fmt.Errorf("%w: --%s does not apply to the chosen scenarios (%s); choose the scenario it belongs to with --scenario", errclass.ErrUsage, stray[0], strings.Join(names, ", "))
	}
	return out, nil
}

// planError names where a plan's error lies. When the section alone plans
// well, the flags are at fault, and the error (which names the flag) is
// not led by the input file's name; otherwise the file is named.
func planError(ctx context.Context, s scenario.Scenario, req scenario.PlanRequest, path string, err error) error {
	if len(req.Overrides) > 0 {
		req.Overrides = nil
		if _, alone := s.Plan(ctx, req); alone == nil {
			return fmt.Errorf("%w: %w", errclass.ErrUsage, err)
		}
	}
	return fmt.Errorf("%w: %s: %w", errclass.ErrUsage, path, err)
}

// Run runs the scenarios and writes the results folder. It returns the
// results even when an expectation failed; the error then wraps
// errclass.ErrExpectation.
func Run(ctx context.Context, opts Options) (*results.Results, []Planned, error) {
	chosen, err := Choose(opts.Registry, opts.Scenarios)
	if err != nil {
		return nil, nil, err
	}
	in, err := ReadInput(opts.InputPath, opts.Registry)
	if err != nil {
		return nil, nil, err
	}
	files := &DiskFiles{src: opts.Files}
	plans, err := PlanAll(ctx, chosen, in, opts.Overrides, files, ProbeMachine())
	if err != nil {
		if cause := ctx.Err(); cause != nil {
			return nil, nil, fmt.Errorf("%w: stopped by a signal (%w) while planning; nothing was written to %s", errclass.ErrInterrupted, cause, opts.Out)
		}
		return nil, nil, err
	}
	part, err := shardOf(chosen, opts.Overrides)
	if err != nil {
		return nil, nil, err
	}
	if err := preflight(ctx, opts, plans); err != nil {
		return nil, nil, err
	}
	out, err := results.PrepareOutput(opts.Out)
	if err != nil {
		return nil, nil, err
	}
	res, err := startAndRun(ctx, opts, plans, in, files, out, part)
	if err == nil {
		err = out.Commit()
	}
	if err != nil {
		out.Abort()
		// A cancelled context reaches here through many paths (a killed
		// child, a closed pipe), not all of which carry it; the context
		// itself is the witness, and its cause stays in the chain.
		if cause := ctx.Err(); cause != nil && !errors.Is(err, errclass.ErrUsage) {
			return nil, nil, fmt.Errorf("%w: stopped by a signal (%w); the workers were stopped and nothing was written to %s", errclass.ErrInterrupted, cause, opts.Out)
		}
		return nil, nil, err
	}
	if !res.Pass {
		return res, plans, fmt.Errorf("%w: results written to %s with pass: false", errclass.ErrExpectation, opts.Out)
	}
	return res, plans, nil
}

// preflight runs each plan's declared Preflight (scenario.PlanCaps),
// before the output folder is made or any process started: what a run
// needs of the machine and lacks is a usage error with nothing left
// behind.
func preflight(ctx context.Context, opts Options, plans []Planned) error {
	env := scenario.PreflightEnv{Executable: opts.Executable, Workdir: opts.Workdir, Notice: opts.Notice}
	if env.Notice == nil {
		env.Notice = io.Discard
	}
	for _, p := range plans {
		pf := p.Plan.Caps().Preflight
		if pf == nil {
			continue
		}
		if err := pf(ctx, env); err != nil {
			if errors.Is(err, errclass.ErrUsage) || errors.Is(err, errclass.ErrHarness) {
				return err
			}
			if cause := ctx.Err(); cause != nil {
				return fmt.Errorf("%w: stopped by a signal (%w) before the run; nothing was written to %s", errclass.ErrInterrupted, cause, opts.Out)
			}
			return fmt.Errorf("%w: %w", errclass.ErrUsage, err)
		}
	}
	return nil
}

// shardOf reads --shard, which every chosen scenario must take: one that
// cannot be split would run whole in every shard.
func shardOf(chosen []scenario.Scenario, overrides map[string]string) (*shard.Part, error) {
	part, err := scenario.ShardOverride(overrides)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errclass.ErrUsage, err)
	}
	if part == nil {
		return nil, nil
	}
	for _, s := range chosen {
		if !slices.ContainsFunc(s.Flags(), func(f scenario.Flag) bool { return f.Name == scenario.ShardFlag.Name }) {
			return nil, fmt.Errorf("%w: --shard %s: scenario %s cannot be split into shards; run it without --shard, or choose the scenarios that can (explore, durability, pattern) with --scenario", errclass.ErrUsage, part, s.Name())
		}
	}
	return part, nil
}

// startAndRun starts the run's backend, runs into out, and stops the
// backend again whatever happened, before the folder is committed: a run
// whose server could not be stopped and removed has failed.
func startAndRun(ctx context.Context, opts Options, plans []Planned, in Input, files *DiskFiles, out *results.Output, part *shard.Part) (*results.Results, error) {
	spec := backend.SQLite
	if len(plans) > 0 {
		spec = plans[0].Backend
	}
	bo := opts.Backend
	if bo.TempDir == "" {
		bo.TempDir = opts.TempDir
	}
	srv, err := backend.Start(ctx, spec, bo)
	if err != nil {
		return nil, err
	}
	if srv != nil && opts.OnBackend != nil {
		opts.OnBackend(srv.Info())
	}
	res, err := runInto(ctx, opts, plans, in, files, out, srv, part)
	if cerr := srv.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("%w: stop the run's PostgreSQL server: %w", errclass.ErrHarness, cerr)
	}
	return res, err
}

func runInto(ctx context.Context, opts Options, plans []Planned, in Input, files *DiskFiles, out *results.Output, srv *backend.Server, part *shard.Part) (*results.Results, error) {
	code, err := results.CodeHashes(opts.Executable, opts.Workdir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	if err := results.WriteNew(filepath.Join(out.Staging, results.InputCopyFile), in.Bytes); err != nil {
		return nil, fmt.Errorf("%w: copy the input file: %w", errclass.ErrHarness, err)
	}
	attachments, leftOut, err := files.attach(out.Staging)
	if err != nil {
		return nil, fmt.Errorf("%w: copy the files the plans read: %w", errclass.ErrHarness, err)
	}
	rec, err := results.NewRecorderFrom(out.Staging, part.FirstProcessID())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	started := time.Now().UTC()
	if opts.OnStart != nil {
		var parts []progress.Part
		for _, p := range plans {
			parts = append(parts, progress.Part{Name: p.Scenario.Name(), Processes: p.Plan.Processes(), Cost: p.Scenario.Caps().Cost})
		}
		opts.OnStart(parts)
	}
	env := scenario.Env{
		Runner:   &harness.Runner{Executable: opts.Executable, Recorder: rec, OnProcess: opts.OnProcess},
		Recorder: rec, TempDir: opts.TempDir, Backend: srv,
	}
	parallel := make([]int, len(plans))
	for i, p := range plans {
		if opts.OnScenario != nil {
			opts.OnScenario(p.Scenario.Name())
		}
		env.Slots = nil
		if parallel[i] = p.Plan.Caps().Slots(opts.Parallel); parallel[i] > 0 {
			env.Slots = harness.NewSlots(parallel[i])
		}
		if err := p.Plan.Run(ctx, env); err != nil {
			rec.Close()
			if !errors.Is(err, errclass.ErrHarness) && !errors.Is(err, errclass.ErrUsage) {
				err = fmt.Errorf("%w: scenario %s: %w", errclass.ErrHarness, p.Scenario.Name(), err)
			}
			return nil, err
		}
	}
	if err := rec.Close(); err != nil {
		return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	// The verdict is reached over what was recorded, read back through the
	// same loader verify uses, never over values held in memory.
	folder, err := results.LoadRecords(out.Staging, results.Limits{})
	if err != nil {
		return nil, fmt.Errorf("%w: read back the records: %w", errclass.ErrHarness, err)
	}
	if len(folder.Findings) > 0 {
		return nil, fmt.Errorf("%w: the records just written do not read back: %s", errclass.ErrHarness, folder.Findings[0])
	}
	res := &results.Results{
		Format: results.FormatVersion,
		Tool:   results.ToolInfo(opts.Workdir), StartedAt: started.Format(time.RFC3339),
		Environment: environment(srv, plans),
		Inputs:      results.Inputs{Path: in.Path, SHA256: in.SHA256, Copy: results.InputCopyFile},
		Code:        code, Attachments: attachments, AttachmentsLeftOut: leftOut, Shard: part, Pass: true, Scenarios: []results.ScenarioResult{},
	}
	for i, p := range plans {
		// Findings here are what the workers did (a report that the rows
		// contradict, an exit outside the protocol): results, stored with
		// the conditions they fail.
		sr := scenario.Evaluate(p.Scenario, p.Overrides, scenario.Marshal(p.Plan.Settings()), folder.Records(p.Scenario.Name()))
		sr.Parallel = parallel[i]
		res.Scenarios = append(res.Scenarios, sr)
		res.Pass = res.Pass && sr.Pass
	}
	res.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	if err := out.WriteResults(res); err != nil {
		return nil, err
	}
	return res, nil
}

// environment describes the machine, with the fact the plans were made
// with, and, on PostgreSQL, the server's version as the parent read it
// back.
func environment(srv *backend.Server, plans []Planned) results.Environment {
	env := results.HostEnvironment()
	env.FUSE = results.FUSEAvailable
	if len(plans) > 0 && plans[0].Machine.FUSE != "" {
		env.FUSE = plans[0].Machine.FUSE
	}
	if srv != nil {
		env.PostgresVersion = srv.Info().ServerVersion
	}
	return env
}

// DiskFiles reads the files plans name from disk, relative to the working
// folder, and keeps what it read, so the run can carry the very bytes it
// planned with into the folder.
type DiskFiles struct {
	// src, when set, is read instead of the disk: a rerun reads the
	// folder's own copies.
	src   scenario.Files
	names []string
	read  map[string][]byte
}

// ReadFile reads name once; a second read gives the same bytes.
func (d *DiskFiles) ReadFile(name string) ([]byte, error) {
	if b, ok := d.read[name]; ok {
		return b, nil
	}
	read := os.ReadFile
	if d.src != nil {
		read = d.src.ReadFile
	}
	b, err := read(name)
	if err != nil {
		return nil, err
	}
	if d.read == nil {
		d.read = map[string][]byte{}
	}
	d.names = append(d.names, name)
	d.read[name] = b
	return b, nil
}

// attach writes the copies into the staging folder: the files the plans
// read, then, from disk, the files beside them (carry), and says what it
// left out.
func (d *DiskFiles) attach(staging string) ([]results.Attachment, []string, error) {
	if len(d.names) == 0 {
		return nil, nil, nil
	}
	if err := os.Mkdir(filepath.Join(staging, results.AttachmentsDir), 0o755); err != nil {
		return nil, nil, err
	}
	var out []results.Attachment
	put := func(name string, b []byte, carried bool) error {
		a := results.Attachment{Name: name, File: results.AttachmentFile(len(out), name), SHA256: results.SHA256Hex(b), Carried: carried}
		out = append(out, a)
		return results.WriteNew(filepath.Join(staging, filepath.FromSlash(a.File)), b)
	}
	for _, name := range d.names {
		if err := put(name, d.read[name], false); err != nil {
			return nil, nil, err
		}
	}
	if d.src != nil {
		// A rerun reads the folder's own copies; there is no disk beside
		// them.
		return out, nil, nil
	}
	carried, leftOut := d.carry()
	for _, c := range carried {
		if err := put(c.name, c.b, true); err != nil {
			return nil, nil, err
		}
	}
	return out, leftOut, nil
}

// Carry bounds what attach carries beside the files a plan read: the
// bytes in all, the files, the entries walked, and the left-out files
// listed by name.
const (
	CarryBytes   = 16 << 20
	carryFiles   = 1000
	carryEntries = 10000
	carryListed  = 100
)

type carriedFile struct {
	name string
	b    []byte
}

// carry reads every regular file in the folders of the files the plans
// read, and below them, as a handler's imports (points.py, the program
// behind a wrapper) are files the plan never names: in path order, up to
// CarryBytes in all. Hidden files and folders are not walked. What it
// leaves out (over the budget, a link, a special file, unreadable) is
// listed, a line a file, the first carryListed by name.
func (d *DiskFiles) carry() ([]carriedFile, []string) {
	read := map[string]bool{}
	var dirs []string
	for _, n := range d.names {
		read[filepath.Clean(n)] = true
		if dir := filepath.Dir(filepath.Clean(n)); !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	seen := map[string]bool{}
	var paths []string
	var left []string
	walked := 0
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if walked++; walked > carryEntries {
				left = append(left, fmt.Sprintf("%s: the walk stopped after %d entries", dir, carryEntries))
				return filepath.SkipAll
			}
			switch {
			case err != nil:
				left = append(left, fmt.Sprintf("%s: cannot read: %v", p, err))
				return nil
			case p != dir && strings.HasPrefix(e.Name(), "."):
				if e.IsDir() {
					return filepath.SkipDir
				}
				return nil
			case e.IsDir():
				return nil
			case read[p] || seen[p]:
				return nil
			}
			seen[p] = true
			if !e.Type().IsRegular() {
				left = append(left, fmt.Sprintf("%s: not a regular file (%v)", p, e.Type()))
				return nil
			}
			paths = append(paths, p)
			return nil
		})
	}
	sort.Strings(paths)
	var out []carriedFile
	used := 0
	for _, p := range paths {
		st, err := os.Lstat(p)
		switch {
		case err != nil:
			left = append(left, fmt.Sprintf("%s: cannot read: %v", p, err))
			continue
		case len(out) == carryFiles:
			left = append(left, fmt.Sprintf("%s: %d bytes, over the %d files carried", p, st.Size(), carryFiles))
			continue
		case int64(used)+st.Size() > CarryBytes:
			left = append(left, fmt.Sprintf("%s: %d bytes, over the %d MiB carried in all", p, st.Size(), CarryBytes>>20))
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			left = append(left, fmt.Sprintf("%s: cannot read: %v", p, err))
			continue
		}
		used += len(b)
		out = append(out, carriedFile{name: p, b: b})
	}
	if len(left) > carryListed {
		left = append(left[:carryListed], fmt.Sprintf("and %d more", len(left)-carryListed))
	}
	return out, left
}

// failureItems is how many findings and differences a failure line shows
// before it counts the rest.
const failureItems = 3

// Failures lists one line per failed condition, leading with the answer:
// the condition's findings first, since each names a contradiction, then
// its differences in the scenario's words, headline figure first (see
// scenario.Explain). A scenario's findings that belong to no condition
// get a line of their own. The full lists stay in results.json and the
// CI summary.
func Failures(reg scenario.Registry, res *results.Results) []string {
	var out []string
	for _, s := range res.Scenarios {
		sc, _ := reg.Lookup(s.Name)
		for _, c := range s.Conditions {
			if c.Pass {
				continue
			}
			out = append(out, s.Name+"/"+c.Name+": "+FailureText(sc, c))
		}
		if len(s.Findings) > 0 {
			var items []string
			for _, f := range s.Findings {
				items = append(items, f.String())
			}
			out = append(out, failureLine(s.Name, items))
		}
	}
	return out
}

// failureItemBytes bounds one item of a failure line; a longer one, such
// as a finding quoting what a program wrote, is cut there on the terminal,
// in summary.json and in JUnit, and kept whole in results.json.
const failureItemBytes = 400

// cutItems cuts each item longer than failureItemBytes at a rune start.
func cutItems(items []string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it
		if len(it) > failureItemBytes {
			cut := failureItemBytes
			for cut > 0 && !utf8.RuneStart(it[cut]) {
				cut--
			}
			out[i] = fmt.Sprintf("%s… (%d bytes; whole in results.json)", it[:cut], len(it))
		}
	}
	return out
}

// FailureText is a failed condition's failure line without its name:
// its findings, then its differences in sc's words, at most
// failureItems of them with a count of the rest. The stderr line,
// summary.json, JUnit's message and verify all say it.
func FailureText(sc scenario.Scenario, c results.ConditionResult) string {
	var items []string
	for _, f := range c.Findings {
		items = append(items, f.Message)
	}
	return joinItems(append(items, scenario.ExplainLines(sc, c)...))
}

func failureLine(name string, items []string) string {
	return name + ": " + joinItems(items)
}

func joinItems(items []string) string {
	items = cutItems(items)
	if len(items) > failureItems {
		return fmt.Sprintf("%s (+%d more)", strings.Join(items[:failureItems], "; "), len(items)-failureItems)
	}
	if len(items) == 0 {
		return "failed"
	}
	return strings.Join(items, "; ")
}

// LineWidth is the width failure lines are wrapped to on a terminal.
const LineWidth = 100

// PrintFailures writes each failure line as "FAIL line", wrapped between
// phrases (scenario.PhraseLines) to LineWidth, continuation lines
// indented by two spaces. summary.json and JUnit keep each line whole.
func PrintFailures(w io.Writer, lines []string) {
	for _, l := range lines {
		for i, part := range scenario.PhraseLines("FAIL "+l, LineWidth, LineWidth-2) {
			if i > 0 {
				part = "  " + part
			}
			fmt.Fprintln(w, part)
		}
	}
}

// Verdict is a run's verdict in one phrase: FAIL, PASS, or, when a
// scenario's pass rests on breaks it was told to expect, PASS and what
// it rests on ("PASS: 3 classes break as known_unsafe expects"), so such
// a pass never reads as "nothing broke".
func Verdict(reg scenario.Registry, res *results.Results) string {
	if !res.Pass {
		return "FAIL"
	}
	var notes []string
	for _, sr := range res.Scenarios {
		if n := PassNote(reg, sr); n != "" {
			notes = append(notes, n)
		}
	}
	if len(notes) == 0 {
		return "PASS"
	}
	return "PASS: " + strings.Join(notes, "; ")
}

// PassNote is what a passing scenario's pass rests on, when its report
// says (scenario.Section.PassNote); "" for a failed one or a bare pass.
func PassNote(reg scenario.Registry, sr results.ScenarioResult) string {
	s, ok := reg.Lookup(sr.Name)
	if !ok || !sr.Pass {
		return ""
	}
	sec, err := s.Report(sr)
	if err != nil {
		return ""
	}
	return sec.PassNote
}
