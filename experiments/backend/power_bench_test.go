package backend

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"idemlab/worker/powerfs"
)

// BenchmarkPowerClusterStart is a power cluster from nothing to a server
// accepting connections on its mount: the data folder made with data
// checksums, the mount, pg_ctl start. "initdb" runs initdb -k every time;
// "template" copies the kept template of its output. mount_ms is the
// mount alone, from the serving process's start to its "mounted".
func BenchmarkPowerClusterStart(b *testing.B) {
	needPower(b)
	for _, cold := range []bool{true, false} {
		name := map[bool]string{true: "initdb", false: "template"}[cold]
		b.Run(name, func(b *testing.B) {
			b.Setenv("XDG_CACHE_HOME", b.TempDir())
			tmp := serverTemp(b)
			if cold {
				b.Setenv(NoTemplateEnv, "1")
			} else if p, err := StartPowerCluster(context.Background(), tmp, PowerConfig{}); err != nil {
				b.Fatal(err)
			} else if err := p.Close(); err != nil {
				b.Fatal(err) // this start kept the template
			}
			var mount time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p, err := StartPowerCluster(context.Background(), tmp, PowerConfig{})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				mount += p.MountTook()
				if p.FromTemplate == cold {
					b.Fatalf("a start with templates %v copied one: %v", !cold, p.FromTemplate)
				}
				if err := p.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(mount.Microseconds())/1000/float64(b.N), "mount_ms")
		})
	}
}

// BenchmarkPowerTrial is one PostgreSQL power trial after its workload
// (Setup and 20 ACKed inserts, untimed): the cut (kill, freeze, rebuild),
// the restart with its WAL recovery, and the checks (the rows, amcheck
// over every B-tree index, the checksum failures), under on/on/on with
// drop and with torn. The parts are reported as cut_ms, restart_ms and
// check_ms.
func BenchmarkPowerTrial(b *testing.B) {
	needPower(b)
	for _, model := range []string{powerfs.ModelDrop, powerfs.ModelTorn} {
		b.Run(model, func(b *testing.B) {
			cfg := PowerConfig{Settings: PowerSettings{Fsync: "on", SynchronousCommit: "on", FullPageWrites: "on"},
				Params: powerfs.Params{Model: model, Seed: 1}}
			var cut, restart, check time.Duration
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				p, err := StartPowerCluster(context.Background(), serverTemp(b), cfg)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Setup(context.Background(), powerDDL); err != nil {
					b.Fatal(err)
				}
				db, err := sql.Open("pgx", p.DSN())
				if err != nil {
					b.Fatal(err)
				}
				for r := 1; r <= matrixRows; r++ {
					if _, err := db.Exec("INSERT INTO t VALUES ($1, 'row')", r); err != nil {
						b.Fatal(err)
					}
				}
				db.Close()
				b.StartTimer()
				o, err := p.Cut(context.Background(), powerQuery)
				b.StopTimer()
				if err != nil || !o.Started || len(o.Rows) != matrixRows || o.Corrupt() {
					b.Fatalf("the trial failed: %v, started %v, %d rows, amcheck %q", err, o.Started, len(o.Rows), o.Amcheck)
				}
				cut, restart, check = cut+o.CutTook, restart+o.RestartTook, check+o.CheckTook
				if err := p.Close(); err != nil {
					b.Fatal(err)
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(cut.Microseconds())/1000/n, "cut_ms")
			b.ReportMetric(float64(restart.Microseconds())/1000/n, "restart_ms")
			b.ReportMetric(float64(check.Microseconds())/1000/n, "check_ms")
		})
	}
}
