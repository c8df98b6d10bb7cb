package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/harness"
)

// These tests run the command built from the tree as a user runs it, so a
// hang is the test's to bound, a signal reaches a real process, and its
// memory is measured.

// idemlabBinary is the command built from the tree, a copy of its own in
// the test's temp folder. The tree is built once per test binary (see
// builtOnce): a dozen tests each linking the same command took most of a
// minute of the package's run.
func idemlabBinary(t testing.TB) string {
	t.Helper()
	built, err := builtIdemlab.get()
	if err != nil {
		t.Fatalf("go build: %v", err)
	}
	b, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "idemlab")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

type binRun struct {
	code           int
	stdout, stderr string
	took           time.Duration
	// maxRSS is the command's peak resident memory, in bytes.
	maxRSS int64
}

// runBinary runs bin with args in dir, in a process group of its own. A run
// past limit is killed, group and all, and fails the test. during, when
// set, runs beside the command with its process, and has returned when
// runBinary returns.
func runBinary(t *testing.T, bin, dir string, limit time.Duration, during func(*os.Process), args ...string) binRun {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Dir = dir
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	start := time.Now()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	hung := time.AfterFunc(limit, func() { syscall.Kill(-c.Process.Pid, syscall.SIGKILL) })
	// during has returned before runBinary does, so what it wrote is the
	// caller's to read.
	done := make(chan struct{})
	if during != nil {
		go func() {
			defer close(done)
			during(c.Process)
		}()
	} else {
		close(done)
	}
	c.Wait()
	<-done
	if !hung.Stop() {
		t.Fatalf("idemlab %s ran past %v and was killed:\n%s%s", strings.Join(args, " "), limit, out.String(), errb.String())
	}
	r := binRun{code: c.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss << 10
	}
	return r
}

// peakLimitMiB bounds a bounded run's peak memory (26–29 MiB measured
// without -race); an unbounded reader took 662 MiB for 300 MiB sent. A
// child's peak counts from the fork, where it shares this process's
// memory until it execs, so the bound is at least this test binary's own
// peak and 120 MiB (the race detector's shadow memory puts this binary past
// 200 MiB on its own).
func peakLimitMiB() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return max(200, ru.Maxrss>>10+120)
}

// jsonLines decodes a JSONL file of the folder.
func jsonLines(t *testing.T, file string) []map[string]any {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<25)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return out
}

// verdicts is what a pattern run found, less what names the command or
// the moment: the derived figures and verdicts, each trial's fault and
// invariant values, what the parent saw of each delivery, and how each
// process ended.
func verdicts(t *testing.T, out string) map[string]any {
	t.Helper()
	var res struct {
		Scenarios []struct {
			Conditions []map[string]any `json:"conditions"`
			Extra      any              `json:"extra"`
		} `json:"scenarios"`
		Pass bool `json:"pass"`
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil || len(res.Scenarios) != 1 {
		t.Fatalf("results.json: %v, %d scenarios", err, len(res.Scenarios))
	}
	var trials, procs []any
	for _, o := range jsonLines(t, filepath.Join(out, "observations.jsonl")) {
		var ds []any
		for _, d := range o["deliveries"].([]any) {
			d := d.(map[string]any)
			ds = append(ds, []any{d["number"], d["points"], d["killed_at"], d["stray"], d["timed_out"], d["socket_cut"]})
		}
		trials = append(trials, []any{o["condition"], o["trial"], o["kind"], o["point"], o["values"], ds})
	}
	for _, p := range jsonLines(t, filepath.Join(out, "raw-processes.jsonl")) {
		procs = append(procs, []any{p["label"], p["exit_code"], p["signal"], p["killed_by"]})
	}
	// Trials of a condition run side by side, so the files hold them in
	// the order they ended.
	for _, xs := range [][]any{trials, procs} {
		sort.Slice(xs, func(i, j int) bool { return fmt.Sprint(xs[i]) < fmt.Sprint(xs[j]) })
	}
	s := res.Scenarios[0]
	return map[string]any{"pass": res.Pass, "conditions": s.Conditions, "extra": s.Extra, "trials": trials, "processes": procs}
}

// assertNothingLeft fails if a process of any recorded process's group,
// or any pid the programs wrote into the file pids in dir, is alive.
func assertNothingLeft(t *testing.T, out, dir string) {
	t.Helper()
	if out != "" {
		for _, p := range jsonLines(t, filepath.Join(out, "raw-processes.jsonl")) {
			pgid := int(p["pid"].(float64))
			if left := harness.GroupMembers(pgid); len(left) > 0 {
				t.Errorf("processes %v of %v's group %d are alive after the run", left, p["label"], pgid)
			}
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pids"))
	for _, f := range strings.Fields(string(b)) {
		if pid, _ := strconv.Atoi(f); pid > 0 && harness.Alive(pid) {
			t.Errorf("process %d, which a program started, is alive after the run", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// handlerDir copies the shipped separate-commit handler into a fresh
// folder with a pattern file whose command is argv, plus extra files.
func handlerDir(t *testing.T, argv []string, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	var m map[string]any
	b, err := os.ReadFile("../testdata/handlers/separate-commit.json")
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	m["command"] = argv
	b, _ = json.Marshal(m)
	files := map[string]string{"pattern.json": string(b)}
	for _, name := range []string{"separate_commit.py", "points.py"} {
		src, err := os.ReadFile("../testdata/handlers/" + name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(src)
	}
	for name, text := range extra {
		files[name] = text
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// forkWrapper runs the handler as a grandchild of a shell it starts, as
// a launcher script does, and says the shell's pid.
const forkWrapper = `import os, subprocess, sys
fd = int(os.environ["IDEMLAB_POINTS_FD"])
p = subprocess.Popen(["sh", "-c", "python3 separate_commit.py; exit $?"], pass_fds=(fd,))
with open("pids", "a") as f:
    f.write("%d\n" % p.pid)
sys.exit(p.wait())
`

// TestShippedHandlerThroughWrappers: the shipped separate-commit handler,
// started through sh -c and through a wrapper that forks it as a
// grandchild, breaks where and as it breaks when started directly: the
// same verdicts, trials, deliveries and endings. Each kill ends the whole
// group, so no process of a group is left after the run, and each folder
// verifies.
func TestShippedHandlerThroughWrappers(t *testing.T) {
	needPython(t)
	bin := idemlabBinary(t)
	input, _ := filepath.Abs(goodInput)
	run := func(t *testing.T, argv []string, extra map[string]string) map[string]any {
		dir := handlerDir(t, argv, extra)
		out := filepath.Join(dir, "results")
		r := runBinary(t, bin, dir, 3*time.Minute, nil, "experiment", "--quiet", "--scenario", "pattern", "--input", input, "--pattern-file", "pattern.json", "--faults", "points", "--out", out)
		if r.code != 0 {
			t.Fatalf("%q: exit %d, want 0 (the break is known_unsafe):\n%s%s", argv, r.code, r.stdout, r.stderr)
		}
		assertNothingLeft(t, out, dir)
		if v := runBinary(t, bin, dir, time.Minute, nil, "verify", out); v.code != 0 {
			t.Errorf("verify: exit %d:\n%s%s", v.code, v.stdout, v.stderr)
		}
		return verdicts(t, out)
	}
	direct := run(t, []string{"python3", "separate_commit.py"}, nil)
	if c := direct["extra"].(map[string]any)["patterns"].([]any)[0].(map[string]any)["conditions"].([]any)[1].(map[string]any); c["violating"] != 1.0 {
		t.Fatalf("the direct run breaks %v trials of points, want 1: %v", c["violating"], c)
	}
	for _, tt := range []struct {
		name  string
		argv  []string
		extra map[string]string
	}{
		{"sh -c", []string{"sh", "-c", "python3 separate_commit.py; exit $?"}, nil},
		{"a wrapper forking a grandchild", []string{"python3", "wrap.py"}, map[string]string{"wrap.py": forkWrapper}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(direct, run(t, tt.argv, tt.extra)); diff != "" {
				t.Errorf("verdicts through %q differ from the direct run's (-direct +wrapped):\n%s", tt.argv, diff)
			}
		})
	}
}

// TestSignalStopsTheRun: Ctrl-C (SIGINT) or SIGTERM to a real idemlab
// stops a run that a program's group, or a schema statement that never
// ends at plan time, would otherwise hold: exit 130 within seconds,
// nothing written, and nothing of the program's group left.
func TestSignalStopsTheRun(t *testing.T) {
	needPython(t)
	bin := idemlabBinary(t)
	input, _ := filepath.Abs(goodInput)
	hang := `sh -c 'sleep 600 & echo $! >> pids; echo $$ >> pids; wait'`
	tests := []struct {
		name string
		edit func(m map[string]any)
		// ready says the moment to send the signal has come.
		ready func(dir string) bool
	}{
		{"a handler and the grandchild holding its stdout", func(m map[string]any) {
			m["command"] = []any{"sh", "-c", hang}
			m["handler_timeout_ms"] = 600_000
		}, func(dir string) bool {
			b, _ := os.ReadFile(filepath.Join(dir, "pids"))
			return len(strings.Fields(string(b))) >= 2
		}},
		{"a schema statement that never ends", func(m map[string]any) {
			m["schema"] = []any{"CREATE TABLE jobs AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x AS event_id FROM c"}
		}, func(string) bool { return true }},
	}
	for _, tt := range tests {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(tt.name+"/"+sig.String(), func(t *testing.T) {
				file := programPattern(t, insertOnce, tt.edit)
				dir := filepath.Dir(file)
				out := filepath.Join(dir, "results")
				var sent time.Time
				r := runBinary(t, bin, dir, 2*time.Minute, func(p *os.Process) {
					for !tt.ready(dir) {
						time.Sleep(20 * time.Millisecond)
					}
					time.Sleep(time.Second)
					sent = time.Now()
					p.Signal(sig)
				}, "experiment", "--quiet", "--scenario", "pattern", "--input", input, "--pattern-file", file, "--out", out)
				if r.code != 130 || !strings.Contains(r.stderr, "stopped by a signal") {
					t.Fatalf("exit %d, want 130 saying it was stopped by a signal:\n%s%s", r.code, r.stdout, r.stderr)
				}
				if took := time.Since(sent); took > 10*time.Second {
					t.Errorf("the run ended %v after the signal", took)
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("%s was written by an interrupted run", out)
				}
				assertNothingLeft(t, "", dir)
			})
		}
	}
}

// TestPointsSocketIsBounded: whatever a program sends on its points
// socket, the run keeps a bounded part of it, the rest is a finding on the
// trial (exit 1), the folder verifies, and the harness's memory stays
// bounded.
func TestPointsSocketIsBounded(t *testing.T) {
	needPython(t)
	bin := idemlabBinary(t)
	input, _ := filepath.Abs(goodInput)
	const send = `import socket
s = socket.socket(fileno=int(os.environ["IDEMLAB_POINTS_FD"]))
chunk = b"x" * (1 << 20)
%s
`
	tests := []struct {
		name, code string
		// cut is the least each delivery's socket_cut can be: what it
		// sent less what the caps keep, newlines aside.
		cut int64
	}{
		{"a 17 MiB point line", `s.sendall(b"point ")
for _ in range(17):
    s.sendall(chunk)
s.sendall(b"\n")
s.makefile("r").readline()`, 17<<20 - harness.SocketLineCap},
		{"300 MiB with no newline", `for _ in range(300):
    s.sendall(chunk)
s.close()`, 300<<20 - harness.SocketLineCap},
		{"stray lines without end", `line = b"garbage " * 1500 + b"\n"
for _ in range(2000):
    s.sendall(line)
s.close()`, 2000*12000 - harness.StrayCap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			program := strings.Replace(insertOnce, "%s", strings.Replace(send, "%s", tt.code, 1), 1)
			file := programPattern(t, program, func(m map[string]any) { m["max_deliveries"] = 2 })
			dir := filepath.Dir(file)
			out := filepath.Join(dir, "results")
			r := runBinary(t, bin, dir, 3*time.Minute, nil, "experiment", "--quiet", "--scenario", "pattern", "--input", input, "--pattern-file", file, "--faults", "points", "--out", out)
			if limit := peakLimitMiB(); r.maxRSS > limit<<20 {
				t.Errorf("the run's peak memory was %d MiB, want at most %d", r.maxRSS>>20, limit)
			}
			res, _ := os.ReadFile(filepath.Join(out, "results.json"))
			if r.code != 1 || !strings.Contains(string(res), "on its points socket past its caps") {
				t.Fatalf("exit %d, want 1 with the socket's cap as a finding in results.json:\n%s%s", r.code, r.stdout, r.stderr)
			}
			for _, line := range strings.Split(r.stderr, "\n") {
				if len(line) > 4<<10 {
					t.Errorf("a line of %d bytes on stderr, want at most 4 KiB: %.200s", len(line), line)
				}
			}
			n := 0
			for _, o := range jsonLines(t, filepath.Join(out, "observations.jsonl")) {
				for _, d := range o["deliveries"].([]any) {
					cut, _ := d.(map[string]any)["socket_cut"].(float64)
					if n++; int64(cut) < tt.cut {
						t.Errorf("trial %v delivery %v: socket_cut %v, want at least %d", o["trial"], d.(map[string]any)["number"], cut, tt.cut)
					}
				}
			}
			if n == 0 {
				t.Errorf("no delivery was recorded")
			}
			if v := runBinary(t, bin, dir, time.Minute, nil, "verify", out); v.code != 4 {
				t.Errorf("verify: exit %d, want 4 (consistent, the run failed):\n%s%s", v.code, v.stdout, v.stderr)
			}
			if st, err := os.Stat(filepath.Join(out, "observations.jsonl")); err != nil || st.Size() > 4<<20 {
				t.Errorf("observations.jsonl: %v, %d bytes; want at most 4 MiB", err, st.Size())
			}
			t.Logf("peak memory %d MiB, %v", r.maxRSS>>20, r.took)
		})
	}
}

// TestLingeringHandlerIsAFinding: a hostile handler that double-forks a
// process which outlives it (its parent shell exits at once, so nothing
// waits for it) is a finding on the delivery, named by its process group:
// the run exits 1 with its folder written, verify derives the same
// verdict (exit 4), and nothing of it is left running.
func TestLingeringHandlerIsAFinding(t *testing.T) {
	needPython(t)
	bin := idemlabBinary(t)
	input, _ := filepath.Abs(goodInput)
	dir := handlerDir(t, []string{"sh", "-c", "(sleep 600 & echo $! >> pids); python3 separate_commit.py; exit $?"}, nil)
	out := filepath.Join(dir, "results")
	r := runBinary(t, bin, dir, 3*time.Minute, nil, "experiment", "--quiet", "--scenario", "pattern", "--input", input, "--pattern-file", "pattern.json", "--faults", "points", "--out", out)
	assertNothingLeft(t, out, dir)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "were still running after it exited") {
		t.Errorf("stderr does not say what outlived the handler:\n%s", r.stderr)
	}
	lingered := 0
	for _, p := range jsonLines(t, filepath.Join(out, "raw-processes.jsonl")) {
		l, ok := p["lingered"].(map[string]any)
		if !ok {
			continue
		}
		lingered++
		if l["group"] != p["pid"] {
			t.Errorf("%v: lingered group %v, want its own pid %v", p["label"], l["group"], p["pid"])
		}
	}
	if lingered == 0 {
		t.Error("no process line records what outlived it")
	}
	if v := runBinary(t, bin, dir, time.Minute, nil, "verify", out); v.code != 4 {
		t.Errorf("verify: exit %d, want 4 (consistent, the run failed):\n%s%s", v.code, v.stdout, v.stderr)
	}
}
