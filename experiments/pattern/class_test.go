package pattern

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"idemlab/experiments/backend"
	"idemlab/experiments/engine"
	"idemlab/experiments/errclass"
	"idemlab/experiments/harness/harnesstest"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/scenariotest"
	"idemlab/worker/protocol"
)

// register adds class c to the engine's registry for the test, as its
// one line in engine.Classes would, and takes it out again after.
func register(tb testing.TB, c engine.Class) {
	tb.Helper()
	saved := engine.Classes
	engine.Classes = append(slices.Clip(saved), c)
	tb.Cleanup(func() { engine.Classes = saved })
}

// lastPoint plans one trial: a crash at the last point the discovery
// passed, a field (Point) the subjects already apply.
func lastPoint(in engine.Input) []engine.Trial {
	if len(in.Found.Points) == 0 {
		return nil
	}
	return []engine.Trial{{Class: in.Class, Condition: in.Condition, Point: in.Found.Points[len(in.Found.Points)-1]}}
}

// TestClassFromItsRegistryLineAlone: a fault class that plans only fields
// the pattern subject applies runs from its line in engine.Classes alone,
// through plan, subject and fold: its word is a --faults word and a
// known_unsafe class, its trial crashes the pattern file's worker (or
// kills the handler program) at the planned point, the event is
// delivered again, and the fold judges the trial and checks it against
// the engine's plan (a recorded point the plan does not give is a
// finding); --faults' usage lists its word. A class whose trials carry a field the subject does not
// apply, or none it does, or that has no pattern label, is refused as the
// harness's fault (exit 3) before it can pass having faulted nothing.
func TestClassFromItsRegistryLineAlone(t *testing.T) {
	const word = "last"
	runsFine := []struct {
		name, file string
		// crashed says how the first delivery's process ended at the point.
		crashed func(p results.Process, point string) error
	}{
		{"pattern file", shipped("separate-commit"), func(p results.Process, point string) error {
			rep, err := protocol.ParseReport(p.Stdout)
			if err != nil || p.ExitCode != protocol.ExitCrash || rep.CrashedAt != point {
				return fmt.Errorf("exit %d, crashed at %q (%v), want exit %d at %q", p.ExitCode, rep.CrashedAt, err, protocol.ExitCrash, point)
			}
			return nil
		}},
		{"handler program", handler("separate-commit"), func(p results.Process, point string) error {
			if p.KilledBy != "harness" || p.Signal == "" {
				return fmt.Errorf("killed by %q (signal %q), want the harness's kill at %q", p.KilledBy, p.Signal, point)
			}
			return nil
		}},
	}
	for _, tt := range runsFine {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "handler program" {
				if _, err := exec.LookPath("python3"); err != nil {
					t.Skip("python3 is not on PATH; the shipped handler is Python")
				}
			}
			register(t, engine.Class{Kind: "last-point", Plan: lastPoint, Fault: word, Labels: engine.Labels{Pattern: "last-point"}})
			if i := slices.IndexFunc(New().Flags(), func(f scenario.Flag) bool { return f.Name == "faults" }); i < 0 || !strings.Contains(New().Flags()[i].Usage, ","+word+" ") {
				t.Errorf("--faults' usage does not list %q", word)
			}
			out := runFile(t, tt.file, map[string]string{"faults": word})
			if len(out.Findings) > 0 || !out.Result.Pass {
				t.Fatalf("pass %v, findings %v", out.Result.Pass, out.Findings)
			}
			line, o := lastTrial(t, out, word)
			points := discoveredPoints(t, out)
			if len(points) == 0 || o.Point != points[len(points)-1] || o.Kind != "last-point" {
				t.Fatalf("trial %s at %q, want last-point at the last of %v", o.Kind, o.Point, points)
			}
			if len(o.Deliveries) != 2 {
				t.Fatalf("%d deliveries, want the faulted one and its redelivery", len(o.Deliveries))
			}
			first, ok := out.Records.Process(o.Deliveries[0].ProcessID)
			if !ok {
				t.Fatal("no process line for the first delivery")
			}
			if err := tt.crashed(first, o.Point); err != nil {
				t.Errorf("the first delivery was not faulted at the planned point: %v", err)
			}
			if tt.name == "handler program" && o.Deliveries[0].KilledAt != o.Point {
				t.Errorf("killed at %q, want %q", o.Deliveries[0].KilledAt, o.Point)
			}
			rec := scenariotest.Edit(t, out.Records, true, line, func(m map[string]any) { m["point"] = points[0] })
			said := fmt.Sprint(scenario.Evaluate(New(), nil, out.Settings, rec).AllFindings())
			if !strings.Contains(said, "the plan gives "+o.Point) {
				t.Errorf("a recorded point the plan does not give passed; findings: %s", said)
			}
		})
	}
	refused := []struct {
		name  string
		class engine.Class
	}{
		{"racers killed after a delay", engine.Class{Kind: "race-kills", Plan: func(in engine.Input) []engine.Trial {
			return []engine.Trial{{Class: in.Class, Condition: in.Condition, Racers: 2, KillsUS: []int64{0, 5}}}
		}, Fault: word, Labels: engine.Labels{Pattern: "race-kills"}}},
		{"no field at all", engine.Class{Kind: "nothing", Plan: func(in engine.Input) []engine.Trial {
			return []engine.Trial{{Class: in.Class, Condition: in.Condition}}
		}, Fault: word, Labels: engine.Labels{Pattern: "nothing"}}},
		{"no pattern label", engine.Class{Kind: "unlabelled", Plan: lastPoint, Fault: word, Labels: engine.Labels{Explore: "unlabelled"}}},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			register(t, tt.class)
			ov := map[string]string{"faults": word, "pattern-file": shipped("separate-commit")}
			p, err := New().Plan(context.Background(), scenario.PlanRequest{Backend: backend.SQLite, Overrides: ov, Files: osFiles{}})
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			env := harnesstest.New(t)
			err = p.Run(context.Background(), scenario.Env{Runner: env.Runner, Recorder: env.Recorder, TempDir: t.TempDir()})
			if !errors.Is(err, errclass.ErrHarness) || !strings.Contains(err.Error(), "does not run fault class "+string(tt.class.Kind)) {
				t.Fatalf("run: %v, want the harness's refusal of class %s", err, tt.class.Kind)
			}
		})
	}
}

// lastTrial is the one observation line of the condition of fault word,
// and its index among the records' lines.
func lastTrial(t *testing.T, out scenariotest.Outcome, word string) (int, Observation) {
	t.Helper()
	line, o := -1, Observation{}
	for i, l := range out.Records.Observations {
		if strings.HasSuffix(l.Condition, "/"+word) {
			if line >= 0 {
				t.Fatalf("two trials of %s", l.Condition)
			}
			line = i
			if err := json.Unmarshal(l.Raw, &o); err != nil {
				t.Fatal(err)
			}
		}
	}
	if line < 0 {
		t.Fatalf("no trial of the %s condition", word)
	}
	return line, o
}

// discoveredPoints are the points the run's discovery passed, as its
// result says.
func discoveredPoints(t *testing.T, out scenariotest.Outcome) []string {
	t.Helper()
	var x Extra
	if err := json.Unmarshal(out.Result.Extra, &x); err != nil || len(x.Patterns) != 1 {
		t.Fatalf("extra: %v (%d patterns)", err, len(x.Patterns))
	}
	return x.Patterns[0].Points
}
