package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/redelivery"
	"idemlab/experiments/scenario"
	"idemlab/worker"
	"idemlab/worker/powerfs"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Parallel tests: a test that only runs the command inside this process
// (execIn, execCtx, experimentFolder) and checks what it wrote calls
// t.Parallel, since a run mostly waits on its child processes. A test that
// looks at the machine's state (processes, mounts, $TMPDIR, the
// environment through t.Setenv, signals, package variables such as
// teardownBound) or builds and runs the binary stays sequential: go test
// starts the parallel tests only once every sequential one has ended, so
// those never see another test's processes or mounts.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == worker.Arg && os.Getenv("CMDTEST_CHILD_EXIT5") == "1" {
		os.Exit(5)
	}
	worker.TestMain(cleanedUp{m, []interface{ remove() }{builtIdemlab, twoShards}}, worker.Breaks{breakPowerKeep: {powerfs.WorkerName: powerfs.BrokenKeepMain}})
}

// breakPowerKeep names the test-only power-loss filesystem whose cut
// keeps everything, even under drop.
const breakPowerKeep = "powerfs-cut-keeps-all"

type run struct {
	code           int
	stdout, stderr string
}

func execIn(t *testing.T, base Hooks, args ...string) run {
	t.Helper()
	return execute1(base, args...)
}

// execute1 runs the command in-process, as execIn does, for what is made
// outside any one test (madeOnce).
func execute1(base Hooks, args ...string) run {
	var out, errb bytes.Buffer
	code := execute(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, withPatterns(base))
	return run{code, out.String(), errb.String()}
}

const goodInput = "../testdata/input/redelivery.json"

// sourcePatterns are the shipped pattern files of the source tree, by
// their paths from the module root, as main embeds them.
var sourcePatterns = os.DirFS("..")

// withPatterns is h with the source tree's shipped pattern files, as main
// gives the binary's.
func withPatterns(h Hooks) Hooks {
	if h.Patterns == nil {
		h.Patterns = sourcePatterns
	}
	return h
}

func TestExperimentRedelivery(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "results")
	r := execIn(t, Hooks{}, "experiment", "--scenario", "redelivery", "--input", goodInput, "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		// Lines that name the --out folder grow with the path the user chose.
		if n := utf8.RuneCountInString(line); n > 100 && !strings.Contains(line, out) {
			t.Errorf("a line of %d columns, want at most 100: %q", n, line)
		}
	}
	for _, want := range []string{"separate-commit/crash-after-job-commit", "2 / 1 (0)", "0 / 0 (17)", "PASS", "article 000: 8 of 8 published cells reproduced ✓"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, f := range []string{"results.json", "observations.jsonl", "raw-processes.jsonl", "input.json"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	golden(t, filepath.Join(out, "results.json"), "../testdata/golden/redelivery-results.json")
}

// golden compares results.json with the golden file after replacing the
// fields that change from run to run.
func golden(t *testing.T, got, want string) {
	t.Helper()
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	normalise(m)
	norm, _ := json.MarshalIndent(m, "", "  ")
	goldenBytes(t, "results.json", append(norm, '\n'), want)
}

// goldenBytes compares got, named what, with the golden file want, which
// -update rewrites first.
func goldenBytes(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(want, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(w), string(got)); diff != "" {
		t.Errorf("%s differs from %s (-golden +got):\n%s", what, want, diff)
	}
}

func normalise(m map[string]any) {
	m["started_at"], m["finished_at"] = "TIME", "TIME"
	m["tool"] = "TOOL"
	m["environment"] = "ENVIRONMENT"
	m["code"] = "CODE"
	if in, ok := m["inputs"].(map[string]any); ok {
		in["path"] = "PATH"
	}
}

func TestExperimentRefusesExistingOut(t *testing.T) {
	out := t.TempDir()
	marker := filepath.Join(out, "keep")
	os.WriteFile(marker, []byte("mine"), 0o644)
	r := execIn(t, Hooks{}, "experiment", "--scenario", "redelivery", "--input", goodInput, "--out", out)
	if r.code != 2 || !strings.Contains(r.stderr, "already exists") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("exit %d stderr %q, want 2 and one line saying it exists", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(marker); string(b) != "mine" {
		t.Error("existing folder was touched")
	}
}

func TestExperimentBadInput(t *testing.T) {
	tests := []struct {
		name, input, want string
	}{
		{"malformed", `{"redelivery": {"event_id": "e",}}`, "malformed JSON"},
		{"unknown field", `{"redelivery": {"event_id": "e", "job_key": "k", "evnt": 1}}`, `redelivery.evnt: unknown field`},
		{"unknown section", `{"redelivery": {"event_id": "e", "job_key": "k"}, "nope": {}}`, `nope: not a scenario`},
		{"empty event id", `{"redelivery": {"event_id": " ", "job_key": "k"}}`, "redelivery.event_id: must not be empty"},
		{"wrong type", `{"redelivery": {"event_id": 42, "job_key": "k"}}`, "redelivery.event_id: got JSON number, want string"},
		{"missing section", `{}`, "redelivery: section is missing"},
		{"empty file", ``, "empty, want a JSON object"},
		{"trailing data", `{"redelivery": {"event_id": "e", "job_key": "k"}} {}`, "trailing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "input.json")
			os.WriteFile(in, []byte(tt.input), 0o644)
			out := filepath.Join(dir, "results")
			r := execIn(t, Hooks{}, "experiment", "--scenario", "redelivery", "--input", in, "--out", out)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, in) {
				t.Errorf("exit %d stderr %q; want 2 naming %q and the file", r.code, r.stderr, tt.want)
			}
			assertOnly(t, dir, "input.json")
		})
	}
}

// assertOnly fails if dir holds anything but the named entries, such as a
// half-written results folder.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if diff := cmp.Diff(names, got); diff != "" {
		t.Errorf("folder contents (-want +got):\n%s", diff)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad flag", []string{"experiment", "--bogus"}, "unknown flag: --bogus"},
		{"missing out", []string{"experiment", "--input", goodInput}, "--out is required"},
		{"unknown scenario", []string{"experiment", "--scenario", "nope", "--out", filepath.Join(dir, "x")}, `--scenario "nope": unknown`},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"missing input", []string{"experiment", "--input", filepath.Join(dir, "none.json"), "--out", filepath.Join(dir, "y")}, "none.json"},
		{"unwritable out", []string{"experiment", "--scenario", "redelivery", "--input", goodInput, "--out", filepath.Join(file, "out")}, "parent folder"},
		{"stray argument", []string{"list", "extra"}, "unknown command"},
		{"zero workers", []string{"experiment", "--scenario", "claim", "--workers", "0", "--input", "../input.json", "--out", filepath.Join(dir, "w")}, "--workers 0: want 2 to 64"},
		{"a flag of another scenario", []string{"experiment", "--scenario", "redelivery", "--items", "5", "--input", goodInput, "--out", filepath.Join(dir, "i")}, "--items does not apply to the chosen scenarios (redelivery)"},
		{"a bad mode", []string{"experiment", "--scenario", "batch", "--mode", "sideways", "--input", "../input.json", "--out", filepath.Join(dir, "m")}, `"sideways": unknown`},
		{"a bad boolean", []string{"experiment", "--scenario", "claim", "--mutants=maybe", "--input", "../input.json", "--out", filepath.Join(dir, "b")}, "want true or false"},
		{"verify's missing --input", []string{"verify", "--input", filepath.Join(dir, "none.json"), dir}, "leave --input out to use the folder's own input.json"},
		{"comma-separated scenarios", []string{"experiment", "--scenario", "redelivery,batch", "--out", filepath.Join(dir, "z")}, "repeat the flag"},
		{"verify without a folder", []string{"verify"}, "needs one results folder"},
		{"report without a folder", []string{"report"}, "needs one or more results folders"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := execIn(t, Hooks{}, tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d stderr %q; want 2 and %q", r.code, r.stderr, tt.want)
			}
		})
	}
	assertOnly(t, dir, "file")
}

// hopefulRedelivery is the redelivery scenario with an oracle that
// expects one job where the separate commits leave two.
type hopefulRedelivery struct{ redelivery.Scenario }

func (hopefulRedelivery) Expect(st redelivery.Settings) ([]scenario.Expected, error) {
	var out []scenario.Expected
	for _, c := range st.Conditions {
		d := redelivery.Expect(st, c)
		if c.Name == "separate-commit/crash-after-job-commit" {
			d[1].FollowUpJobs = 1
		}
		out = append(out, scenario.Expected{Condition: c.Name, Value: d})
	}
	return out, nil
}

// wrongRegistry has the hopeful redelivery oracle.
func wrongRegistry() scenario.Registry {
	return scenario.Registry{scenario.Define[redelivery.Settings, redelivery.Extra](hopefulRedelivery{})}
}

// TestWrongOracleExitsOne shows that a deliberately wrong expectation fails
// the run with exit 1, one line per failed condition naming the field, and
// results written with pass: false; the CI summaries say the same.
func TestWrongOracleExitsOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "results")
	r := execIn(t, Hooks{Registry: wrongRegistry()}, "experiment", "--scenario", "redelivery", "--input", goodInput, "--out", out,
		"--summary-json", filepath.Join(dir, "summary.json"), "--junit", filepath.Join(dir, "junit.xml"))
	if r.code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", r.code, r.stderr)
	}
	want := "FAIL redelivery/separate-commit/crash-after-job-commit: delivery 2 follow_up_jobs want 1 got 2\n"
	if !strings.Contains(r.stderr, want) || strings.Count(r.stderr, "FAIL ") != 1 {
		t.Errorf("stderr lacks the one failure line %q:\n%s", want, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"pass": false`)) {
		t.Error("results.json does not say pass: false")
	}
	var sum Summary
	sb, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err := json.Unmarshal(sb, &sum); err != nil || sum.Pass || sum.Status != StatusFail || len(sum.Failures) != 1 {
		t.Errorf("summary.json: %v %+v", err, sum)
	}
	if jb, _ := os.ReadFile(filepath.Join(dir, "junit.xml")); !bytes.Contains(jb, []byte(`<failure message="delivery 2 follow_up_jobs want 1 got 2">delivery 2 follow_up_jobs want 1 got 2</failure>`)) {
		t.Errorf("junit.xml lacks the failure:\n%s", jb)
	}
}

// TestChildDiesUnexpectedly sets CMDTEST_CHILD_EXIT5, which makes every
// worker exit 5 without a word: the workers misbehave, which is a result,
// not a harness failure. The run records every process, exits 1 and
// writes its folder with pass: false and the finding; verify of that
// folder agrees and exits 4.
func TestChildDiesUnexpectedly(t *testing.T) {
	t.Setenv("CMDTEST_CHILD_EXIT5", "1")
	out := filepath.Join(t.TempDir(), "results")
	r := execIn(t, Hooks{}, "experiment", "--scenario", "redelivery", "--input", goodInput, "--out", out)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("no folder written: %v", err)
	}
	for _, want := range []string{`"pass": false`, "delivery 1 exited 5; a delivery ends in 0 (ACK) or 17 (crash)", "delivery 1: no report line on stdout"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("results.json lacks %q", want)
		}
	}
	// Each failure line leads with the finding: a condition that fails on
	// findings alone is never a bare "FAIL redelivery/x:". A line wraps
	// between phrases onto continuation lines.
	var fails int
	for _, block := range failBlocks(r.stderr) {
		l := strings.Join(strings.Fields(block), " ")
		fails++
		if !strings.Contains(l, ": delivery 1 exited 5; a delivery ends in 0 (ACK) or 17 (crash)") {
			t.Errorf("failure line does not lead with the finding: %q", l)
		}
	}
	if fails == 0 {
		t.Errorf("no FAIL line on stderr:\n%s", r.stderr)
	}
	v := execIn(t, Hooks{}, "verify", out)
	if v.code != 4 {
		t.Errorf("verify: exit %d, want 4 (consistent, the run failed); stdout:\n%s\nstderr:\n%s", v.code, v.stdout, v.stderr)
	}
}

func TestHelpAndList(t *testing.T) {
	tests := []struct {
		args      []string
		want, not string
	}{
		{[]string{"experiment", "--help"}, "130  interrupted", "the folder verifies"},
		{[]string{"verify", "--help"}, "4    the folder is consistent, but its run failed", "130  interrupted (Ctrl-C"},
		{[]string{"report", "--help"}, "rendered, but the folder does not verify", "harness itself failed"},
		{[]string{"resolve", "--help"}, "--delivered=true without --receipt", "results written"},
	}
	for _, tt := range tests {
		r := execIn(t, Hooks{}, tt.args...)
		if r.code != 0 || !strings.Contains(r.stdout, tt.want) || strings.Contains(r.stdout, tt.not) {
			t.Errorf("%v: exit %d; want %q and not %q in:\n%s", tt.args, r.code, tt.want, tt.not, r.stdout)
		}
	}
	r := execIn(t, Hooks{}, "list")
	if !strings.Contains(r.stdout, "redelivery\n  article 000") {
		t.Errorf("list lacks redelivery:\n%s", r.stdout)
	}
}

// TestInterruptExits130 cancels a run half-way, as Ctrl-C does: the run
// says it was interrupted, exits 130 and leaves nothing behind.
func TestInterruptExits130(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	h := Hooks{Registry: scenario.Registry{scenario.Define[redelivery.Settings, redelivery.Extra](slowScenario{})}}
	go func() {
		<-slowStarted
		cancel()
	}()
	code := execute(ctx, []string{"experiment", "--quiet", "--scenario", "redelivery", "--input", goodInput, "--out", filepath.Join(dir, "results")},
		Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, h)
	if code != 130 || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("exit %d, stderr %q; want 130 saying interrupted", code, errb.String())
	}
	assertOnly(t, dir)
}

var slowStarted = make(chan struct{})

// slowScenario is redelivery with a run that signals once it has started
// its first worker and then keeps delivering until it is stopped.
type slowScenario struct{ redelivery.Scenario }

func (s slowScenario) Plan(ctx context.Context, req scenario.PlanRequest) (scenario.Plan, error) {
	p, err := s.Scenario.Plan(ctx, req)
	return slowPlan{p}, err
}

type slowPlan struct{ scenario.Plan }

func (p slowPlan) Run(ctx context.Context, env scenario.Env) error {
	close(slowStarted)
	for {
		if err := p.Plan.Run(ctx, env); err != nil {
			return err
		}
	}
}
