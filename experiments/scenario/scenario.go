// Package scenario is the one shape every experiment has. A scenario owns
// its input section, its run, its fold from records to observed figures,
// its oracle from settings to expected figures, and its tables and charts.
// The experiment command and verify both reach a verdict through Evaluate,
// so there is exactly one derivation of each verdict.
package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	"idemlab/experiments/shard"
)

// Scenario is one experiment. Implementations are values with no state, so
// a test can swap the oracle through a field. Every method is part of the
// contract; what varies between scenarios is declared in Caps, never
// discovered by type assertion.
type Scenario interface {
	// Name is the scenario's name on the command line and in the files.
	Name() string
	// Summary is one line for "idemlab list".
	Summary() string
	// Caps declares how the scenario runs: opt-in, the backends it runs
	// on, and what one of its processes costs.
	Caps() Caps
	// Flags are the experiment flags that override the input section.
	Flags() []Flag
	// Plan strictly decodes the input section, applies the overrides
	// (flag name without dashes to the value as typed), reads the files
	// they name and validates the result, for the request's backend.
	// Errors name the field or the flag. Work it does on a database runs
	// under ctx, so a signal stops it.
	Plan(ctx context.Context, req PlanRequest) (Plan, error)
	// Expect is the oracle: the conditions, in order, with the figures
	// the settings imply and whether the OS schedules them. It reads
	// nothing but the settings.
	Expect(settings json.RawMessage) ([]Expected, error)
	// Fold derives the observed figures from the records alone. It checks
	// every record it reads against the settings and the other records,
	// and reports each inconsistency as a finding.
	Fold(settings json.RawMessage, rec results.Records) (Folded, []results.Finding)
	// Check says whether a condition passes: equality of expected and
	// observed (Equal) for most, another rule, such as outcome sets, for
	// some.
	Check(condition string, expected, observed json.RawMessage) (bool, []results.Difference, error)
	// Report arranges a derived result for people: terminal tables, the
	// article's published figures beside the reproduced ones, and charts.
	Report(res results.ScenarioResult) (Section, error)
	// Explain says a failed condition's differences in the reader's
	// words (see Explanation); nil keeps the paths.
	Explain(c results.ConditionResult) []Explained
	// Compare says a derived result's key outcomes in a few words (see
	// Compared); the zero Compared says nothing.
	Compare(res results.ScenarioResult) (Compared, error)
}

// Caps are what a scenario declares about how it runs. The suite, list,
// the refusal of a backend and the ETA read them.
type Caps struct {
	// OptIn scenarios run only when named with --scenario: ones too slow
	// or too specialised for every run, such as the durability matrix. A
	// run without --scenario skips them; list still shows them.
	OptIn bool
	// Backends are the backends it runs on besides SQLite, by name
	// (backend.Spec.Name).
	Backends []string
	// NotOn says why it runs on no other backend, for the refusal a run
	// on one gets; empty says it has not been ported from SQLite.
	NotOn string
	// Cost is the wall time one of its processes takes with the default
	// input on a two-core machine: the scenario's time over its
	// processes. The ETA prices a scenario not yet begun by it.
	Cost time.Duration
}

// RunsOn says whether the scenario declares backend b.
func (c Caps) RunsOn(b backend.Spec) bool {
	return b.IsSQLite() || slices.Contains(c.Backends, b.Name)
}

// Refusal is the error a run of scenario name on backend b gets when c
// does not declare b.
func Refusal(name string, c Caps, b backend.Spec) error {
	reason := c.NotOn
	if reason == "" {
		reason = "it has not been ported from SQLite"
	}
	return fmt.Errorf("scenario %s %w %s: %s; run it without --backend %s", name, backend.ErrNotOnBackend, b.Name, reason, b.Name)
}

// PlanRequest is what a plan is made from.
type PlanRequest struct {
	// Backend is the backend the run is on; the zero Spec is SQLite.
	Backend backend.Spec
	// Section is the scenario's section of the input file.
	Section json.RawMessage
	// Overrides are the scenario's flags, by name without dashes.
	Overrides map[string]string
	// Files reads the files the plan names besides the input file; nil
	// reads none.
	Files Files
	// Machine is what the run's machine had that a plan depends on: a
	// run's planning reads it from this machine, verify, merge and report
	// from the folder's record, so a plan never probes the machine.
	Machine Machine
}

// Machine is a machine's fact a plan depends on.
type Machine struct {
	// FUSE is "" where the machine has FUSE (the power-loss filesystem
	// mounts), otherwise the one-line reason it has not.
	FUSE string
}

// Plan is a scenario ready to run.
type Plan interface {
	// Settings are recorded in results.json; verify derives them again
	// from the input file and the recorded overrides.
	Settings() any
	// Processes is how many worker processes Run will start, for
	// progress with a known total; where that depends on how a crash
	// lands, the most it may start. Each scenario has a test that a real
	// run records exactly this many (or no more, where it is a bound).
	Processes() int
	// Caps declares how the suite schedules the plan and what the plan
	// needs of this machine before the run. Every plan states them; the
	// zero PlanCaps is a plan whose processes run one after another and
	// that needs nothing.
	Caps() PlanCaps
	// Run starts the workers and records what happened. It reaches no
	// verdict: that is Evaluate's job, over what was recorded.
	Run(ctx context.Context, env Env) error
}

// PlanCaps are what a plan declares about how it runs, from its settings:
// the suite reads them, never discovers them by type assertion.
type PlanCaps struct {
	// SideBySide says the plan's trials run side by side (explore,
	// pattern, durability), as many at once as Slots says, in the slots
	// the suite gives its Run (Env.Slots). The suite records that figure
	// beside the settings, not in them: it is how a run was scheduled,
	// not what it tested. A plan that does not runs its processes one
	// after another, gets no slots and records no parallel.
	SideBySide bool
	// Parallel is the input section's parallel, 0 where it sets none.
	Parallel int
	// Bound is the most trials that may run at once, 0 for no bound but
	// the flag's and the machine's: 1 where the plan's trials share what
	// cannot be shared.
	Bound int
	// Preflight is what the plan needs of this machine that its settings
	// do not depend on, such as a binary beside idemlab; nil when it
	// needs nothing. A run calls it once every scenario is planned, before
	// it makes the output folder or starts a process; verify, merge and
	// report, which plan from a folder, never call it. Its error is a
	// usage error unless it wraps another class.
	Preflight func(ctx context.Context, env PreflightEnv) error
}

// Slots is how many of the plan's trials run at once, given the
// --parallel flag's value, 0 when it was not given: ParallelOf the flag
// and the section's parallel, no more than Bound; 0 for a plan whose
// trials do not run side by side.
func (c PlanCaps) Slots(flag int) int {
	if !c.SideBySide {
		return 0
	}
	n := ParallelOf(flag, c.Parallel)
	if c.Bound > 0 {
		n = min(n, c.Bound)
	}
	return n
}

// PreflightEnv is what a plan's Preflight may use: the run's executable,
// its working folder, and where to say what it does that takes time.
type PreflightEnv struct {
	Executable, Workdir string
	Notice              io.Writer
}

// MaxParallel bounds --parallel and an input's parallel.
const MaxParallel = 64

// ParallelOf is how many trials run at once: the --parallel flag's value
// when given (flag > 0), else the input section's parallel when it sets
// one, else runtime.GOMAXPROCS(0), which follows the CPUs the process
// may use (a Slurm or Kubernetes slot's quota).
func ParallelOf(flag, section int) int {
	switch {
	case flag > 0:
		return flag
	case section > 0:
		return section
	}
	return runtime.GOMAXPROCS(0)
}

// SlotsOf are the slots a plan's Run uses: env's when the suite gave
// some, else n of its own (a test that calls Run directly).
func (e Env) SlotsOf(n int) *harness.Slots {
	if e.Slots != nil {
		return e.Slots
	}
	return harness.NewSlots(n)
}

// Env is what a run gets from the suite.
type Env struct {
	Runner   *harness.Runner
	Recorder *results.Recorder
	// Slots bound how many trials of a plan run at once when its trials
	// run side by side (PlanCaps.SideBySide); nil for one whose do not.
	Slots *harness.Slots
	// TempDir holds scratch databases; empty means the system default.
	TempDir string
	// Backend is the run's PostgreSQL database; nil on SQLite.
	Backend *backend.Server
}

// Fresh makes an empty database for one condition on the run's backend:
// a file named file in a new folder prefix* under TempDir on SQLite, a
// schema of its own on PostgreSQL.
func (e Env) Fresh(ctx context.Context, prefix, file string) (backend.Database, error) {
	if e.Backend == nil {
		return backend.FreshFile(e.TempDir, prefix, file)
	}
	return e.Backend.Fresh(ctx, strings.Trim(prefix, "-"))
}

// Flag is one experiment flag a scenario accepts.
type Flag struct {
	Name  string
	Usage string
	// Bool flags may be given without a value.
	Bool bool
}

// Expected is one condition's expected figures.
type Expected struct {
	Condition string
	Value     any
	// Scheduled says the OS schedules the condition rather than the
	// seed: kills after a delay and racing workers. It is recorded with
	// the condition (results.ConditionResult.Scheduled), and verify
	// --rerun leaves such a condition's process records out (how many
	// processes ran, and how each ended); its derived figures are
	// compared like any other, less the fields the scenario declares
	// measurements.
	Scheduled bool
}

// Folded is what a fold derived from the records.
type Folded struct {
	// Observed maps a condition to its observed figures.
	Observed map[string]any
	// Extra is any further derived table, recorded under "extra".
	Extra any
	// Plan is set by a scenario whose trials can be split with --shard:
	// every trial of the whole plan, in order, from the settings and what
	// the discovery runs passed, which is Discovered. Ran lists the
	// trials the records hold, each with the shard that recorded it.
	// Evaluate checks one against the other (see JudgePlan).
	Plan       []shard.Trial
	Discovered any
	Ran        []shard.Ran
}

// Section is a scenario arranged for people.
type Section struct {
	// Verdict names what a pass means where a bare PASS would mislead,
	// such as "matches the model" above a matrix of losses the model
	// predicts; empty means PASS or FAIL.
	Verdict string
	// PassNote says what a pass rests on when it is not "nothing broke":
	// "3 classes break as known_unsafe expects". A passing run's verdict
	// line reads "PASS: " and the note, so a pass that rests on expected
	// breaks is never read as "safe".
	PassNote string
	// Lead says what the scenario found, in sentences, before its tables.
	Lead []Sentence
	// Replays are commands that run part of the result again.
	Replays []Replay
	// Tables print in the terminal and in the report.
	Tables []Table
	// Article compares with the article's published figures; nil when the
	// scenario reproduces no article.
	Article *Article
	// Charts are drawn in the report.
	Charts []Chart
	// Settings are shown as a two-column table.
	Settings [][2]string
}

// Verdict words for a scenario whose pass means "every outcome is one the
// model allows", losses included.
const (
	VerdictMatches = "matches the model"
	VerdictDiffers = "does not match the model"
)

// ModelVerdict is the Verdict of such a scenario.
func ModelVerdict(pass bool) string {
	if pass {
		return VerdictMatches
	}
	return VerdictDiffers
}

// Sentence is one finding in words, with the cells that show it, named
// as the tables and the conditions name them.
type Sentence struct {
	Text  string
	Cells []string
}

// JoinAnd joins words for a sentence: "a", "a and b", "a, b and c".
func JoinAnd(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// Plural is one when n is 1, else many: "1 trial", "2 trials"; "is",
// "are".
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Table is a plain table. Legend explains the columns in one line each.
type Table struct {
	Title  string
	Header []string
	Rows   [][]string
	Legend []string
}

// Article is an article's published table beside the reproduced figures.
type Article struct {
	ID     string
	Title  string
	Unit   string
	Header []string
	Rows   [][]Cell
	Notes  []string
	// Matches and Cells count the compared cells; timings are shown, not
	// compared, and do not count.
	Matches, Cells int
}

// Cell is a table cell with an optional ✓/✗ mark.
type Cell struct {
	Text string
	Mark string
}

// Chart is one drawn figure.
type Chart struct {
	Title   string
	Slug    string
	Caption string
	SVG     []byte
}
