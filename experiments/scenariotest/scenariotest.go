// Package scenariotest runs a scenario the way the experiment command
// does, with real worker processes (the test binary, re-executed through
// worker.TestMain), then reads the records back and evaluates them.
package scenariotest

import (
	"context"
	"encoding/json"
	"testing"

	"idemlab/experiments/backend"
	"idemlab/experiments/harness/harnesstest"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// Outcome is one evaluated run.
type Outcome struct {
	Result   results.ScenarioResult
	Records  results.Records
	Settings json.RawMessage
	Findings []results.Finding
}

// Run plans s from section and overrides, runs it with real processes into
// a temporary folder, and evaluates what was recorded.
func Run(tb testing.TB, s scenario.Scenario, section string, overrides map[string]string) Outcome {
	tb.Helper()
	return RunOn(tb, s, backend.SQLite, nil, section, overrides)
}

// RunOn is Run on backend spec, whose PostgreSQL server srv the caller
// started (nil on SQLite) and closes.
func RunOn(tb testing.TB, s scenario.Scenario, spec backend.Spec, srv *backend.Server, section string, overrides map[string]string) Outcome {
	tb.Helper()
	p, err := s.Plan(tb.Context(), scenario.PlanRequest{Backend: spec, Section: json.RawMessage(section), Overrides: overrides})
	if err != nil {
		tb.Fatalf("plan: %v", err)
	}
	return RunPlan(tb, s, p, srv, overrides)
}

// RunPlan runs plan p of s, which a test may have narrowed after planning,
// and evaluates its records under p's settings, as RunOn does.
func RunPlan(tb testing.TB, s scenario.Scenario, p scenario.Plan, srv *backend.Server, overrides map[string]string) Outcome {
	tb.Helper()
	env := harnesstest.New(tb)
	if err := p.Run(context.Background(), scenario.Env{Runner: env.Runner, Recorder: env.Recorder, TempDir: tb.TempDir(), Backend: srv}); err != nil {
		tb.Fatalf("run: %v", err)
	}
	if err := env.Recorder.Close(); err != nil {
		tb.Fatal(err)
	}
	f, err := results.LoadRecords(env.Dir, results.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	for _, x := range f.Findings {
		if x.File != results.InputCopyFile {
			tb.Fatalf("records do not load: %s", x)
		}
	}
	rec := f.Records(s.Name())
	settings := scenario.Marshal(p.Settings())
	res := scenario.Evaluate(s, overrides, settings, rec)
	findings := res.AllFindings()
	return Outcome{Result: res, Records: rec, Settings: settings, Findings: findings}
}

// Edit returns a copy of records with one observation or process line
// changed through its decoded JSON form, as a tamperer would edit a file.
func Edit(tb testing.TB, rec results.Records, obs bool, index int, edit func(m map[string]any)) results.Records {
	tb.Helper()
	o := append([]results.Line{}, rec.Observations...)
	p := append([]results.Process{}, rec.Processes...)
	if obs {
		var m map[string]any
		if err := json.Unmarshal(o[index].Raw, &m); err != nil {
			tb.Fatal(err)
		}
		edit(m)
		b, err := json.Marshal(m)
		if err != nil {
			tb.Fatal(err)
		}
		o[index].Raw = b
		if c, ok := m["condition"].(string); ok {
			o[index].Condition = c
		}
	} else {
		b, err := json.Marshal(p[index].ProcessRecord)
		if err != nil {
			tb.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			tb.Fatal(err)
		}
		edit(m)
		b, err = json.Marshal(m)
		if err != nil {
			tb.Fatal(err)
		}
		var pr results.ProcessRecord
		if err := json.Unmarshal(b, &pr); err != nil {
			tb.Fatal(err)
		}
		p[index].ProcessRecord = pr
	}
	return results.NewRecords(o, p)
}
