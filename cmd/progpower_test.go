package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/pattern"
	"idemlab/experiments/syncmodel"
	"idemlab/worker"
	"idemlab/worker/powerfs"
)

func needFUSE(t *testing.T) {
	t.Helper()
	if why := powerfs.Missing(); why != "" {
		t.Skip(why)
	}
}

// ownTmp gives the test a $TMPDIR of its own, where its runs make their
// trials' folders and mounts: /proc/self/mountinfo is the machine's, and
// other packages' tests (experiments/pattern's own) mount pattern trials
// beside it at the same time. Its name is short and it is open to others,
// as /tmp is: a throwaway PostgreSQL cluster there runs as the postgres
// user, with its socket (at most 107 bytes of path) in its folder.
func ownTmp(t *testing.T) {
	d, err := os.MkdirTemp("", "idl")
	if err == nil {
		err = os.Chmod(d, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	t.Setenv("TMPDIR", d)
}

// noPowerMounts fails the test if a pattern trial's powerfs mount is left
// in /proc/self/mountinfo under the test's own $TMPDIR (ownTmp).
func noPowerMounts(t *testing.T, after string) {
	t.Helper()
	ms, err := powerfs.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.HasPrefix(m.Mountpoint, os.TempDir()+"/") && strings.Contains(m.Mountpoint, "idemlab-pattern-trial-") {
			t.Errorf("after %s, still mounted: %+v", after, m)
		}
	}
}

// powerObs is a program power trial's observation as the test reads it.
type powerObs struct {
	Condition, Point, Model, DB string
	Trial                       int
	Values                      map[string]struct{ Text string }
	PowerFS                     *pattern.PowerFS
}

func readPowerObs(t *testing.T, dir string) ([]powerObs, []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(dir, "observations.jsonl")))), "\n")
	var out []powerObs
	for i, l := range lines {
		var o powerObs
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("observations.jsonl line %d: %v", i+1, err)
		}
		if o.PowerFS != nil {
			out = append(out, o)
		}
	}
	return out, lines
}

// TestProgramPowerOnTheFilesystem runs the shipped Python handler's power
// class on the power-loss filesystem and compares the cuts after the ACK
// (connection closed) and at ack-open (connection open) under drop with
// syncmodel's prediction for the same setting: DELETE/FULL loses the
// ACKed commit, DELETE/EXTRA keeps it. The folder verifies, nothing is
// left mounted, and an edited op, decision or model fails verify naming
// the field.
func TestProgramPowerOnTheFilesystem(t *testing.T) {
	needPython(t)
	needFUSE(t)
	ownTmp(t)
	r, out := runPattern(t, "../testdata/handlers/single-transaction.json", "--faults", "power", "--power", "DELETE/FULL,DELETE/EXTRA,WAL/NORMAL")
	noPowerMounts(t, "a run")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 (known_unsafe lists DELETE/FULL and WAL/NORMAL):\n%s%s", r.code, r.stdout, r.stderr)
	}
	obs, lines := readPowerObs(t, out)
	// The trials mounted under the test's own $TMPDIR, so noPowerMounts
	// above looked where they were.
	for _, o := range obs {
		if !strings.HasPrefix(o.DB, os.TempDir()+"/") {
			t.Fatalf("trial %d's database %s is not under the test's $TMPDIR %s", o.Trial, o.DB, os.TempDir())
		}
	}
	got, want := againstSyncModel(t, obs)
	if len(got) != 6 {
		t.Fatalf("found %d drop cuts after the ACK, want 6: %v", len(got), got)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("jobs after the cut, the model's (-) and the mount's (+):\n%s", d)
	}
	// The must-show, as the model states it: DELETE/FULL loses the
	// ACKed commit at the cut after the ACK, DELETE/EXTRA does not.
	if got[ackCell{"DELETE/FULL", pattern.PointACK}] != 0 || got[ackCell{"DELETE/EXTRA", pattern.PointACK}] != 1 {
		t.Errorf("after the ACK: DELETE/FULL left %d jobs, DELETE/EXTRA %d; want 0 and 1", got[ackCell{"DELETE/FULL", pattern.PointACK}], got[ackCell{"DELETE/EXTRA", pattern.PointACK}])
	}
	if v := execIn(t, Hooks{}, "verify", out); v.code != 0 {
		t.Fatalf("verify exit %d:\n%s%s", v.code, v.stdout, v.stderr)
	}
	// Each trial's mounts' servers are process lines of their own, which
	// its record names; a server's line edited fails verify.
	procLines := strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(out, "raw-processes.jsonl")))), "\n")
	servers := map[float64]int{}
	for i, l := range procLines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m["worker"] == powerfs.WorkerName {
			servers[m["id"].(float64)] = i
		}
	}
	named := 0
	for _, o := range obs {
		if n := len(o.PowerFS.ServerProcessIDs); n < 1 || n > 2 {
			t.Errorf("trial %d of %s names %d servers, want 1 or 2", o.Trial, o.Condition, n)
		}
		for _, id := range o.PowerFS.ServerProcessIDs {
			if _, ok := servers[float64(id)]; !ok {
				t.Errorf("trial %d of %s names server line %d, which is not a %s line", o.Trial, o.Condition, id, powerfs.WorkerName)
			}
			named++
		}
	}
	if named != len(servers) || named == 0 {
		t.Errorf("the records name %d servers, raw-processes.jsonl holds %d", named, len(servers))
	}
	for _, i := range servers {
		var m map[string]any
		_ = json.Unmarshal([]byte(procLines[i]), &m)
		m["exit_code"] = 3
		b, _ := json.Marshal(m)
		edited := append([]string{}, procLines...)
		edited[i] = string(b)
		dir := copyFolder(t, out)
		if err := os.WriteFile(filepath.Join(dir, "raw-processes.jsonl"), []byte(strings.Join(edited, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if v := execIn(t, Hooks{}, "verify", dir); v.code == 0 || !strings.Contains(v.stdout, "exit_code") {
			t.Errorf("a server's exit edited: verify exit %d, want a finding on exit_code:\n%s%s", v.code, v.stdout, v.stderr)
		}
		break
	}

	// Edits: each must fail verify naming the field.
	edit := func(match func(o powerObs) bool, change func(m map[string]any) bool) []string {
		for i, l := range lines {
			var o powerObs
			_ = json.Unmarshal([]byte(l), &o)
			if o.PowerFS == nil || !match(o) {
				continue
			}
			var m map[string]any
			dec := json.NewDecoder(strings.NewReader(l))
			dec.UseNumber() // a torn seed does not fit a float64
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			if !change(m["powerfs"].(map[string]any)) {
				continue
			}
			b, _ := json.Marshal(m)
			edited := append([]string{}, lines...)
			edited[i] = string(b)
			return edited
		}
		t.Fatal("no observation to edit")
		return nil
	}
	anyObs := func(powerObs) bool { return true }
	const journal = pattern.DBName + "-journal"
	for _, tt := range []struct {
		name  string
		lines []string
		finds string
	}{
		{"an op's length", edit(anyObs, func(p map[string]any) bool {
			for _, op := range p["log"].([]any) {
				if m := op.(map[string]any); m["op"] == "write" {
					n, _ := m["len"].(json.Number).Int64()
					m["len"] = n + 512
					return true
				}
			}
			return false
		}), "powerfs.log_sha256"},
		{"an op's mode, hash rewritten", edit(func(o powerObs) bool {
			return slices.ContainsFunc(o.PowerFS.Outcome.Entries, func(e powerfs.Entry) bool { return e.Path == journal })
		}, func(p map[string]any) bool {
			for _, op := range p["log"].([]any) {
				if m := op.(map[string]any); m["op"] == "create" && m["name"] == journal {
					m["mode"] = 0o600
					return rehash(t, p)
				}
			}
			return false
		}), "powerfs.outcome.entries"},
		{"a torn decision", edit(func(o powerObs) bool {
			return o.Model == powerfs.ModelTorn && len(o.PowerFS.Outcome.Files) > 0 && o.PowerFS.Outcome.Files[0].Decisions != ""
		}, func(p map[string]any) bool {
			f := p["outcome"].(map[string]any)["files"].([]any)[0].(map[string]any)
			d := f["decisions"].(string)
			f["decisions"] = map[byte]string{'k': "d", 'd': "k", 'g': "k"}[d[0]] + d[1:]
			return true
		}), "powerfs.outcome.files[0].decisions"},
		{"the model", edit(func(o powerObs) bool { return o.Model == powerfs.ModelDrop }, func(p map[string]any) bool {
			p["params"].(map[string]any)["model"] = powerfs.ModelKeep
			return true
		}), "powerfs.params"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := verifyObservations(t, out, tt.lines)
			if v.code == 0 || !strings.Contains(v.stdout, tt.finds) {
				t.Errorf("verify exit %d, want a finding on %s:\n%s%s", v.code, tt.finds, v.stdout, v.stderr)
			}
		})
	}
}

// ackCell is a power setting and a cut after the ACK.
type ackCell struct{ Setting, Point string }

// againstSyncModel reads, for each drop cut after the ACK (connection
// closed) and at ack-open (connection open), the jobs the trial left,
// and what syncmodel predicts for one commit at that setting and end.
func againstSyncModel(t *testing.T, obs []powerObs) (got, want map[ackCell]int) {
	t.Helper()
	got, want = map[ackCell]int{}, map[ackCell]int{}
	for _, o := range obs {
		if o.Model != powerfs.ModelDrop || (o.Point != pattern.PointACK && o.Point != pattern.PointACKOpen) {
			continue
		}
		setting := o.Condition[strings.Index(o.Condition, "power:")+len("power:"):]
		j, sy, _ := strings.Cut(setting, "/")
		end := syncmodel.EndClose
		if o.Point == pattern.PointACKOpen {
			end = syncmodel.EndOpen
		}
		pred, err := syncmodel.PowerCut(syncmodel.Setting{JournalMode: j, Synchronous: sy}, syncmodel.Process{Commits: 1, End: end}, syncmodel.Cut{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if pred.Min != pred.Max {
			t.Fatalf("%s %s: the model gives a range %d..%d under drop", setting, o.Point, pred.Min, pred.Max)
		}
		c := ackCell{setting, o.Point}
		want[c] = pred.Min
		got[c], _ = strconv.Atoi(o.Values["one job"].Text)
	}
	return got, want
}

// TestProgramPowerBrokenCut: with a test-only server whose cut keeps
// everything under drop, the same comparison fails where the model loses
// the ACKed commit (DELETE/FULL, after the ACK and at ack-open), naming
// the cells; nothing is left mounted.
func TestProgramPowerBrokenCut(t *testing.T) {
	needPython(t)
	needFUSE(t)
	ownTmp(t)
	t.Setenv(worker.EnvBreak, breakPowerKeep)
	_, out := runPattern(t, "../testdata/handlers/single-transaction.json", "--faults", "power", "--power", "DELETE/FULL")
	noPowerMounts(t, "a run with a broken cut")
	obs, _ := readPowerObs(t, out)
	got, want := againstSyncModel(t, obs)
	var differ []ackCell
	for c := range want {
		if got[c] != want[c] {
			differ = append(differ, c)
		}
	}
	slices.SortFunc(differ, func(a, b ackCell) int { return strings.Compare(a.Point, b.Point) })
	if d := cmp.Diff([]ackCell{{"DELETE/FULL", pattern.PointACK}, {"DELETE/FULL", pattern.PointACKOpen}}, differ); d != "" {
		t.Errorf("cells where the broken cut disagrees with the model (-want +got):\n%s", d)
	}
}

// rehash rewrites a record's log hash after an edit of its ops, as a
// consistent forgery would.
func rehash(t *testing.T, p map[string]any) bool {
	t.Helper()
	b, _ := json.Marshal(p["log"])
	var ops []powerfs.Op
	if err := json.Unmarshal(b, &ops); err != nil { // ops hold no number past 2^53
		t.Fatal(err)
	}
	h, err := pattern.OpsSHA256(ops)
	if err != nil {
		t.Fatal(err)
	}
	p["log_sha256"] = h
	return true
}

// TestProgramPowerSignalLeavesNoMount: Ctrl-C while a program's power
// trial waits on its mount (the program holds the database open there)
// ends the run with exit 130 and leaves no mount behind. Two layers see
// to it: the trial closes its mount, and a server whose harness is gone
// unmounts when its stdin closes; with the first removed the second still
// passes this test.
func TestProgramPowerSignalLeavesNoMount(t *testing.T) {
	needPython(t)
	needFUSE(t)
	ownTmp(t)
	bin := idemlabBinary(t)
	input, _ := filepath.Abs(goodInput)
	const program = `import os, sqlite3, time
from points import point, apply_settings
db = sqlite3.connect(os.environ["IDEMLAB_DB"], isolation_level=None, timeout=5)
apply_settings(db)
point("ready")
if os.environ.get("IDEMLAB_JOURNAL_MODE"):
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO jobs VALUES ('x')")
    open("on-mount", "w").write(os.environ["IDEMLAB_DB"])
    time.sleep(600)
db.execute("INSERT INTO jobs VALUES (?)", (os.environ["IDEMLAB_EVENT_ID"],))
`
	file := programPattern(t, program, func(m map[string]any) { m["handler_timeout_ms"] = 600_000 })
	dir := filepath.Dir(file)
	var onMount string
	r := runBinary(t, bin, dir, 2*time.Minute, func(p *os.Process) {
		for {
			if b, err := os.ReadFile(filepath.Join(dir, "on-mount")); err == nil && len(b) > 0 {
				onMount = string(b)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		p.Signal(syscall.SIGINT)
	}, "experiment", "--quiet", "--scenario", "pattern", "--input", input, "--pattern-file", file,
		"--faults", "power", "--power", "DELETE/FULL", "--out", filepath.Join(dir, "results"))
	if r.code != 130 {
		t.Fatalf("exit %d, want 130:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.HasPrefix(onMount, os.TempDir()+"/") || !strings.Contains(onMount, "idemlab-pattern-trial-") {
		t.Fatalf("the program's database %q is not a trial's mount under the test's $TMPDIR %s", onMount, os.TempDir())
	}
	noPowerMounts(t, "Ctrl-C")
}
