// Package redelivery reproduces article 000: a completion event whose
// follow-up job and processed record are written in two commits or in one
// transaction, a worker that dies at a chosen point, and the same event
// redelivered to a fresh process.
package redelivery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"idemlab/experiments/harness"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
)

// Name is the scenario's name on the command line.
const Name = "redelivery"

// Worker is the registry name of the delivering worker.
const Worker = "redelivery.deliver"

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
	Name       string
	Pattern    wr.Pattern
	CrashAt    string
	Deliveries int
}

// Conditions are the article's four conditions plus single-transaction
// normal, in the article's order.
func Conditions() []Condition {
	return []Condition{
		{"separate-commit/normal", wr.SeparateCommit, "", 2},
		{"separate-commit/crash-after-job-commit", wr.SeparateCommit, wr.PointAfterJobCommit, 2},
		{"single-transaction/normal", wr.SingleTransaction, "", 2},
		{"single-transaction/crash-before-commit", wr.SingleTransaction, wr.PointBeforeCommit, 2},
		{"single-transaction/crash-after-commit", wr.SingleTransaction, wr.PointAfterCommit, 2},
	}
}

// Config is everything one run needs.
type Config struct {
	Runner   *harness.Runner
	Recorder *harness.Recorder
	Input    Input
	// Conditions defaults to Conditions().
	Conditions []Condition
	// Oracle defaults to Expect. Tests replace it to show that a wrong
	// expectation fails the run.
	Oracle func(Condition) []Delivery
	// TempDir is where the per-condition database folders are made; empty
	// means the system default.
	TempDir string
}

// Result is the scenario's entry in results.json.
type Result = harness.ScenarioResult

// Settings are recorded with the scenario: the pragmas the workers read
// back, not the ones requested.
type Settings struct {
	EventID    string            `json:"event_id"`
	JobKey     string            `json:"job_key"`
	Deliveries int               `json:"deliveries_per_condition"`
	SQLite     sqlitedb.Settings `json:"sqlite"`
}

// Observation is one line of observations.jsonl.
type Observation struct {
	Scenario  string     `json:"scenario"`
	Condition string     `json:"condition"`
	Pattern   wr.Pattern `json:"pattern"`
	CrashAt   string     `json:"crash_at,omitempty"`
	ProcessID int        `json:"process_id"`
	Delivery  Delivery   `json:"observed"`
	Rows      Rows       `json:"rows"`
}

// Rows are the two tables' contents after a delivery.
type Rows struct {
	FollowUpJobs    []wr.Event `json:"follow_up_jobs"`
	ProcessedEvents []string   `json:"processed_events"`
}

// Run runs every condition and compares each with the oracle.
func Run(ctx context.Context, cfg Config) (Result, error) {
	conds := cfg.Conditions
	if conds == nil {
		conds = Conditions()
	}
	oracle := cfg.Oracle
	if oracle == nil {
		oracle = Expect
	}
	res := Result{Name: Name, Pass: true}
	settings := Settings{EventID: cfg.Input.EventID, JobKey: cfg.Input.JobKey}
	for _, c := range conds {
		observed, sqlSettings, err := runCondition(ctx, cfg, c)
		if err != nil {
			return res, err
		}
		settings.Deliveries = c.Deliveries
		settings.SQLite = sqlSettings
		expected := oracle(c)
		pass, diff := Check(expected, observed)
		res.Conditions = append(res.Conditions, harness.ConditionResult{
			Name: c.Name, Expected: expected, Observed: observed, Pass: pass, Diff: diff,
		})
		res.Pass = res.Pass && pass
	}
	res.Settings = settings
	return res, nil
}

func runCondition(ctx context.Context, cfg Config, c Condition) ([]Delivery, sqlitedb.Settings, error) {
	var settings sqlitedb.Settings
	dir, err := os.MkdirTemp(cfg.TempDir, "idemlab-redelivery-")
	if err != nil {
		return nil, settings, fmt.Errorf("%w: create database folder: %v", harness.ErrHarness, err)
	}
	defer os.RemoveAll(dir)
	dbPath := filepath.Join(dir, "events.sqlite3")
	var out []Delivery
	for d := 1; d <= c.Deliveries; d++ {
		spec := harness.Spec{
			Scenario: Name, Condition: c.Name, Label: fmt.Sprintf("delivery %d", d),
			Worker: Worker,
			Args:   []string{"-db", dbPath, "-pattern", string(c.Pattern), "-event-id", cfg.Input.EventID, "-job-key", cfg.Input.JobKey},
		}
		if d == 1 {
			spec.CrashAt = c.CrashAt
		}
		p, err := cfg.Runner.Run(ctx, spec)
		if err != nil {
			return nil, settings, fmt.Errorf("%s delivery %d: %w", c.Name, d, err)
		}
		if p.Record.ExitCode == protocol.ExitACK {
			var r wr.Result
			if err := harness.DecodeResult(p.Report, &r); err != nil {
				return nil, settings, fmt.Errorf("%w: %s delivery %d: %v", harness.ErrHarness, c.Name, d, err)
			}
			settings = r.Settings
		}
		rows, err := readRows(ctx, dbPath)
		if err != nil {
			return nil, settings, fmt.Errorf("%w: %s delivery %d: %v", harness.ErrHarness, c.Name, d, err)
		}
		obs := Delivery{
			Delivery: d, ExitCode: p.Record.ExitCode,
			FollowUpJobs: len(rows.FollowUpJobs), ProcessedEvents: len(rows.ProcessedEvents),
			CrashedAt: p.Report.CrashedAt, Points: p.Report.Points,
		}
		out = append(out, obs)
		if err := cfg.Recorder.Observe(Observation{
			Scenario: Name, Condition: c.Name, Pattern: c.Pattern, CrashAt: c.CrashAt,
			ProcessID: p.Record.ID, Delivery: obs, Rows: rows,
		}); err != nil {
			return nil, settings, fmt.Errorf("%w: record observation: %v", harness.ErrHarness, err)
		}
	}
	return out, settings, nil
}

// readRows opens the file as the next process would, which also rolls back
// a hot journal left by a crash, and lists both tables.
func readRows(ctx context.Context, path string) (Rows, error) {
	rows := Rows{FollowUpJobs: []wr.Event{}, ProcessedEvents: []string{}}
	db, _, err := sqlitedb.Open(ctx, wr.Options(path))
	if err != nil {
		return rows, err
	}
	defer db.Close()
	rs, err := db.QueryContext(ctx, "SELECT event_id, job_key FROM follow_up_jobs ORDER BY rowid")
	if err != nil {
		return rows, fmt.Errorf("read follow_up_jobs: %w", err)
	}
	for rs.Next() {
		var e wr.Event
		if err := rs.Scan(&e.ID, &e.JobKey); err != nil {
			rs.Close()
			return rows, fmt.Errorf("read follow_up_jobs: %w", err)
		}
		rows.FollowUpJobs = append(rows.FollowUpJobs, e)
	}
	if err := errors.Join(rs.Err(), rs.Close()); err != nil {
		return rows, fmt.Errorf("read follow_up_jobs: %w", err)
	}
	rs, err = db.QueryContext(ctx, "SELECT event_id FROM processed_events ORDER BY event_id")
	if err != nil {
		return rows, fmt.Errorf("read processed_events: %w", err)
	}
	for rs.Next() {
		var id string
		if err := rs.Scan(&id); err != nil {
			rs.Close()
			return rows, fmt.Errorf("read processed_events: %w", err)
		}
		rows.ProcessedEvents = append(rows.ProcessedEvents, id)
	}
	if err := errors.Join(rs.Err(), rs.Close()); err != nil {
		return rows, fmt.Errorf("read processed_events: %w", err)
	}
	return rows, nil
}

// Patterns lists the patterns in the article's order.
func Patterns() []wr.Pattern { return wr.Patterns }
