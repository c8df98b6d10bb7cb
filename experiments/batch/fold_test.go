package batch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/harness/harnesstest"
	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wb "idemlab/worker/batch"
)

var update = flag.Bool("update", false, "rewrite testdata/records from a real run")

// fixtureInput is the input of the recorded fixture: small, both modes,
// with latency so that the floor checks have something to check.
const fixtureInput = `{"job_id":"job-1","items":4,"fail_at":2,"modes":["before_accept","after_accept"],"trials":1,"latency_ms":{"validate":0.2,"transform":0.2,"send":0.3}}`

func planOf(tb testing.TB, section string, ov map[string]string) Settings {
	tb.Helper()
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(section), Overrides: ov})
	if err != nil {
		tb.Fatal(err)
	}
	return p.Settings().(Settings)
}

// runReal runs the scenario with real worker processes and returns the
// folder it recorded into.
func runReal(tb testing.TB, section string) (Settings, string) {
	tb.Helper()
	env := harnesstest.New(tb)
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(section)})
	if err != nil {
		tb.Fatal(err)
	}
	if err := p.Run(context.Background(), scenario.Env{Runner: env.Runner, Recorder: env.Recorder, TempDir: tb.TempDir()}); err != nil {
		tb.Fatal(err)
	}
	if err := env.Recorder.Close(); err != nil {
		tb.Fatal(err)
	}
	return p.Settings().(Settings), env.Dir
}

func load(tb testing.TB, dir string) results.Records {
	tb.Helper()
	f, err := results.LoadRecords(dir, results.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	for _, fd := range f.Findings {
		if !strings.Contains(fd.File, results.InputCopyFile) {
			tb.Errorf("loading: %s", fd)
		}
	}
	return f.Records(Name)
}

// TestRunRealProcesses runs every condition end to end with real workers,
// a real journal and the real receiver, and derives the verdict the way
// the experiment and verify do.
//
// Two trials and two first-run lanes make trials of one condition
// interleave, which the fold must follow; every later run must come after
// every first run.
func TestRunRealProcesses(t *testing.T) {
	section := `{"job_id":"job-1","items":8,"fail_at":3,"modes":["before_accept","after_accept"],"trials":2,"first_run_lanes":2,"latency_ms":{"validate":0.5,"transform":0.5,"send":1}}`
	if *update {
		section = fixtureInput
	}
	st, dir := runReal(t, section)
	rec := load(t, dir)
	lastFirst, firstLater := -1, len(rec.Observations)
	for i, l := range rec.Observations {
		var o Observation
		if err := json.Unmarshal(l.Raw, &o); err != nil {
			t.Fatal(err)
		}
		if o.Step == "run 1" {
			lastFirst = i
		} else {
			firstLater = min(firstLater, i)
		}
	}
	if !*update && lastFirst > firstLater {
		t.Errorf("line %d is a first run, after line %d, a later one", lastFirst+1, firstLater+1)
	}
	res := scenario.Evaluate(New(), nil, scenario.Marshal(st), rec)
	findings := res.AllFindings()
	for _, f := range findings {
		t.Errorf("finding: %s", f)
	}
	for _, c := range res.Conditions {
		if !c.Pass {
			t.Errorf("%s: %v", c.Name, c.Differences)
		}
	}
	if n := len(rec.Processes); n != (&plan{s: st}).Processes() || len(rec.Observations) != n {
		t.Errorf("%d processes and %d observations, the plan counts %d", n, len(rec.Observations), (&plan{s: st}).Processes())
	}
	// A wrong expectation must fail, naming the field.
	res = scenario.Evaluate(scenario.Define[Settings, Extra](wrongOracle{}), nil, scenario.Marshal(st), rec)
	for _, c := range res.Conditions {
		failing := strings.HasSuffix(c.Name, "/"+CondJournal)
		if c.Pass == failing {
			t.Errorf("wrong oracle: %s pass %v", c.Name, c.Pass)
		}
		if !failing {
			continue
		}
		if len(c.Differences) != st.Trials {
			t.Errorf("wrong oracle: %s differences %v, want one per trial", c.Name, c.Differences)
		}
		for i, d := range c.Differences {
			if want := fmt.Sprintf("[%d].duplicates", i); d.Path != want {
				t.Errorf("wrong oracle: %s difference %d is at %s, want %s", c.Name, i, d.Path, want)
			}
		}
	}
	if *update {
		writeFixture(t, dir)
	}
}

// wrongOracle is the batch scenario with an oracle that expects a
// duplicate in every journal condition, which no run leaves.
type wrongOracle struct{ Scenario }

func (w wrongOracle) Expect(st Settings) ([]scenario.Expected, error) {
	exp, err := w.Scenario.Expect(st)
	for i, c := range st.Conditions {
		if c.Condition != CondJournal {
			continue
		}
		outs := exp[i].Value.([]Outcome)
		for j := range outs {
			outs[j].Duplicates = 1
		}
	}
	return exp, err
}

// writeFixture copies the records into testdata with the machine's paths
// replaced: the executable by "idemlab" and scratch folders by "scratch".
func writeFixture(t *testing.T, dir string) {
	exe, _ := os.Executable()
	out := filepath.Join("testdata", "records")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{results.ObservationsFile, results.ProcessesFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte(exe), []byte("idemlab"))
		b = bytes.ReplaceAll(b, []byte(os.TempDir()+"/"), []byte("scratch/"))
		if bytes.Contains(b, []byte(`"/`)) {
			t.Fatalf("%s still holds an absolute path", name)
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fixture is the recorded records as generic JSON, ready to tamper with.
type fixture struct {
	obs, procs []map[string]any
}

func readJSONL(tb testing.TB, path string) []map[string]any {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			tb.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func loadFixture(tb testing.TB) fixture {
	dir := filepath.Join("testdata", "records")
	return fixture{readJSONL(tb, filepath.Join(dir, results.ObservationsFile)), readJSONL(tb, filepath.Join(dir, results.ProcessesFile))}
}

func (fx fixture) records(tb testing.TB) results.Records {
	tb.Helper()
	var obs []results.Line
	for i, m := range fx.obs {
		raw, err := json.Marshal(m)
		if err != nil {
			tb.Fatal(err)
		}
		obs = append(obs, results.Line{N: i + 1, Scenario: m["scenario"].(string), Condition: m["condition"].(string), Raw: raw})
	}
	var procs []results.Process
	for i, m := range fx.procs {
		raw, _ := json.Marshal(m)
		var p results.ProcessRecord
		if err := json.Unmarshal(raw, &p); err != nil {
			tb.Fatal(err)
		}
		procs = append(procs, results.Process{N: i + 1, ProcessRecord: p})
	}
	return results.NewRecords(obs, procs)
}

// find returns the index of the first line matching condition and step.
func find(tb testing.TB, lines []map[string]any, key, cond, step string) int {
	tb.Helper()
	for i, m := range lines {
		if m["condition"] == cond && m[key] == step {
			return i
		}
	}
	tb.Fatalf("no line %s %q", cond, step)
	return -1
}

// report edits the report line in a process's stdout.
func report(tb testing.TB, p map[string]any, edit func(rep, result map[string]any)) {
	tb.Helper()
	var rep map[string]any
	if err := json.Unmarshal([]byte(p["stdout"].(string)), &rep); err != nil {
		tb.Fatal(err)
	}
	result, _ := rep["result"].(map[string]any)
	edit(rep, result)
	b, _ := json.Marshal(rep)
	p["stdout"] = string(b) + "\n"
}

func (fx fixture) proc(tb testing.TB, cond, label string) map[string]any {
	return fx.procs[find(tb, fx.procs, "label", cond, label)]
}

func (fx fixture) line(tb testing.TB, cond, step string) map[string]any {
	return fx.obs[find(tb, fx.obs, "step", cond, step)]
}

func fixtureSettings(tb testing.TB) Settings { return planOf(tb, fixtureInput, nil) }

// TestLaneFloor checks the critical path's floor on hand-made timings:
// first runs dealt to k sub-lanes in order, later runs one after another.
func TestLaneFloor(t *testing.T) {
	trial := func(first, later float64) TrialTiming {
		return TrialTiming{Runs: []RunTiming{{Run: 1, FloorMS: first}, {Run: 2, FloorMS: later}}, AllRunsFloorMS: first + later}
	}
	ts := []TrialTiming{trial(10, 1), trial(20, 2), trial(30, 3), trial(40, 4)}
	for _, tt := range []struct {
		k    int
		want float64
	}{
		{1, 100 + 10}, // every run in turn
		{2, 60 + 10},  // sub-lanes 10+30 and 20+40
		{3, 50 + 10},  // 10+40, 20, 30
		{4, 40 + 10},  // each first run alone
		{8, 40 + 10},  // more sub-lanes than trials
		{0, 100 + 10}, // absent means 1
	} {
		if got := laneFloor(ts, tt.k); got != tt.want {
			t.Errorf("k=%d: %v, want %v", tt.k, got, tt.want)
		}
	}
}

// TestFoldClean folds the recorded fixture: no findings, and every
// condition's observed figures equal the oracle's.
func TestFoldClean(t *testing.T) {
	st := fixtureSettings(t)
	res := scenario.Evaluate(New(), nil, scenario.Marshal(st), loadFixture(t).records(t))
	findings := res.AllFindings()
	for _, f := range findings {
		t.Errorf("finding: %s", f)
	}
	if len(res.Conditions) != len(st.Conditions) {
		t.Fatalf("%d conditions, want %d", len(res.Conditions), len(st.Conditions))
	}
	for _, c := range res.Conditions {
		var exp, obs []Outcome
		json.Unmarshal(c.Expected, &exp)
		json.Unmarshal(c.Observed, &obs)
		if d := cmp.Diff(exp, obs); d != "" || !c.Pass {
			t.Errorf("%s (-oracle +fold):\n%s", c.Name, d)
		}
	}
}

// TestReportHasNoTimingVerdict renders the fixture's report: the timing
// tables show the measured ratios, and no cell or legend judges them, since
// the timing targets are make bench's.
func TestReportHasNoTimingVerdict(t *testing.T) {
	st := fixtureSettings(t)
	s := New()
	res := scenario.Evaluate(s, nil, scenario.Marshal(st), loadFixture(t).records(t))
	sec, err := s.Report(res)
	if err != nil {
		t.Fatal(err)
	}
	ratios := 0
	for _, tb := range sec.Tables {
		cells := strings.Join(tb.Header, " ")
		for _, row := range tb.Rows {
			cells += " " + strings.Join(row, " ")
		}
		for _, word := range []string{"MISSED", "met", "target"} {
			if containsWord(cells, word) {
				t.Errorf("table %q judges its timings: %q in %s", tb.Title, word, cells)
			}
		}
		if legend := strings.Join(tb.Legend, " "); containsWord(legend, "MISSED") {
			t.Errorf("table %q's legend judges its timings: %s", tb.Title, legend)
		}
		if slices.Contains(tb.Header, "ratio") {
			ratios++
		}
	}
	for _, kv := range sec.Settings {
		if strings.Contains(kv[0], "target") {
			t.Errorf("settings row %q shows a timing target", kv[0])
		}
	}
	if want := len(st.Modes) + 1; ratios != want {
		t.Errorf("%d tables show a ratio, want %d (a timing table per mode and the wall)", ratios, want)
	}
}

// containsWord reports whether word appears in text as a whole word.
func containsWord(text, word string) bool {
	return slices.Contains(strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) }), word)
}

const (
	baRerun   = "before_accept/" + CondRerunAll
	baJournal = "before_accept/" + CondJournal
	aaJournal = "after_accept/" + CondJournal
	aaCrash   = "after_accept/" + CondHardCrash
	aaKey     = "after_accept/" + CondRerunAllKey
)

// TestFoldTampered changes one field of the fixture at a time; each change
// must give a finding naming the file and the field.
func TestFoldTampered(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(tb testing.TB, fx *fixture)
		file   string
		field  string
	}{
		{"journal row status", func(tb testing.TB, fx *fixture) {
			rows := fx.line(tb, baJournal, "run 3")["journal"].([]any)
			rows[0].(map[string]any)["status"] = "FAILED"
		}, results.ObservationsFile, "journal[0].updated_at"},
		{"journal row removed", func(tb testing.TB, fx *fixture) {
			l := fx.line(tb, baJournal, "run 3")
			l["journal"] = l["journal"].([]any)[1:]
		}, results.ObservationsFile, "journal"},
		{"receiver log entry removed", func(tb testing.TB, fx *fixture) {
			l := fx.line(tb, baRerun, "run 2")
			l["sends"] = l["sends"].([]any)[1:]
		}, results.ObservationsFile, "sends[0].seq"},
		{"receiver log entry duplicated", func(tb testing.TB, fx *fixture) {
			l := fx.line(tb, baRerun, "run 2")
			s := l["sends"].([]any)
			l["sends"] = append([]any{s[0]}, s...)
		}, results.ObservationsFile, "sends[1].seq"},
		{"receiver log outcome", func(tb testing.TB, fx *fixture) {
			s := fx.line(tb, baRerun, "run 2")["sends"].([]any)
			s[0].(map[string]any)["outcome"] = receiver.SendRejected
		}, results.ObservationsFile, "sends[0].outcome"},
		{"send outside the process window", func(tb testing.TB, fx *fixture) {
			s := fx.line(tb, baRerun, "run 2")["sends"].([]any)
			s[0].(map[string]any)["at"] = "2001-01-01T00:00:00Z"
		}, results.ObservationsFile, "sends[0].at"},
		{"receiver URL of one line", func(tb testing.TB, fx *fixture) {
			fx.line(tb, baJournal, "run 2")["receiver"] = "http://127.0.0.1:1"
		}, results.ObservationsFile, "receiver"},
		{"lookup found flipped", func(tb testing.TB, fx *fixture) {
			l := fx.line(tb, aaJournal, "resolve job-1:item-002:notify_external")
			l["lookup"].(map[string]any)["found"] = false
		}, results.ObservationsFile, "lookup"},
		{"run argv -mode", func(tb testing.TB, fx *fixture) {
			argv := fx.proc(tb, baRerun, "trial 1 run 2")["argv"].([]any)
			argv[4] = wb.ModeJournal
		}, results.ProcessesFile, "argv"},
		{"resolve -delivered", func(tb testing.TB, fx *fixture) {
			argv := fx.proc(tb, aaJournal, "trial 1 resolve job-1:item-002:notify_external")["argv"].([]any)
			for i, a := range argv {
				if a == "-delivered=true" {
					argv[i] = "-delivered=false"
				}
			}
		}, results.ProcessesFile, "argv"},
		{"crash env removed", func(tb testing.TB, fx *fixture) {
			fx.proc(tb, aaCrash, "trial 1 run 1")["env"] = map[string]any{}
		}, results.ProcessesFile, "env"},
		{"crash env added", func(tb testing.TB, fx *fixture) {
			fx.proc(tb, aaJournal, "trial 1 run 2")["env"] = map[string]any{"IDEMLAB_CRASH_AT": "before-send:item-002"}
		}, results.ProcessesFile, "env"},
		{"child's validate count", func(tb testing.TB, fx *fixture) {
			report(tb, fx.proc(tb, baRerun, "trial 1 run 2"), func(_, r map[string]any) {
				r["executed_by_step"].(map[string]any)["validate"] = 3.0
			})
		}, results.ProcessesFile, "stdout.result.executed_by_step"},
		{"child's journal executed count", func(tb testing.TB, fx *fixture) {
			report(tb, fx.proc(tb, baJournal, "trial 1 run 2"), func(_, r map[string]any) {
				r["executed_by_step"].(map[string]any)["transform"] = 9.0
			})
		}, results.ProcessesFile, "stdout.result.executed_by_step.transform"},
		{"child's skipped count", func(tb testing.TB, fx *fixture) {
			report(tb, fx.proc(tb, baJournal, "trial 1 run 3"), func(_, r map[string]any) { r["skipped_steps"] = 1.0 })
		}, results.ProcessesFile, "stdout.result.skipped_steps"},
		{"child's held list", func(tb testing.TB, fx *fixture) {
			report(tb, fx.proc(tb, baJournal, "trial 1 run 2"), func(_, r map[string]any) { r["held"] = []any{} })
		}, results.ProcessesFile, "stdout.result.held"},
		{"child's read-back pragma", func(tb testing.TB, fx *fixture) {
			report(tb, fx.proc(tb, aaJournal, "trial 1 run 3"), func(_, r map[string]any) {
				r["sqlite"].(map[string]any)["synchronous"] = "FULL"
			})
		}, results.ProcessesFile, "stdout.result.sqlite"},
		{"worker ms below the floor", func(tb testing.TB, fx *fixture) {
			report(tb, fx.proc(tb, aaKey, "trial 1 run 2"), func(_, r map[string]any) { r["ms"] = 0.01 })
		}, results.ProcessesFile, "stdout.result.ms"},
		{"process shorter than the worker", func(tb testing.TB, fx *fixture) {
			fx.proc(tb, aaKey, "trial 1 run 2")["duration_ms"] = 0.5
		}, results.ProcessesFile, "duration_ms"},
		{"child's points", func(tb testing.TB, fx *fixture) {
			report(tb, fx.proc(tb, baRerun, "trial 1 run 2"), func(rep, _ map[string]any) { rep["points"] = rep["points"].([]any)[1:] })
		}, results.ProcessesFile, "stdout.points"},
		{"exit code", func(tb testing.TB, fx *fixture) {
			fx.proc(tb, baRerun, "trial 1 run 1")["exit_code"] = 0.0
		}, results.ProcessesFile, "stdout.result.failed"},
		{"extra process line", func(tb testing.TB, fx *fixture) {
			extra := map[string]any{}
			for k, v := range fx.procs[0] {
				extra[k] = v
			}
			extra["id"] = 9999.0
			fx.procs = append(fx.procs, extra)
		}, results.ProcessesFile, "(process 9999)"},
		{"process ids swapped", func(tb testing.TB, fx *fixture) {
			a, b := fx.line(tb, baRerun, "run 1"), fx.line(tb, baRerun, "run 2")
			a["process_id"], b["process_id"] = b["process_id"], a["process_id"]
		}, results.ProcessesFile, "label"},
		{"trial number", func(tb testing.TB, fx *fixture) {
			fx.line(tb, baJournal, "run 2")["trial"] = 2.0
		}, results.ObservationsFile, "trial"},
	}
	st := fixtureSettings(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := loadFixture(t)
			tt.tamper(t, &fx)
			rec := fx.records(t)
			_, findings := Scenario{}.Fold(st, rec)
			// scenario.Evaluate checks every scenario's process windows.
			findings = append(findings, results.Windows(rec)...)
			for _, f := range findings {
				if f.File == tt.file && strings.Contains(f.Field, tt.field) {
					t.Logf("%s", f)
					return
				}
			}
			t.Errorf("no finding in %s naming %q; got %d:", tt.file, tt.field, len(findings))
			for _, f := range findings {
				t.Logf("  %s", f)
			}
		})
	}
}
