package backend

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"idemlab/worker/store"
)

// BenchmarkLockOutlivesClient measures how long a claim's row lock
// outlives the client that took it. A psql client claims a row inside a
// transaction, then runs a 5 s pg_sleep before it would commit, and is
// SIGKILLed 300 ms into the sleep. The next claimer, on its own session,
// waits for the lock: without client_connection_check_interval the dead
// client's backend sleeps on and only notices at its next write; with it,
// the backend checks its socket during the sleep and rolls back. held_ms
// is from the kill to the next claim's return. On SQLite the kernel drops
// a dead process's file locks at its exit.
//
// The client sends each statement on its own, as a driver does. Sent as
// one query string ("BEGIN; …; COMMIT"), the server has the COMMIT
// already and runs it after the sleep, client or no client: committed
// is the share of kills after which the dead client's claim stood.
func BenchmarkLockOutlivesClient(b *testing.B) {
	if _, err := FindBinaries(); err != nil {
		b.Skipf("PostgreSQL benchmark skipped: %v", err)
	}
	ctx := context.Background()
	srv, err := Start(ctx, Spec{Name: store.BackendPostgres, Isolation: DefaultIsolation, SynchronousCommit: DefaultSynchronousCommit}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	for _, oneString := range []bool{false, true} {
		for _, check := range []string{"0", "200ms"} {
			name := fmt.Sprintf("statements=%s/client_connection_check_interval=%s", map[bool]string{false: "separate", true: "one-string"}[oneString], check)
			b.Run(name, func(b *testing.B) {
				var held time.Duration
				committed := 0
				for i := 0; i < b.N; i++ {
					d, stood, err := lockHeld(ctx, srv, check, oneString)
					if err != nil {
						b.Fatal(err)
					}
					held += d
					if stood {
						committed++
					}
				}
				b.ReportMetric(float64(held.Milliseconds())/float64(b.N), "held_ms")
				b.ReportMetric(float64(committed)/float64(b.N), "committed")
			})
		}
	}
}

// lockHeld runs one kill and returns how long the next claim waited and
// whether the killed client's claim stood.
func lockHeld(ctx context.Context, srv *Server, check string, oneString bool) (time.Duration, bool, error) {
	db, err := srv.Fresh(ctx, "lock")
	if err != nil {
		return 0, false, err
	}
	st, _, err := store.OpenPostgres(ctx, db.Target, 1)
	if err != nil {
		return 0, false, err
	}
	defer st.Close()
	if _, err := st.DB.ExecContext(ctx, "CREATE TABLE claims (fp TEXT PRIMARY KEY, owner TEXT)"); err != nil {
		return 0, false, err
	}
	// libpq takes settings through options, not as keywords as pgx does.
	_, schema, _ := store.SessionKey(db.Target)
	info := srv.Info()
	conninfo := info.Cluster.AdminDSN(info.Database) + fmt.Sprintf(" options='-c search_path=%s -c client_connection_check_interval=%s'", schema, check)
	stmts := []string{"BEGIN", "INSERT INTO claims VALUES ('fp', 'killed') ON CONFLICT DO NOTHING", "SELECT pg_sleep(5)", "COMMIT"}
	if oneString {
		stmts = []string{strings.Join(stmts, "; ")}
	}
	args := []string{"-X", "-q", conninfo}
	for _, q := range stmts {
		args = append(args, "-c", q)
	}
	psql := exec.Command(filepath.Join(info.Cluster.Bin, "psql"), args...)
	if err := psql.Start(); err != nil {
		return 0, false, fmt.Errorf("start psql: %w", err)
	}
	if err := waitForLock(ctx, st.DB); err != nil {
		psql.Process.Kill()
		psql.Wait()
		return 0, false, err
	}
	time.Sleep(300 * time.Millisecond)
	psql.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	psql.Wait()
	var n int64
	res, err := st.DB.ExecContext(ctx, "INSERT INTO claims VALUES ('fp', 'next') ON CONFLICT DO NOTHING")
	if err == nil {
		n, err = res.RowsAffected()
	}
	held := time.Since(killed)
	if err == nil && !oneString && n != 1 {
		err = fmt.Errorf("the next claim changed %d rows; a killed client's claim sent statement by statement never commits", n)
	}
	return held, n == 0, err
}

// waitForLock waits until some session holds a row lock's transaction on
// claims, that is, the client has claimed and is sleeping.
func waitForLock(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(5)%' AND wait_event = 'PgSleep'").Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("the client never reached its sleep")
}

// BenchmarkClusterStart is a run's throwaway cluster from nothing to its
// first query: the data folder made, pg_ctl start, the run's database made
// and its version read. "initdb" makes every data folder with initdb (a
// start from nothing); "template" copies the kept template of initdb's
// output, as a run does once one is kept. Stopping and removing the
// cluster is timed apart (stop_ms).
func BenchmarkClusterStart(b *testing.B) {
	if _, err := FindBinaries(); err != nil {
		b.Skipf("PostgreSQL benchmark skipped: %v", err)
	}
	spec := Spec{Name: store.BackendPostgres, Isolation: DefaultIsolation, SynchronousCommit: DefaultSynchronousCommit}
	for _, cold := range []bool{true, false} {
		name := map[bool]string{true: "initdb", false: "template"}[cold]
		b.Run(name, func(b *testing.B) {
			b.Setenv("XDG_CACHE_HOME", b.TempDir())
			if cold {
				b.Setenv(NoTemplateEnv, "1")
			} else if srv, err := Start(context.Background(), spec, Options{}); err != nil {
				b.Fatal(err)
			} else if err := srv.Close(); err != nil {
				b.Fatal(err) // this start kept the template
			}
			var stop time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				srv, err := Start(context.Background(), spec, Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if srv.Info().Cluster.FromTemplate == cold {
					b.Fatalf("a start with templates %v copied one: %v", !cold, srv.Info().Cluster.FromTemplate)
				}
				began := time.Now()
				if err := srv.Close(); err != nil {
					b.Fatal(err)
				}
				stop += time.Since(began)
				b.StartTimer()
			}
			b.ReportMetric(float64(stop.Milliseconds())/float64(b.N), "stop_ms")
		})
	}
}
