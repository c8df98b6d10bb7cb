// Package redelivery reproduces article 000: a completion event whose
// follow-up job and processed record are written in two commits or in one
// transaction, a worker that dies at a chosen point, and the same event
// redelivered to a fresh process.
package redelivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/scenario"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Name is the scenario's name on the command line.
const Name = "redelivery"

// DBName is the database file's name inside each condition's folder.
const DBName = "events.sqlite3"

// Input is the redelivery section of input.json.
type Input struct {
	EventID string `json:"event_id"`
	JobKey  string `json:"job_key"`
}

// Validate names the first bad field.
func (in Input) Validate() error {
	if strings.TrimSpace(in.EventID) == "" {
		return errors.New("redelivery.event_id: must not be empty")
	}
	if strings.TrimSpace(in.JobKey) == "" {
		return errors.New("redelivery.job_key: must not be empty")
	}
	return nil
}

// Condition is one pattern with an optional crash point on delivery 1.
type Condition struct {
	Name    string     `json:"name"`
	Pattern wr.Pattern `json:"pattern"`
	CrashAt string     `json:"crash_at,omitempty"`
}

// Conditions are the article's four conditions plus single-transaction
// normal, in the article's order.
func Conditions() []Condition {
	return []Condition{
		{"separate-commit/normal", wr.SeparateCommit, ""},
		{"separate-commit/crash-after-job-commit", wr.SeparateCommit, wr.PointAfterJobCommit},
		{"single-transaction/normal", wr.SingleTransaction, ""},
		{"single-transaction/crash-before-commit", wr.SingleTransaction, wr.PointBeforeCommit},
		{"single-transaction/crash-after-commit", wr.SingleTransaction, wr.PointAfterCommit},
	}
}

// Deliveries is how often each condition's event is delivered: once with
// the crash, once to a fresh process.
const Deliveries = 2

// Settings are recorded with the scenario. Everything here is derived from
// the input section; verify derives it again and compares.
type Settings struct {
	EventID    string      `json:"event_id"`
	JobKey     string      `json:"job_key"`
	Deliveries int         `json:"deliveries_per_condition"`
	Conditions []Condition `json:"conditions"`
	// SQLite is what every worker must read back from its connection.
	SQLite sqlitedb.Settings `json:"sqlite"`
}

// Event is the event every condition delivers.
func (s Settings) Event() wr.Event { return wr.Event{ID: s.EventID, JobKey: s.JobKey} }

// Args are a delivery's worker arguments; the run renders them and the
// fold renders them again to check each recorded command line.
func (s Settings) Args(c Condition, db string) wr.Args {
	return wr.Args{DB: db, Pattern: c.Pattern, Event: s.Event()}
}

// Scenario is the redelivery scenario, written against its own settings;
// New adapts it for the registry.
type Scenario struct{}

var _ scenario.Typed[Settings, Extra] = Scenario{}

// New is the scenario as the registry takes it.
func New() scenario.Scenario { return scenario.Define[Settings, Extra](Scenario{}) }

func (Scenario) Name() string { return Name }

func (Scenario) Summary() string {
	return "article 000: separate commits vs one transaction, crash, redelivery to a fresh process"
}

func (Scenario) Flags() []scenario.Flag { return nil }

// Plan decodes the section. The scenario takes no flags.
func (Scenario) Plan(section json.RawMessage, _ map[string]string) (scenario.Plan, error) {
	var in Input
	if err := scenario.DecodeSection(Name, section, &in); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return &plan{s: Settings{EventID: in.EventID, JobKey: in.JobKey, Deliveries: Deliveries, Conditions: Conditions(), SQLite: wr.RequestedSQLite()}}, nil
}

type plan struct{ s Settings }

func (p *plan) Settings() any  { return p.s }
func (p *plan) Processes() int { return len(p.s.Conditions) * p.s.Deliveries }

// Observation is one line of observations.jsonl: which process delivered,
// into which file, and the rows the parent read from that file after the
// process had exited.
type Observation struct {
	Scenario  string `json:"scenario"`
	Condition string `json:"condition"`
	Delivery  int    `json:"delivery"`
	ProcessID int    `json:"process_id"`
	DB        string `json:"db"`
	// Rows are both tables as the parent read them; a table the file did
	// not hold is null.
	Rows wr.State `json:"rows"`
}

// Run delivers each condition's event twice and records what each delivery
// left in the file.
func (p *plan) Run(ctx context.Context, env scenario.Env) error {
	for _, c := range p.s.Conditions {
		if err := p.runCondition(ctx, env, c); err != nil {
			return err
		}
	}
	return nil
}

func (p *plan) runCondition(ctx context.Context, env scenario.Env, c Condition) error {
	dir, err := os.MkdirTemp(env.TempDir, "idemlab-redelivery-")
	if err != nil {
		return fmt.Errorf("%w: create database folder: %w", errclass.ErrHarness, err)
	}
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, DBName)
	for d := 1; d <= p.s.Deliveries; d++ {
		spec := harness.Spec{
			Scenario: Name, Condition: c.Name, Label: fmt.Sprintf("delivery %d", d),
			Worker: wr.WorkerName, Args: p.s.Args(c, db).Argv(),
		}
		if d == 1 {
			spec.CrashAt = c.CrashAt
		}
		proc, err := env.Runner.Run(ctx, spec)
		if err != nil {
			return fmt.Errorf("%s delivery %d: %w", c.Name, d, err)
		}
		rows, err := readState(ctx, db)
		if err != nil {
			return fmt.Errorf("%w: %s delivery %d: %w", errclass.ErrHarness, c.Name, d, err)
		}
		if err := env.Recorder.Observe(Observation{
			Scenario: Name, Condition: c.Name, Delivery: d, ProcessID: proc.Record.ID, DB: db, Rows: rows,
		}); err != nil {
			return fmt.Errorf("%w: record observation: %w", errclass.ErrHarness, err)
		}
	}
	return nil
}

// readState opens the file as the next process would, which also rolls
// back a hot journal left by a crash, and lists both tables.
func readState(ctx context.Context, path string) (wr.State, error) {
	st, err := store.OpenSQLite(ctx, wr.Options(path))
	if err != nil {
		return wr.State{}, err
	}
	s, err := wr.ReadState(ctx, st)
	return s, errors.Join(err, st.Close())
}
