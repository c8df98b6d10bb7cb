package backend

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/errclass"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

func TestResolve(t *testing.T) {
	pg := Spec{Name: "postgres", Isolation: "read-committed", SynchronousCommit: "on"}
	for _, tt := range []struct {
		name    string
		section string
		ov      map[string]string
		want    Spec
		err     string
	}{
		{"nothing is sqlite", "", nil, SQLite, ""},
		{"section", `{"name":"postgres","isolation":"serializable"}`, nil, Spec{"postgres", "serializable", "on", true}, ""},
		{"flag wins", `{"name":"postgres","isolation":"serializable"}`, map[string]string{"isolation": "repeatable-read", "synchronous-commit": "off"}, Spec{"postgres", "repeatable-read", "off", true}, ""},
		{"flag alone", "", map[string]string{"backend": "postgres"}, pg, ""},
		{"unknown backend", `{"name":"mysql"}`, nil, Spec{}, "backend.name: unknown backend"},
		{"unknown field", `{"name":"postgres","dsn":"x"}`, nil, Spec{}, `unknown field "dsn"`},
		{"bad isolation", "", map[string]string{"backend": "postgres", "isolation": "snapshot"}, Spec{}, `--isolation "snapshot": want one of read-committed`},
		{"PostgreSQL's words are not a level's name", `{"name":"postgres","isolation":"read committed"}`, nil, Spec{}, `backend.isolation "read committed": want one of read-committed, repeatable-read, serializable`},
		{"bad sync", `{"name":"postgres","synchronous_commit":"remote_apply"}`, nil, Spec{}, `backend.synchronous_commit "remote_apply"`},
		{"isolation on sqlite", "", map[string]string{"isolation": "serializable"}, Spec{}, "--isolation: is PostgreSQL's, but the backend is sqlite"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(json.RawMessage(tt.section), tt.ov)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestStartRefusesSQLiteFlags(t *testing.T) {
	for _, o := range []Options{{DSN: "host=x"}, {Keep: true}} {
		if _, err := Start(context.Background(), SQLite, o); !errors.Is(err, errclass.ErrUsage) {
			t.Errorf("Start(sqlite, %+v) = %v, want a usage error", o, err)
		}
	}
	if _, err := Start(context.Background(), Spec{Name: "postgres", Isolation: "read-committed", SynchronousCommit: "on"}, Options{Keep: true}); !errors.Is(err, errclass.ErrUsage) {
		t.Errorf("--keep without --dsn gave %v, want a usage error", err)
	}
}

// TestMissingBinaries: with nothing on PATH and nothing in the library
// folder, the error is a usage error that names the package to install.
func TestMissingBinaries(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	old := libDirs
	libDirs = t.TempDir() + "/*/bin"
	defer func() { libDirs = old }()
	_, err := FindBinaries()
	if !errors.Is(err, errclass.ErrUsage) || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Fatalf("FindBinaries() = %v, want a usage error naming the package", err)
	}
	if _, err := Start(context.Background(), Spec{Name: "postgres", Isolation: "read-committed", SynchronousCommit: "on"}, Options{}); !errors.Is(err, errclass.ErrUsage) {
		t.Errorf("Start without binaries = %v, want the usage error", err)
	}
}

// NeedBinaries skips a test, saying why, on a machine without the
// server's binaries.
func needBinaries(t *testing.T) {
	t.Helper()
	if _, err := FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
}

// TestClusterLeavesNothing starts a run's server, uses it, closes it, and
// finds neither a process of its group nor its folder; and a start that
// fails half-way (a setting the server refuses) leaves nothing either.
func TestClusterLeavesNothing(t *testing.T) {
	needBinaries(t)
	ctx := context.Background()
	spec := Spec{Name: "postgres", Isolation: "serializable", SynchronousCommit: "off"}
	s, err := Start(ctx, spec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	info := s.Info()
	pid, dir := info.Cluster.PID, info.Cluster.Dir
	if len(ClusterProcesses(dir)) == 0 {
		t.Fatalf("the server (pid %d) is not running after Start", pid)
	}
	db, err := s.Fresh(ctx, "cond")
	if err != nil {
		t.Fatal(err)
	}
	st, rb, err := store.Open(ctx, db.Backend, db.Target, sqlitedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := rb.Postgres.Requested()
	if want := *spec.Requested(); got != want || !strings.HasPrefix(info.ServerVersion, rb.Postgres.ServerVersion[:2]) {
		t.Errorf("read back %+v on server %q, want %+v", *rb.Postgres, info.ServerVersion, want)
	}
	if _, err := st.ExecContext(ctx, "CREATE TABLE t (k TEXT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.HasTable(ctx, "t"); !ok || err != nil {
		t.Errorf("HasTable in the condition's schema: %v, %v", ok, err)
	}
	st.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, pid, dir)

	c, err := StartCluster(ctx, "", []string{"no_such_setting=1"})
	if err == nil {
		c.Stop()
		t.Fatal("a cluster with a setting the server refuses started")
	}
	if c == nil || c.Dir == "" {
		t.Fatalf("StartCluster failed without saying which folder it made: %v", err)
	}
	assertGone(t, c.PID, c.Dir)
}

func assertGone(t *testing.T, pid int, dir string) {
	t.Helper()
	if left := ClusterProcesses(dir); len(left) > 0 {
		t.Errorf("processes of the server (pid %d) survive: %v", pid, left)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cluster's folder %s survives (%v)", dir, err)
	}
}

// TestDSNMakesAndDropsItsDatabase uses a running server through --dsn (a
// cluster this test starts stands in for it): each run makes its own
// database there and drops it at the end, unless --keep; the server is
// left running either way.
func TestDSNMakesAndDropsItsDatabase(t *testing.T) {
	needBinaries(t)
	ctx := context.Background()
	c, err := StartCluster(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	dsn := c.AdminDSN("postgres")
	spec := Spec{Name: "postgres", Isolation: "repeatable-read", SynchronousCommit: "local"}
	for _, keep := range []bool{false, true} {
		s, err := Start(ctx, spec, Options{DSN: dsn, Keep: keep})
		if err != nil {
			t.Fatal(err)
		}
		name := s.Info().Database
		if s.Info().Cluster != nil || !strings.HasPrefix(name, "idemlab_") {
			t.Errorf("a run on --dsn reports cluster %v and database %q", s.Info().Cluster, name)
		}
		if _, err := s.Fresh(ctx, "cond"); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		st, _, err := store.OpenPostgres(ctx, dsn, 1)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		err = st.DB.QueryRowContext(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n)
		st.Close()
		if err != nil || n != map[bool]int{false: 0, true: 1}[keep] {
			t.Errorf("keep %v: %d databases named %s after the run (%v)", keep, n, name, err)
		}
		if len(ClusterProcesses(c.Dir)) == 0 {
			t.Fatal("the run stopped a server it did not start")
		}
	}
	if _, err := Start(ctx, spec, Options{DSN: "host='unterminated"}); !errors.Is(err, errclass.ErrUsage) {
		t.Errorf("a malformed --dsn gave %v, want a usage error", err)
	}
}

// TestKilledServerLeavesNoSharedMemory: a server SIGKILLed as a crash
// kills it (KillGroup, which Crash and the power cut share) leaves no
// dynamic shared memory segment in /dev/shm, where PostgreSQL would leave
// its control segment to the machine's memory for good; and a crash's
// restart maps segments of its own, which its stop removes.
func TestKilledServerLeavesNoSharedMemory(t *testing.T) {
	needBinaries(t)
	ctx := context.Background()
	c, err := StartCluster(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	before := dsmOf(ClusterProcesses(c.Dir))
	if len(before) == 0 {
		t.Fatalf("the running server maps no %s* segment: nothing to check", dsmPrefix)
	}
	if err := c.Crash(ctx); err != nil {
		t.Fatal(err)
	}
	after := dsmOf(ClusterProcesses(c.Dir))
	for _, p := range before {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the killed server's segment %s survives the crash (%v)", p, err)
		}
	}
	if len(after) == 0 {
		t.Fatalf("the restarted server maps no %s* segment", dsmPrefix)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range after {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the stopped server's segment %s survives (%v)", p, err)
		}
	}
}
