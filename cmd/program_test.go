package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
)

// needPython skips a test of handler programs where python3 is missing.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH; the handler-program tests run Python handlers")
	}
}

// programPattern writes a Python program and a pattern file naming it into
// a fresh folder; the program gets the shipped points helper beside it.
func programPattern(t *testing.T, program string, edit func(m map[string]any)) string {
	t.Helper()
	dir := t.TempDir()
	helper, err := os.ReadFile("../testdata/handlers/points.py")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "points.py"), helper, 0o644)
	os.WriteFile(filepath.Join(dir, "handler.py"), []byte(program), 0o644)
	m := map[string]any{
		"name":    "program",
		"command": []any{"python3", "handler.py"},
		"schema":  []any{"CREATE TABLE jobs (event_id TEXT NOT NULL)"},
		"invariants": []any{
			map[string]any{"name": "one job", "query": "SELECT count(*) FROM jobs WHERE event_id = :event_id", "equals": 1},
		},
		"known_unsafe": []any{},
	}
	if edit != nil {
		edit(m)
	}
	b, _ := json.Marshal(m)
	p := filepath.Join(dir, "pattern.json")
	os.WriteFile(p, b, 0o644)
	return p
}

// insertOnce is a handler that writes the job once and ACKs.
const insertOnce = `import os, sqlite3
from points import point
e = os.environ["IDEMLAB_EVENT_ID"]
db = sqlite3.connect(os.environ["IDEMLAB_DB"], isolation_level=None, timeout=5)
db.execute("BEGIN IMMEDIATE")
if not db.execute("SELECT 1 FROM jobs WHERE event_id = ?", (e,)).fetchone():
    db.execute("INSERT INTO jobs VALUES (?)", (e,))
%s
db.execute("COMMIT")
point("after-commit")
`

// TestAttachmentsCarryTheHandlersFolder: the folder carries what the
// handler imports (points.py), which the plan never names, lists what it
// left out (a file over the budget, a link), and verify checks every
// carried copy's hash.
func TestAttachmentsCarryTheHandlersFolder(t *testing.T) {
	t.Parallel()
	needPython(t)
	file := programPattern(t, fmt.Sprintf(insertOnce, ""), nil)
	dir := filepath.Dir(file)
	big := filepath.Join(dir, "big.bin")
	if err := os.WriteFile(big, make([]byte, 17<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink("points.py", filepath.Join(dir, "link.py"))
	os.WriteFile(filepath.Join(dir, ".hidden"), []byte("not carried"), 0o644)
	r, out := runPattern(t, file, "--faults", "points")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var res results.Results
	b, _ := os.ReadFile(filepath.Join(out, results.ResultsFile))
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	helper, _ := os.ReadFile(filepath.Join(dir, "points.py"))
	var carried []string
	for _, a := range res.Attachments {
		if !a.Carried {
			continue
		}
		carried = append(carried, filepath.Base(a.Name))
		if filepath.Base(a.Name) == "points.py" && a.SHA256 != results.SHA256Hex(helper) {
			t.Errorf("points.py is carried with sha256 %s, the file hashes to %s", a.SHA256, results.SHA256Hex(helper))
		}
	}
	if d := cmp.Diff([]string{"points.py"}, carried); d != "" {
		t.Errorf("carried (-want +got):\n%s", d)
	}
	left := strings.Join(res.AttachmentsLeftOut, "\n")
	for _, want := range []string{"big.bin: 17825792 bytes, over the 16 MiB carried in all", "link.py: not a regular file"} {
		if !strings.Contains(left, want) {
			t.Errorf("attachments_left_out lacks %q:\n%s", want, left)
		}
	}
	v := execIn(t, Hooks{}, "verify", out)
	if v.code != 0 || !strings.Contains(v.stdout, "the run left out 2 file(s)") {
		t.Errorf("verify: exit %d, want 0 saying what was left out\n%s%s", v.code, v.stdout, v.stderr)
	}
	// A carried copy edited after the run does not verify, though no plan
	// reads it.
	for _, a := range res.Attachments {
		if a.Carried {
			os.WriteFile(filepath.Join(out, filepath.FromSlash(a.File)), []byte("def point(_): pass\n"), 0o644)
		}
	}
	if v := execIn(t, Hooks{}, "verify", out); v.code != 1 || !strings.Contains(v.stdout, "✗ results.json: attachments[") {
		t.Errorf("verify of an edited carried copy: exit %d, want 1 naming the attachment\n%s", v.code, v.stdout)
	}
}

func TestProgramProtocolEdges(t *testing.T) {
	t.Parallel()
	needPython(t)
	tests := []struct {
		name    string
		program string
		edit    func(m map[string]any)
		faults  string
		code    int
		texts   []string
	}{
		{"a repeated point is its own point", strings.Replace(insertOnce, "%s", `point("step")
point("step")`, 1), nil, "points", 0, []string{"3 points discovered", `"killed_at":"step#2"`}},
		{"a stray line is a finding", strings.Replace(insertOnce, "%s", `import socket
socket.socket(fileno=int(os.environ["IDEMLAB_POINTS_FD"])).sendall(b"hello\n")`, 1), nil, "points", 1, []string{`wrote \"hello\" on its points socket`}},
		{"a closed fd goes on without points", strings.Replace(insertOnce, "%s", `os.close(int(os.environ["IDEMLAB_POINTS_FD"]))`, 1), nil, "points", 1, []string{"0 points discovered", "plans no trials (the discovery delivery announced no point"}},
		{"a hang past the timeout is killed and judged", `import time
time.sleep(30)
`, func(m map[string]any) { m["handler_timeout_ms"] = 300; m["max_deliveries"] = 1 }, "points", 1, []string{"acknowledged want an ACK got none of 1 delivery"}},
		{"an exit 0 that does nothing is caught", "pass\n", nil, "points", 1, []string{"one job want 1 got 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := programPattern(t, strings.Replace(tt.program, "%s", "", 1), tt.edit)
			r, out := runPattern(t, file, "--faults", tt.faults)
			all := r.stdout + r.stderr
			for _, f := range []string{"results.json", "observations.jsonl"} {
				if raw, err := os.ReadFile(filepath.Join(out, f)); err == nil {
					all += string(raw)
				}
			}
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s", r.code, tt.code, all)
			}
			for _, want := range tt.texts {
				if !strings.Contains(all, want) {
					t.Errorf("no %q in the output or results:\n%s", want, r.stdout)
				}
			}
			if v := execIn(t, Hooks{}, "verify", out); v.code != map[int]int{0: 0, 1: 4}[tt.code] {
				t.Errorf("verify: exit %d:\n%s%s", v.code, v.stdout, v.stderr)
			}
		})
	}
}

func TestProgramOutputIsCapped(t *testing.T) {
	needPython(t)
	file := programPattern(t, strings.Replace(insertOnce, "%s", `print("x" * 100000)`, 1), nil)
	r, out := runPattern(t, file, "--faults", "points")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	b, _ := os.ReadFile(filepath.Join(out, "raw-processes.jsonl"))
	if !strings.Contains(string(b), "output cut at 65536 bytes") {
		t.Errorf("no cut marker in the process records")
	}
}

func TestProgramThatCannotStart(t *testing.T) {
	file := programPattern(t, "", func(m map[string]any) { m["command"] = []any{"./no-such-program"} })
	r, out := runPattern(t, file)
	if r.code != 2 || !strings.Contains(r.stderr, "no-such-program") {
		t.Errorf("exit %d, stderr %q; want 2 naming the command", r.code, r.stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s was written for a program that cannot start", out)
	}
}

// TestShippedHandlers: the Python separate-commit handler breaks at
// after-job-commit, and only there, as the built-in worker does; the
// single transaction holds. The folder carries the handler's source.
func TestShippedHandlers(t *testing.T) {
	t.Parallel()
	needPython(t)
	for _, tt := range []struct {
		file, text string
		// broken is how many of the points break: the article's answer,
		// after-job-commit alone for separate commits, none for one
		// transaction.
		broken  int
		verdict string
	}{
		{"separate-commit", "trial 1, crash at after-job-commit: one job want 1", 1, "broke, as listed"},
		{"single-transaction", "", 0, "held"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			r, out := runPattern(t, "../testdata/handlers/"+tt.file+".json", "--faults", "points")
			// The first-violation cell may wrap onto continuation lines.
			if r.code != 0 || !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), tt.text) {
				t.Fatalf("exit %d, want 0 with %q:\n%s%s", r.code, tt.text, r.stdout, r.stderr)
			}
			// The table's points row, by its fields: the points tried
			// are the trials the records hold.
			tried := 0
			for cond, n := range observationsPer(t, out) {
				if strings.HasSuffix(cond, "/points") {
					tried += n
				}
			}
			row := tableRow(r.stdout, "points")
			want := strings.Fields(fmt.Sprintf("points %d %d %s", tried, tt.broken, tt.verdict))
			if tried == 0 || len(row) < len(want) || !cmp.Equal(want, row[:len(want)]) {
				t.Errorf("points row %q, want it to start %q (%d trials recorded):\n%s", row, want, tried, r.stdout)
			}
			// The pattern file and the handler's source, which the plan
			// reads, and every other file of their folder, carried.
			entries, _ := os.ReadDir(filepath.Join(out, "attachments"))
			beside, _ := os.ReadDir("../testdata/handlers")
			if len(entries) != len(beside) {
				t.Errorf("attachments %v, want the %d files of the handler's folder", entries, len(beside))
			}
		})
	}
}

// tableRow is the fields of the first line of out whose first field is
// first; nil when there is none.
func tableRow(out, first string) []string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == first {
			return f
		}
	}
	return nil
}

// observationsPer counts a results folder's observations per condition,
// failing the test on a line that does not decode.
func observationsPer(t *testing.T, dir string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for i, line := range strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(dir, "observations.jsonl")))), "\n") {
		var o struct{ Condition string }
		if err := json.Unmarshal([]byte(line), &o); err != nil || o.Condition == "" {
			t.Fatalf("observations.jsonl line %d: %v %q", i+1, err, o.Condition)
		}
		n[o.Condition]++
	}
	return n
}
