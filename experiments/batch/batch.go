// Package batch reproduces article 002: a batch that stops at item K,
// resumed with and without a step journal, against a real HTTP receiver
// run by the parent. The run only records: after every worker process the
// parent writes the journal rows it read itself and the receiver's log of
// the sends since the previous process. The verdict is Fold over those
// records and Expect over the settings, through scenario.Evaluate.
//
// The files, by concern: settings.go (what a run is set to), script.go
// (each condition's plan), run.go (the parent running the plan),
// records.go (what it records), oracle.go (Expect), fold*.go (the records
// to observed figures), timing.go (the timing table), report.go and
// charts.go (for people), backend.go (the same on PostgreSQL, a schema
// per journal trial). The workers and their command lines, reports and
// tables are worker/batch's.
package batch

import (
	"context"
	"encoding/json"
	"time"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker/store"
)

// Name is the scenario's name on the command line.
const Name = "batch"

// DBName is the journal file's name inside each trial's folder.
const DBName = "journal.sqlite3"

// Scenario is the batch scenario, typed over its settings and its timing
// table; New adapts it for the registry.
type Scenario struct{}

// New returns the batch scenario as the registry holds it.
func New() scenario.Scenario { return scenario.Define[Settings, Extra](Scenario{}) }

func (Scenario) Name() string { return Name }

func (Scenario) Summary() string {
	return "article 002: a batch stopped at item K, resumed by rerunning all or with a step journal"
}

func (Scenario) Flags() []scenario.Flag {
	return []scenario.Flag{
		{Name: FlagItems, Usage: "number of items (batch.items)"},
		{Name: FlagFailAt, Usage: "item whose send fails in run 1 (batch.fail_at)"},
		{Name: FlagTrials, Usage: "trials per condition (batch.trials)"},
		{Name: FlagMode, Usage: "failure modes, one or a comma list: before_accept,after_accept (batch.modes)"},
		{Name: FlagConcurrentModes, Usage: "run the modes side by side, true or false (batch.concurrent_modes)", Bool: true},
		{Name: FlagFirstRunLanes, Usage: "trials whose first runs go side by side; later runs always run alone (batch.first_run_lanes)"},
	}
}

// Caps: every run has it, on SQLite and on PostgreSQL; a batch process
// is dear, since each sends to the receiver.
func (Scenario) Caps() scenario.Caps {
	return scenario.Caps{Backends: []string{store.BackendPostgres}, Cost: 140 * time.Millisecond}
}

// Validate: the settings have no limits beyond their JSON shape; the
// oracle validates the input they record.
func (Scenario) Validate(Settings) error { return nil }

// Check: a condition passes when its figures equal the oracle's.
func (Scenario) Check(_ string, expected, observed json.RawMessage) (bool, []results.Difference, error) {
	return scenario.Equal(expected, observed)
}

// Plan decodes the section strictly, applies the flags and validates,
// for the request's backend (onBackend).
func (Scenario) Plan(_ context.Context, req scenario.PlanRequest) (scenario.Plan, error) {
	var in Input
	if err := scenario.DecodeSection(Name, req.Section, &in); err != nil {
		return nil, err
	}
	in, err := ApplyFlags(in, req.Overrides)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return &plan{s: onBackend(SettingsOf(in), req.Backend)}, nil
}
