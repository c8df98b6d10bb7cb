package cmd

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// freshFolder runs the redelivery scenario into a new folder.
func freshFolder(t *testing.T, h Hooks) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "results")
	r := execIn(t, h, "experiment", "--quiet", "--scenario", "redelivery", "--input", goodInput, "--out", out)
	if r.code != 0 && r.code != 1 {
		t.Fatalf("experiment: exit %d\n%s", r.code, r.stderr)
	}
	return out
}

// verifyObservations copies the folder out, replaces the copy's
// observations.jsonl with lines, and verifies the copy: a tamper test's
// one step, its assertion left to the caller.
func verifyObservations(t *testing.T, out string, lines []string) run {
	t.Helper()
	dir := copyFolder(t, out)
	if err := os.WriteFile(filepath.Join(dir, "observations.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return execIn(t, Hooks{}, "verify", dir)
}

// copyFolder copies a results folder so each tamper starts from the same
// untouched run.
func copyFolder(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// editJSON rewrites results.json through its decoded form.
func editJSON(t *testing.T, path string, edit func(m map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ = json.MarshalIndent(m, "", "  ")
	os.WriteFile(path, b, 0o644)
}

// editLine rewrites line n (1-based) of a JSONL file through its decoded
// form; a nil result deletes the line.
func editLine(t *testing.T, path string, n int, edit func(m map[string]any) map[string]any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[n-1]), &m); err != nil {
		t.Fatal(err)
	}
	if m = edit(m); m == nil {
		lines = append(lines[:n-1], lines[n:]...)
	} else {
		nb, _ := json.Marshal(m)
		lines[n-1] = string(nb) + "\n"
	}
	os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)
}

func scen(m map[string]any) map[string]any {
	return m["scenarios"].([]any)[0].(map[string]any)
}

func cond(m map[string]any, i int) map[string]any {
	return scen(m)["conditions"].([]any)[i].(map[string]any)
}

// TestVerifyCatchesEveryEdit makes one edit per case to a copy of a fresh
// folder; verify must exit 1 with a finding that names the file.
func TestVerifyCatchesEveryEdit(t *testing.T) {
	t.Parallel()
	fresh := freshFolder(t, Hooks{})
	if r := execIn(t, Hooks{}, "verify", fresh); r.code != 0 {
		t.Fatalf("the untouched folder: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	type edit struct {
		name string
		file string
		do   func(t *testing.T, dir string)
		want string
	}
	res := func(f func(m map[string]any)) func(*testing.T, string) {
		return func(t *testing.T, dir string) { editJSON(t, filepath.Join(dir, "results.json"), f) }
	}
	obs := func(n int, f func(m map[string]any) map[string]any) func(*testing.T, string) {
		return func(t *testing.T, dir string) { editLine(t, filepath.Join(dir, "observations.jsonl"), n, f) }
	}
	proc := func(n int, f func(m map[string]any) map[string]any) func(*testing.T, string) {
		return func(t *testing.T, dir string) { editLine(t, filepath.Join(dir, "raw-processes.jsonl"), n, f) }
	}
	tests := []edit{
		{"settings event id", "results.json", res(func(m map[string]any) { scen(m)["settings"].(map[string]any)["event_id"] = "x" }), "settings.event_id"},
		{"settings sqlite", "results.json", res(func(m map[string]any) {
			scen(m)["settings"].(map[string]any)["sqlite"].(map[string]any)["synchronous"] = "NORMAL"
		}), "settings.sqlite.synchronous"},
		{"settings crash point", "results.json", res(func(m map[string]any) {
			scen(m)["settings"].(map[string]any)["conditions"].([]any)[1].(map[string]any)["crash_at"] = "after-job-insert"
		}), "settings.conditions[1].crash_at"},
		{"an override added", "results.json", res(func(m map[string]any) { scen(m)["overrides"] = map[string]any{"trials": "1"} }), "overrides"},
		{"observed count", "results.json", res(func(m map[string]any) {
			cond(m, 1)["observed"].([]any)[1].(map[string]any)["follow_up_jobs"] = 1.0
		}), "conditions[separate-commit/crash-after-job-commit].observed[1].follow_up_jobs"},
		{"expected count", "results.json", res(func(m map[string]any) {
			cond(m, 0)["expected"].([]any)[0].(map[string]any)["processed_events"] = 0.0
		}), "expected[0].processed_events"},
		{"condition pass", "results.json", res(func(m map[string]any) { cond(m, 2)["pass"] = false }), "pass"},
		// A seeded condition marked as the OS's would leave its processes
		// out of a rerun's comparison.
		{"condition marked scheduled", "results.json", res(func(m map[string]any) { cond(m, 1)["scheduled"] = true }),
			"conditions[separate-commit/crash-after-job-commit].scheduled: is true, but the records give"},
		{"scenario pass", "results.json", res(func(m map[string]any) { scen(m)["pass"] = false }), "pass"},
		{"overall pass", "results.json", res(func(m map[string]any) { m["pass"] = false }), "results.json: pass"},
		{"extra read back", "results.json", res(func(m map[string]any) {
			scen(m)["extra"].(map[string]any)["sqlite_read_back"].(map[string]any)["journal_mode"] = "WAL"
		}), "extra.sqlite_read_back.journal_mode"},
		{"input hash", "input.json", res(func(m map[string]any) { m["inputs"].(map[string]any)["sha256"] = strings.Repeat("0", 64) }), "hashes to"},
		{"a condition removed", "results.json", res(func(m map[string]any) {
			s := scen(m)
			s["conditions"] = s["conditions"].([]any)[1:]
		}), "items"},
		{"scenario renamed", "results.json", res(func(m map[string]any) { scen(m)["name"] = "nope" }), "not a scenario"},
		{"input copy edited", "input.json", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "input.json"), []byte(`{"redelivery":{"event_id":"x","job_key":"y"}}`), 0o644)
		}, "hashes to"},
		{"input copy removed", "input.json", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "input.json")) }, "missing"},
		{"row content", "observations.jsonl", obs(1, func(m map[string]any) map[string]any {
			m["rows"].(map[string]any)["follow_up_jobs"].([]any)[0].(map[string]any)["job_key"] = "other"
			return m
		}), "rows.follow_up_jobs[0]"},
		{"row count", "results.json", obs(4, func(m map[string]any) map[string]any {
			r := m["rows"].(map[string]any)
			r["follow_up_jobs"] = r["follow_up_jobs"].([]any)[:1]
			return m
		}), "observed[1].follow_up_jobs"},
		{"observation deleted", "raw-processes.jsonl", obs(2, func(map[string]any) map[string]any { return nil }), "no observation refers"},
		{"observation's scenario", "observations.jsonl", obs(2, func(m map[string]any) map[string]any { m["scenario"] = "claim"; return m }), "not a scenario"},
		{"observation's process", "raw-processes.jsonl", obs(2, func(m map[string]any) map[string]any { m["process_id"] = 1.0; return m }), "referred to by 2"},
		{"argv pattern", "raw-processes.jsonl", proc(3, func(m map[string]any) map[string]any {
			m["argv"].([]any)[6] = "single-transaction"
			return m
		}), "argv"},
		{"argv job key", "raw-processes.jsonl", proc(1, func(m map[string]any) map[string]any {
			m["argv"].([]any)[10] = "x"
			return m
		}), "argv"},
		{"crash env", "raw-processes.jsonl", proc(7, func(m map[string]any) map[string]any {
			m["env"] = map[string]any{"IDEMLAB_CRASH_AT": "after-processed-insert"}
			return m
		}), "env"},
		{"exit code", "raw-processes.jsonl", proc(3, func(m map[string]any) map[string]any { m["exit_code"] = 0.0; return m }), "exit_code"},
		{"points reported", "results.json", proc(5, func(m map[string]any) map[string]any {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"after-processed-insert",`, "", 1)
			return m
		}), "observed[0].points"},
		{"pragma the worker read back", "raw-processes.jsonl", proc(2, func(m map[string]any) map[string]any {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"journal_mode":"DELETE"`, `"journal_mode":"WAL"`, 1)
			return m
		}), "read back"},
		{"worker's outcome claim", "raw-processes.jsonl", proc(2, func(m map[string]any) map[string]any {
			m["stdout"] = strings.Replace(m["stdout"].(string), `"already_processed":true`, `"already_processed":false`, 1)
			return m
		}), "already_processed"},
		{"extra process line", "raw-processes.jsonl", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "raw-processes.jsonl")
			b, _ := os.ReadFile(p)
			first := strings.SplitAfter(string(b), "\n")[0]
			var m map[string]any
			json.Unmarshal([]byte(first), &m)
			m["id"] = 11.0
			nb, _ := json.Marshal(m)
			os.WriteFile(p, append(b, append(nb, '\n')...), 0o644)
		}, "no observation refers"},
		{"process line deleted", "observations.jsonl", proc(10, func(map[string]any) map[string]any { return nil }), "not a process"},
		{"process ended before it started", "raw-processes.jsonl", proc(1, func(m map[string]any) map[string]any {
			m["ended_at"] = "2000-01-01T00:00:00Z"
			return m
		}), "(process 1): ended_at: is 2000-01-01T00:00:00Z, before started_at"},
		{"negative duration", "raw-processes.jsonl", proc(4, func(m map[string]any) map[string]any { m["duration_ms"] = -5.0; return m }), "(process 4): duration_ms: is -5"},
		{"a process that outlived its leader", "raw-processes.jsonl", proc(4, func(m map[string]any) map[string]any {
			m["lingered"] = map[string]any{"group": m["pid"], "processes": []any{map[string]any{"pid": 5.0, "comm": "sleep"}}}
			return m
		}), "(process 4): lingered: 1 process(es) of its group"},
		{"run started in 1999", "results.json", res(func(m map[string]any) { m["started_at"] = "1999-01-01T00:00:00Z" }), "results.json: started_at: is 1999-01-01T00:00:00Z"},
		{"run finished before its processes", "results.json", res(func(m map[string]any) {
			// Both times moved back, so the run finishes 5 s before
			// its first process started, whatever the run's length.
			at, _ := time.Parse(time.RFC3339Nano, m["started_at"].(string))
			m["started_at"] = at.Add(-10 * time.Second).Format(time.RFC3339)
			m["finished_at"] = at.Add(-5 * time.Second).Format(time.RFC3339)
		}), "results.json: finished_at: is"},
		{"argv[0] another executable", "raw-processes.jsonl", proc(2, func(m map[string]any) map[string]any {
			m["argv"].([]any)[0] = "/usr/bin/env"
			return m
		}), "(process 2): argv[0]: is \"/usr/bin/env\""},
		{"format claimed older", "results.json", res(func(m map[string]any) { m["format"] = 4.0 }), "results.json: format: is 4, but the folder holds raw-processes.jsonl line 1's executable_sha256"},
		{"a process's executable hash", "raw-processes.jsonl", proc(3, func(m map[string]any) map[string]any {
			m["executable_sha256"] = strings.Repeat("0", 64)
			return m
		}), "(process 3): executable_sha256: is 0000"},
		{"a process's executable hash removed", "raw-processes.jsonl", proc(3, func(m map[string]any) map[string]any {
			delete(m, "executable_sha256")
			return m
		}), "(process 3): executable_sha256: is absent"},
		{"the run's executable hash", "results.json", res(func(m map[string]any) {
			m["code"].(map[string]any)["executable_sha256"] = strings.Repeat("0", 64)
		}), "results.json: code.executable_sha256: is 0000"},
		{"truncated line", "raw-processes.jsonl", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "raw-processes.jsonl")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-20], 0o644)
		}, "truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyFolder(t, fresh)
			tt.do(t, dir)
			r := execIn(t, Hooks{}, "verify", dir)
			if r.code != 1 || !strings.Contains(r.stderr, "the folder does not verify") {
				t.Fatalf("exit %d, want 1 saying the folder does not verify\n%s%s", r.code, r.stdout, r.stderr)
			}
			found := false
			for _, line := range strings.Split(r.stdout, "\n") {
				if strings.HasPrefix(line, "✗ "+tt.file) && strings.Contains(line, tt.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("no finding in %s mentioning %q:\n%s", tt.file, tt.want, r.stdout)
			}
		})
	}
}

// TestVerifyExitCodes covers the verdicts beyond a finding: a consistent
// folder of a failed run (4), a folder whose executable is not the one
// given (5), a rerun (0), and a folder handed over without the input.
func TestVerifyExitCodes(t *testing.T) {
	t.Parallel()
	wrong := Hooks{Registry: wrongRegistry()}
	failed := freshFolder(t, wrong)
	if r := execIn(t, wrong, "verify", failed); r.code != 4 || !strings.Contains(r.stdout, "run verdict, derived from the records: FAIL") {
		t.Errorf("a consistent failed run: exit %d, want 4\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := execIn(t, Hooks{}, "verify", failed); r.code != 1 || !strings.Contains(r.stdout, "expected[1].follow_up_jobs") {
		t.Errorf("a failed run checked with the real oracle: exit %d, want 1\n%s", r.code, r.stdout)
	}
	good := freshFolder(t, Hooks{})
	// A built binary that stays where it was: the test binary, copied out
	// of the go command's temporary folder.
	built := keptBinary(t)
	byBuilt := freshFolder(t, Hooks{Executable: built})
	other := filepath.Join(t.TempDir(), "other-exe")
	os.WriteFile(other, []byte("not the binary"), 0o755)
	if r := execIn(t, Hooks{}, "verify", "--exe", other, byBuilt); r.code != 5 || !strings.Contains(r.stdout, "code changed: --exe") {
		t.Errorf("another executable: exit %d, want 5\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := execIn(t, Hooks{}, "verify", "--exe", built, byBuilt); r.code != 0 || !strings.Contains(r.stdout, "is the executable that made this folder") {
		t.Errorf("the executable that made it: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := execIn(t, Hooks{}, "verify", "--input", goodInput, good); r.code != 0 {
		t.Errorf("--input of the same file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := execIn(t, Hooks{}, "verify", "--input", "../input.json", good); r.code != 1 || !strings.Contains(r.stdout, "the folder was not made from that file") {
		t.Errorf("--input of another file: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := execIn(t, Hooks{}, "verify", "--rerun", good); r.code != 0 || !strings.Contains(r.stdout, "rerun: redelivery reproduced") {
		t.Errorf("rerun: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := execIn(t, wrong, "verify", "--rerun", good); r.code != 1 {
		t.Errorf("rerun with another oracle: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestReport(t *testing.T) {
	t.Parallel()
	good := freshFolder(t, Hooks{})
	html := filepath.Join(t.TempDir(), "report.html")
	if r := execIn(t, Hooks{}, "report", good, "--html", html); r.code != 0 {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	b, _ := os.ReadFile(html)
	for _, want := range []string{`<span class="verdict pass">PASS</span>`, "8 of 8</strong>", "イベント再配信"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(string(b), "code changed") || !strings.Contains(string(b), "at start: the same source") {
		t.Errorf("the report, rendered in the tree that made the folder, does not say the source is the same, or says the code changed")
	}
	// The tests run inside the source tree, so report compares it with the
	// run's working tree hash, as verify does: a folder whose tree hashed
	// otherwise renders with a "code changed" badge, and exits 0.
	moved := copyFolder(t, good)
	editJSON(t, filepath.Join(moved, "results.json"), func(m map[string]any) {
		m["code"].(map[string]any)["working_tree_at_start"].(map[string]any)["sha256"] = strings.Repeat("ab", 32)
	})
	if r := execIn(t, Hooks{}, "report", moved, "--html", html); r.code != 0 {
		t.Errorf("a folder of other code: exit %d, want 0\n%s", r.code, r.stderr)
	}
	b, _ = os.ReadFile(html)
	for _, want := range []string{`<span class="verdict changed">code changed</span>`, "code changed: the working tree here hashes to"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the report of a folder of other code lacks %q", want)
		}
	}
	md := execIn(t, Hooks{}, "report", moved)
	if md.code != 0 || !strings.Contains(md.stdout, "· **PASS** · **code changed**") {
		t.Errorf("the Markdown of a folder of other code: exit %d, want 0 and a code changed badge:\n%s", md.code, md.stdout)
	}
	bad := copyFolder(t, good)
	editJSON(t, filepath.Join(bad, "results.json"), func(m map[string]any) { cond(m, 1)["pass"] = false })
	r := execIn(t, Hooks{}, "report", bad, "--html", html)
	b, _ = os.ReadFile(html)
	if r.code != 1 || !strings.Contains(string(b), "DOES NOT VERIFY") || strings.Contains(string(b), `verdict pass">PASS`+"</span> ·") {
		t.Errorf("a tampered folder: exit %d; the badge must say DOES NOT VERIFY", r.code)
	}
	if r := execIn(t, Hooks{}, "report", good, "--md", filepath.Join(t.TempDir(), "nope", "r.md")); r.code != 2 || !strings.Contains(r.stderr, "--md") || strings.Contains(r.stderr, ".svg") {
		t.Errorf("--md into a missing folder: exit %d %q", r.code, r.stderr)
	}
}

// goldenRuns are the golden folders under testdata/golden: real runs, kept
// so that verify, report and the schema are tested on folders a reviewer
// would be handed. "go test ./cmd -run TestGoldenFolders -update" makes
// them again.
var goldenRuns = []struct {
	name string
	args []string
}{
	{"redelivery", []string{"--scenario", "redelivery", "--input", goodInput}},
	{"small", []string{"--input", "../input.json", "--trials", "1", "--items", "8", "--fail-at", "3", "--workers", "2", "--repetitions", "1", "--mutant-repetitions", "1"}},
}

func TestGoldenFolders(t *testing.T) {
	t.Parallel()
	for _, g := range goldenRuns {
		dir := filepath.Join("..", "testdata", "golden", g.name)
		if *update {
			os.RemoveAll(dir)
			args := append([]string{"experiment", "--quiet", "--out", dir}, g.args...)
			if r := execIn(t, Hooks{}, args...); r.code != 0 {
				t.Fatalf("%s: exit %d\n%s", g.name, r.code, r.stderr)
			}
		}
		r := execIn(t, Hooks{}, "verify", dir)
		if (r.code != 0 && r.code != 5) || strings.Contains(r.stdout, "✗") {
			t.Errorf("%s: exit %d, want 0 or 5 (code changed) with no finding\n%s%s", g.name, r.code, r.stdout, r.stderr)
		}
	}
}

// TestVerifyOlderFolder: a folder of an older format, whose process lines carry no
// executable hash and whose working tree was hashed over Go files alone,
// verifies with a notice for each, not a finding.
func TestVerifyOlderFolder(t *testing.T) {
	t.Parallel()
	r := execIn(t, Hooks{}, "verify", filepath.Join("..", "testdata", "golden", "redelivery"))
	if r.code != 0 || strings.Contains(r.stdout, "✗") {
		t.Fatalf("exit %d, want 0 with no finding\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"its process lines carry no executable_sha256 (format 5 records one per process)",
		"notice: working tree hash not compared: the run hashed its tree by another rule",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("verify does not say %q:\n%s", want, r.stdout)
		}
	}
}

// findLine returns the 1-based number of the first JSONL line for which
// match holds.
func findLine(t *testing.T, path string, match func(m map[string]any) bool) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && match(m) {
			return i + 1
		}
	}
	t.Fatalf("%s: no line matches", path)
	return 0
}

// TestVerifyCatchesEditsAcrossScenarios edits the batch and claim records
// of the small golden folder, which holds all three scenarios.
func TestVerifyCatchesEditsAcrossScenarios(t *testing.T) {
	t.Parallel()
	golden := filepath.Join("..", "testdata", "golden", "small")
	obsFile := filepath.Join(golden, "observations.jsonl")
	procFile := filepath.Join(golden, "raw-processes.jsonl")
	isObs := func(scenario, cond, step string) func(m map[string]any) bool {
		return func(m map[string]any) bool {
			return m["scenario"] == scenario && m["condition"] == cond && (step == "" || m["step"] == step)
		}
	}
	journalRun2 := findLine(t, obsFile, isObs("batch", "before_accept/journal", "run 2"))
	journalRun1 := findLine(t, obsFile, isObs("batch", "before_accept/journal", "run 1"))
	resolve := findLine(t, obsFile, func(m map[string]any) bool {
		return m["scenario"] == "batch" && strings.HasPrefix(fmt.Sprint(m["step"]), "resolve")
	})
	race := findLine(t, obsFile, func(m map[string]any) bool {
		return m["condition"] == "8-reclaim-keeps-downstream/ttl" && m["race_name"] == "B"
	})
	var run2ID, resolveID float64
	{
		b, _ := os.ReadFile(obsFile)
		lines := strings.Split(string(b), "\n")
		var m map[string]any
		json.Unmarshal([]byte(lines[journalRun2-1]), &m)
		run2ID = m["process_id"].(float64)
		json.Unmarshal([]byte(lines[resolve-1]), &m)
		resolveID = m["process_id"].(float64)
	}
	run2Proc := findLine(t, procFile, func(m map[string]any) bool { return m["id"] == run2ID })
	resolveProc := findLine(t, procFile, func(m map[string]any) bool { return m["id"] == resolveID })
	pool := findLine(t, procFile, func(m map[string]any) bool { return m["worker"] == "claim.pool" })
	replace := func(file string, n int, old, new string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			editLine(t, filepath.Join(dir, file), n, func(m map[string]any) map[string]any {
				b, _ := json.Marshal(m)
				if !strings.Contains(string(b), old) {
					t.Fatalf("line %d of %s lacks %s", n, file, old)
				}
				json.Unmarshal([]byte(strings.Replace(string(b), old, new, 1)), &m)
				return m
			})
		}
	}
	tests := []struct {
		name, file string
		do         func(t *testing.T, dir string)
	}{
		{"batch: a journal row's status", "observations.jsonl", replace("observations.jsonl", journalRun2, `"status":"SUCCEEDED"`, `"status":"FAILED"`)},
		{"batch: a send removed from the receiver log", "observations.jsonl", func(t *testing.T, dir string) {
			editLine(t, filepath.Join(dir, "observations.jsonl"), journalRun1, func(m map[string]any) map[string]any {
				m["sends"] = m["sends"].([]any)[1:]
				return m
			})
		}},
		{"batch: a send's outcome", "observations.jsonl", replace("observations.jsonl", journalRun1, `"outcome":"rejected"`, `"outcome":"accepted"`)},
		{"batch: the receiver's address", "observations.jsonl", replace("observations.jsonl", journalRun2, `"receiver":"http://127.0.0.1:`, `"receiver":"http://127.0.0.2:`)},
		{"batch: the resolve's lookup", "observations.jsonl", func(t *testing.T, dir string) {
			editLine(t, filepath.Join(dir, "observations.jsonl"), resolve, func(m map[string]any) map[string]any {
				l := m["lookup"].(map[string]any)
				l["found"] = !(l["found"].(bool))
				return m
			})
		}},
		{"batch: the mode in a run's argv", "raw-processes.jsonl", replace("raw-processes.jsonl", run2Proc, `"journal"`, `"rerun-all"`)},
		{"batch: a resolve's -delivered", "raw-processes.jsonl", replace("raw-processes.jsonl", resolveProc, `-delivered=`, `-delivered=x`)},
		{"batch: the worker's own step count", "raw-processes.jsonl", replace("raw-processes.jsonl", run2Proc, `\"executed_steps\":`, `\"executed_steps\":1`)},
		{"batch: the pragmas the worker read back", "raw-processes.jsonl", replace("raw-processes.jsonl", run2Proc, `\"synchronous\":\"NORMAL\"`, `\"synchronous\":\"FULL\"`)},
		{"batch: the crash point set", "raw-processes.jsonl", func(t *testing.T, dir string) {
			editLine(t, filepath.Join(dir, "raw-processes.jsonl"), run2Proc, func(m map[string]any) map[string]any {
				m["env"] = map[string]any{"IDEMLAB_CRASH_AT": "before-send:item-003"}
				return m
			})
		}},
		{"claim: the row the parent read", "observations.jsonl", replace("observations.jsonl", race, `"classification":"needs-triage"`, `"classification":"other"`)},
		{"claim: a racer's slot request", "observations.jsonl", replace("observations.jsonl", race, `"variant":"ttl"`, `"variant":"legacy"`)},
		{"claim: a racer's process", "observations.jsonl", func(t *testing.T, dir string) {
			editLine(t, filepath.Join(dir, "observations.jsonl"), race, func(m map[string]any) map[string]any {
				r := m["racers"].([]any)
				r[1].(map[string]any)["process_id"] = r[0].(map[string]any)["process_id"]
				return m
			})
		}},
		{"claim: a pool member's claim variant", "raw-processes.jsonl", replace("raw-processes.jsonl", pool, `\"variant\":\"ttl\"`, `\"variant\":\"mutant-no-where\"`)},
		{"claim: a pool member's won flag", "raw-processes.jsonl", replace("raw-processes.jsonl", pool, `\"won\":false`, `\"won\":true`)},
		{"claim: the busy timeout read back", "raw-processes.jsonl", replace("raw-processes.jsonl", pool, `\"busy_timeout_ms\":5000`, `\"busy_timeout_ms\":100`)},
		{"claim: the pool's argv", "raw-processes.jsonl", replace("raw-processes.jsonl", pool, `"-ttl-ms","300000"`, `"-ttl-ms","1000"`)},
		{"settings: the batch trials", "results.json", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "results.json"), func(m map[string]any) {
				for _, s := range m["scenarios"].([]any) {
					if s.(map[string]any)["name"] == "batch" {
						s.(map[string]any)["overrides"].(map[string]any)["trials"] = "2"
					}
				}
			})
		}},
		{"settings: the claim workers", "results.json", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "results.json"), func(m map[string]any) {
				for _, s := range m["scenarios"].([]any) {
					if s.(map[string]any)["name"] == "claim" {
						s.(map[string]any)["settings"].(map[string]any)["workers"] = 8.0
					}
				}
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyFolder(t, golden)
			tt.do(t, dir)
			r := execIn(t, Hooks{}, "verify", dir)
			if r.code != 1 || !strings.Contains(r.stdout, "✗ "+tt.file) {
				t.Errorf("exit %d, want 1 with a finding in %s:\n%s%s", r.code, tt.file, r.stdout, r.stderr)
			}
		})
	}
}
