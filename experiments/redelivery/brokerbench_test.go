package redelivery

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"idemlab/experiments/broker"
	"idemlab/experiments/broker/brokertest"
	"idemlab/experiments/harness"
	"idemlab/worker/natswire"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
)

// BenchmarkBrokerTrial is issue 30's per-trial figure: one trial on a real
// broker, from the harness's publish to its read of the broker's final
// state, each delivery a consumer process (worker redelivery.consume) of
// the separate commits against an events file made beforehand. Each
// iteration starts a JetStream server of its own, outside the timing, and
// closes it after.
//   - acked: one consumer fetches, does the work, acks; the state is read.
//   - redelivered: delivery 1 crashes after the job's commit, before its
//     ack; delivery 2, started once delivery 1 has died, waits for the
//     broker's redelivery after AckWait and acks; the state is read.
//
// median-ms is the trial's median, beyond-wait-ms that less the AckWait
// the trial waits on purpose (the goal: ≤ 200 ms), and ns/op the trials'
// mean. Run it with (-v shows a skip's reason, such as no idemlab-nats)
//
//	go test -run '^$' -bench BrokerTrial -benchtime 20x -v ./experiments/redelivery/
func BenchmarkBrokerTrial(b *testing.B) {
	brokertest.Need(b)
	for _, tt := range []struct {
		name    string
		crashAt string
	}{{"acked", ""}, {"redelivered", wr.PointAfterJobCommit}} {
		b.Run(tt.name, func(b *testing.B) {
			s := broker.DefaultNATS()
			ds := make([]time.Duration, 0, b.N)
			for i := range b.N {
				b.StopTimer()
				d := brokerTrial(b, s, fmt.Sprint("e-", i), tt.crashAt)
				b.StartTimer()
				ds = append(ds, d)
			}
			var sum time.Duration
			for _, d := range ds {
				sum += d
			}
			// ns/op is the trials' mean, not the iterations' (each also
			// starts and closes a broker, outside the timing).
			b.ReportMetric(float64(sum.Nanoseconds())/float64(len(ds)), "ns/op")
			reportMedian(b, ds)
			wait := time.Duration(0)
			if tt.crashAt != "" {
				wait = s.AckWait()
			}
			b.ReportMetric(float64((ds[len(ds)/2]-wait).Microseconds())/1000, "beyond-wait-ms")
		})
	}
}

// brokerTrial runs one trial and gives its time from the publish to the
// final state read; it fails b if the broker's word is not that of an
// event acked after the deliveries the trial planned.
func brokerTrial(b *testing.B, s broker.Settings, event, crashAt string) time.Duration {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	path := filepath.Join(dir, "events.sqlite3")
	db, _, err := sqlitedb.Open(ctx, wr.Options(path))
	if err != nil {
		b.Fatal(err)
	}
	if err := wr.EnsureSchema(ctx, db); err != nil {
		b.Fatal(err)
	}
	db.Close()
	nb, err := broker.Lookup(broker.NATS)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := nb.Start(ctx, s, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	r := &harness.Runner{Executable: exe}
	ev := wr.Event{ID: event, JobKey: "k"}
	data, err := json.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	a := wr.ConsumeArgs{Deliver: wr.Args{DB: path, Pattern: wr.SeparateCommit, Event: ev},
		Sub: natswire.Sub{URL: tr.URL(), Stream: s.Stream, Consumer: s.Consumer, FetchWait: s.FetchWait()}}
	start := time.Now()
	if _, err := tr.Publish(event, data); err != nil {
		b.Fatal(err)
	}
	deliveries := 1
	if crashAt != "" {
		deliveries = 2
	}
	for d := 1; d <= deliveries; d++ {
		spec := harness.Spec{Worker: wr.ConsumerName, Args: a.Argv(), Exits: []int{0}}
		if d == 1 && crashAt != "" {
			spec.CrashAt, spec.Exits = crashAt, nil
		}
		if _, err := r.Run(ctx, spec); err != nil {
			b.Fatalf("delivery %d: %v", d, err)
		}
	}
	st, err := tr.State()
	took := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	if st.Messages != 1 || st.Delivered != uint64(deliveries) || st.AckFloor != 1 || st.NumAckPending != 0 {
		b.Fatalf("the broker's state after %d deliveries is %+v, want the event acked after %d", deliveries, st, deliveries)
	}
	return took
}
