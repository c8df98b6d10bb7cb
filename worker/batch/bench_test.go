package batch

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"idemlab/worker/wire"
)

// The item counts per benchmark operation. The peer script
// (testdata/peer/bench_peer.py) uses the same counts, so both sides time
// the same work: a pass over fresh items, and a pass over finished ones.
const (
	benchExecutedItems = 100
	benchSkippedItems  = 1000
)

// instantSender accepts at once, like the peer's zero-latency callable.
type instantSender struct{}

func (instantSender) Send(_ context.Context, req wire.SendRequest) (string, error) {
	return "rcpt-" + req.ItemID + "-" + req.Digest[:8], nil
}

func benchJournal(b *testing.B) *Journal {
	b.Helper()
	j, err := OpenJournal(context.Background(), filepath.Join(b.TempDir(), "journal.sqlite3"), true)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	return j
}

// BenchmarkJournalStepExecuted times a journaled step that runs: IN_FLIGHT
// and SUCCEEDED each committed on a real WAL/NORMAL file, with zero
// simulated latency. One operation is a pass over fresh items under a new
// job id; ns/step is the figure compared with the peer.
func BenchmarkJournalStepExecuted(b *testing.B) {
	ctx := context.Background()
	j := benchJournal(b)
	items := Items(benchExecutedItems, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := Run(ctx, Config{Job: "job-" + strconv.Itoa(i), Journal: j, Sender: instantSender{}}, items)
		if err != nil || out.ExecutedSteps != 3*len(items) {
			b.Fatalf("run %d: %+v %v", i, out, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*3*len(items)), "ns/step")
}

// BenchmarkJournalStepSkipped times a step skipped because its row is
// SUCCEEDED: one operation is a pass over finished items.
func BenchmarkJournalStepSkipped(b *testing.B) {
	ctx := context.Background()
	j := benchJournal(b)
	items := Items(benchSkippedItems, 0)
	cfg := Config{Job: "job-1", Journal: j, Sender: instantSender{}}
	if _, err := Run(ctx, cfg, items); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := Run(ctx, cfg, items)
		if err != nil || out.SkippedSteps != 3*len(items) {
			b.Fatalf("pass %d: %+v %v", i, out, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*3*len(items)), "ns/step")
}

// BenchmarkDigest times the canonical JSON and SHA-256 of one item.
func BenchmarkDigest(b *testing.B) {
	it := Item{ID: ItemID(41), Body: ItemBody(41)}
	for i := 0; i < b.N; i++ {
		Digest(it)
	}
}
