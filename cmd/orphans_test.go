package cmd

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"idemlab/experiments/backend"
	"idemlab/worker/store"
)

// userServer starts a throwaway cluster that stands in for a server the
// user names with --dsn, stopped when the test ends, and returns its
// maintenance connection string.
func userServer(t *testing.T) string {
	t.Helper()
	c, err := backend.StartCluster(context.Background(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	return c.AdminDSN("postgres")
}

// sharedTemp is a temp folder the server's OS user can reach (it runs as
// postgres when the tests run as root, and t.TempDir's folders are 0700).
func sharedTemp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "idemlab-orphans-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startHarness starts a real idemlab experiment on PostgreSQL with
// TMPDIR tmp, in a process group of its own.
func startHarness(t *testing.T, exe, tmp, out string, extra ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	args := append([]string{"experiment", "--quiet", "--backend", "postgres", "--scenario", "redelivery", "--input", goodInput, "--out", out}, extra...)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, &errb
}

// waitFor polls ok every 10 ms until it holds or the harness exits.
func waitFor(t *testing.T, cmd *exec.Cmd, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if cmd.ProcessState != nil || syscall.Kill(cmd.Process.Pid, 0) != nil || time.Now().After(deadline) {
			t.Fatalf("the harness ended, or 60 s passed, before %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rerun runs the harness to the end and returns its exit code and output.
func rerun(t *testing.T, exe, tmp, out string, extra ...string) (int, string) {
	t.Helper()
	args := append([]string{"experiment", "--quiet", "--backend", "postgres", "--scenario", "redelivery", "--input", goodInput, "--out", out}, extra...)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), string(b)
}

// posixSegments lists the POSIX shared memory files (/dev/shm) that the
// processes pids have mapped.
func posixSegments(pids []int) []string {
	seen := map[string]bool{}
	var out []string
	for _, pid := range pids {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "maps"))
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 6 && strings.HasPrefix(f[5], "/dev/shm/") && !seen[f[5]] {
				seen[f[5]] = true
				out = append(out, f[5])
			}
		}
	}
	return out
}

// TestKilledHarnessClusterIsCleanedUp SIGKILLs a real harness once its
// throwaway cluster accepts connections, sees the cluster outlive it, runs
// the harness again on the same temp folder, and asserts that the second
// run says it cleaned the cluster up and that none of the killed run's
// server processes, System V or POSIX shared memory, or folder is left.
func TestKilledHarnessClusterIsCleanedUp(t *testing.T) {
	needPostgres(t)
	exe := idemlabBinary(t)
	tmp, outs := sharedTemp(t), t.TempDir()
	// Whatever the test finds, nothing of the killed run outlives it:
	// registered first, this runs after the harness is reaped, and
	// SIGQUITs what the sweep left (an immediate shutdown, which
	// releases the server's shared memory).
	t.Cleanup(func() {
		if self, err := backend.Self(); err == nil {
			backend.SweepClusters(tmp, self)
		}
		for _, pid := range backend.ClusterProcesses(tmp) {
			syscall.Kill(pid, syscall.SIGQUIT)
		}
	})
	h, _ := startHarness(t, exe, tmp, filepath.Join(outs, "killed"))
	var dir string
	waitFor(t, h, "its cluster was ready", func() bool {
		m, _ := filepath.Glob(filepath.Join(tmp, "idemlab-pg-*", "data", "postmaster.pid"))
		if len(m) != 1 {
			return false
		}
		b, _ := os.ReadFile(m[0])
		dir = filepath.Dir(filepath.Dir(m[0]))
		return strings.Contains(string(b), "ready")
	})
	// SIGKILL, and no wait: the killed harness stays a zombie until the
	// cleanup, as one whose parent has not reaped it.
	if err := syscall.Kill(h.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	procs := backend.ClusterProcesses(dir)
	pidFile, _ := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	lines := strings.Split(string(pidFile), "\n")
	shm := -1
	if len(lines) > 6 {
		if f := strings.Fields(lines[6]); len(f) == 2 {
			shm, _ = strconv.Atoi(f[1])
		}
	}
	posix := posixSegments(procs)
	t.Logf("the killed run left %s: %d server processes, segment %d, POSIX %v", dir, len(procs), shm, posix)
	if len(procs) == 0 || shm < 0 || len(posix) == 0 {
		t.Fatalf("the killed run's cluster is not left running as the test expects: processes %v, segment %d, POSIX %v", procs, shm, posix)
	}

	code, out := rerun(t, exe, tmp, filepath.Join(outs, "next"))
	t.Logf("the next run (exit %d) printed:\n%s", code, out)
	if code != 0 {
		t.Errorf("the next run exited %d", code)
	}
	if want := "idemlab: cleaned up the PostgreSQL cluster " + dir + " left by a run that is gone (pid=" + strconv.Itoa(h.Process.Pid) + " "; !strings.Contains(out, want) {
		t.Errorf("the next run's output lacks %q", want)
	}
	if left := backend.ClusterProcesses(dir); len(left) > 0 {
		t.Errorf("server processes of the killed run survive: %v", left)
	}
	if _, err := unix.SysvShmCtl(shm, unix.IPC_STAT, &unix.SysvShmDesc{}); err == nil {
		t.Errorf("the killed run's shared memory segment %d survives", shm)
	}
	for _, p := range posix {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the killed run's POSIX shared memory %s survives", p)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "idemlab-pg-*")); len(left) > 0 {
		t.Errorf("cluster folders survive: %v", left)
	}
}

// TestKilledHarnessDatabaseIsDropped SIGKILLs a real harness running on a
// server named by --dsn (a cluster this test starts stands in for the
// user's) once its idemlab_<run> database exists, and asserts that the
// next run against that server drops it and says so, and leaves alone a
// database whose owner is alive and one kept with no owner record.
func TestKilledHarnessDatabaseIsDropped(t *testing.T) {
	needPostgres(t)
	exe := idemlabBinary(t)
	ctx := context.Background()
	dsn := userServer(t)
	st, _, err := store.OpenPostgres(ctx, dsn, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, q := range []string{"CREATE DATABASE idemlab_kept", "CREATE DATABASE idemlab_alive"} {
		if _, err := st.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	self, err := backend.Self()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB.ExecContext(ctx, "COMMENT ON DATABASE idemlab_alive IS 'idemlab owner "+self.String()+"'"); err != nil {
		t.Fatal(err)
	}

	tmp, outs := sharedTemp(t), t.TempDir()
	h, _ := startHarness(t, exe, tmp, filepath.Join(outs, "killed"), "--dsn", dsn)
	var killed string
	waitFor(t, h, "its database had an owner comment", func() bool {
		return st.DB.QueryRowContext(ctx, `SELECT datname FROM pg_database WHERE shobj_description(oid, 'pg_database') LIKE 'idemlab owner pid=`+strconv.Itoa(h.Process.Pid)+` %'`).Scan(&killed) == nil
	})
	if err := syscall.Kill(h.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.Wait()

	code, out := rerun(t, exe, tmp, filepath.Join(outs, "next"), "--dsn", dsn)
	t.Logf("the next run (exit %d) printed:\n%s", code, out)
	if code != 0 {
		t.Errorf("the next run exited %d", code)
	}
	if want := "idemlab: dropped the database " + killed + " left by a run that is gone (pid=" + strconv.Itoa(h.Process.Pid) + " "; !strings.Contains(out, want) {
		t.Errorf("the next run's output lacks %q", want)
	}
	for name, want := range map[string]int{killed: 0, "idemlab_kept": 1, "idemlab_alive": 1} {
		var n int
		if err := st.DB.QueryRowContext(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil || n != want {
			t.Errorf("%d databases named %s after the next run (%v), want %d", n, name, err, want)
		}
	}
	var left sql.NullString
	st.DB.QueryRowContext(ctx, `SELECT string_agg(datname, ',') FROM pg_database WHERE datname LIKE 'idemlab\_%' AND datname NOT IN ('idemlab_kept', 'idemlab_alive')`).Scan(&left)
	if left.Valid {
		t.Errorf("databases left on the server: %s", left.String)
	}
}
