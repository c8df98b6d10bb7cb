package batch

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/protocol"
	"idemlab/worker/wire"
)

// TestCanonicalJSON pins the encoding to what Python's
// json.dumps(item, sort_keys=True) produced for the same items, so a
// journal is portable between the two programs.
func TestCanonicalJSON(t *testing.T) {
	cases := []struct {
		item       Item
		json, hash string
	}{
		{Item{"item-001", "payload-1"}, `{"body": "payload-1", "id": "item-001"}`, "5af24245c54c4976991002a904e14a36e3c08a2173178f4287967e7f6d5e2ae2"},
		{Item{"item-041", "payload-41"}, `{"body": "payload-41", "id": "item-041"}`, "4aa24c54e04a16ea843eb48a15e719a3394bf7864bd236ee2557632b0394b14f"},
		{Item{"x\u00e9\u2028\U0001F600\x7f\"\\\n\t\x01", "b"}, `{"body": "b", "id": "x\u00e9\u2028\ud83d\ude00\u007f\"\\\n\t\u0001"}`, "a22e68cfa3875efb64500cfd6278f62a871fbf17245a5d7522c8f8f45d20c8ab"},
	}
	for _, c := range cases {
		if got := string(CanonicalJSON(c.item)); got != c.json {
			t.Errorf("CanonicalJSON(%q) = %s, want %s", c.item.ID, got, c.json)
		}
		if got := Digest(c.item); got != c.hash {
			t.Errorf("Digest(%q) = %s, want %s", c.item.ID, got, c.hash)
		}
	}
}

func TestItems(t *testing.T) {
	items := Items(1000, 7)
	if items[0].ID != "item-001" || items[999].ID != "item-1000" || items[999].Body != "payload-1000" {
		t.Errorf("items: first %+v last %+v", items[0], items[999])
	}
	if items[6].Body != ChangedBody(7) || items[5].Body != ItemBody(6) {
		t.Errorf("changed item: %+v, neighbour %+v", items[6], items[5])
	}
}

func openTestJournal(tb testing.TB) (*Journal, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "journal.sqlite3")
	j, err := OpenJournal(context.Background(), path, true)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { j.Close() })
	return j, path
}

// fakeSender records sends and fails the items it is told to.
type fakeSender struct {
	sent []string
	fail map[string]error
}

func (f *fakeSender) Send(_ context.Context, req wire.SendRequest) (string, error) {
	f.sent = append(f.sent, req.ItemID+"|"+req.IdempotencyKey)
	if err := f.fail[req.ItemID]; err != nil {
		return "", err
	}
	return "rcpt-" + req.ItemID, nil
}

// fakeVerifier holds receipts by the full key.
type fakeVerifier map[wire.Key]string

func (f fakeVerifier) Lookup(_ context.Context, k wire.Key) (string, bool, error) {
	r, ok := f[k]
	return r, ok, nil
}

type rowState struct {
	Status  Status
	Receipt string
}

func rowOf(tb testing.TB, j *Journal, k wire.Key) (rowState, bool) {
	tb.Helper()
	r, ok, err := j.Get(context.Background(), k)
	if err != nil {
		tb.Fatal(err)
	}
	return rowState{r.Status, r.Receipt}, ok
}

// TestResumeRules seeds one item's journal with a row for the step under
// test (earlier steps SUCCEEDED) and runs the batch once.
func TestResumeRules(t *testing.T) {
	const job = "job-1"
	item := Item{ID: "item-001", Body: "payload-1"}
	digest := Digest(item)
	other := Digest(Item{ID: "item-001", Body: "payload-1-old"})
	k := func(step string) wire.Key { return wire.Key{Job: job, Item: item.ID, Step: step} }
	type want struct {
		executed, skipped int
		held              []string
		sent              int
		final             rowState
		finalMissing      bool
	}
	type resumeCase struct {
		name     string
		step     string
		status   Status // "" means no row
		digest   string
		verifier fakeVerifier
		want     want
	}
	var cases []resumeCase
	for _, step := range Steps {
		before := 0
		for i, s := range Steps {
			if s == step {
				before = i
			}
		}
		after := len(Steps) - before - 1
		sentAfter := 0
		if !IsSideEffect(step) {
			sentAfter = 1
		}
		// No row: the step runs like every later one.
		cases = append(cases, resumeCase{step + "/no-row", step, "", digest, nil, want{executed: 1 + after, skipped: before, held: nil, sent: 1, final: rowState{Succeeded, receiptIf(step)}}})
		for _, st := range []Status{InFlight, Failed, Succeeded} {
			name := step + "/" + string(st)
			// A different digest holds the item, whatever the status.
			cases = append(cases, resumeCase{name + "/digest-changed", step, st, other, nil, want{skipped: before, held: []string{item.ID + ":" + step + ":input_changed"}, final: rowState{Status: st}}})
			var w want
			var v fakeVerifier
			switch {
			case st == Succeeded:
				w = want{executed: after, skipped: before + 1, sent: sentAfter, final: rowState{Status: Succeeded}}
			case !IsSideEffect(step):
				w = want{executed: 1 + after, skipped: before, sent: 1, final: rowState{Succeeded, ""}}
			default:
				w = want{skipped: before, held: []string{item.ID + ":" + step + ":unknown"}, final: rowState{Status: st}}
			}
			cases = append(cases, resumeCase{name, step, st, digest, v, w})
			if IsSideEffect(step) && st != Succeeded {
				// Verify finds the receipt under the exact key.
				cases = append(cases, resumeCase{name + "/verified", step, st, digest, fakeVerifier{k(step): "rcpt-found"}, want{skipped: before + 1, final: rowState{Succeeded, "rcpt-found"}}})
				// Receipts for another job or another step do not match.
				cases = append(cases, resumeCase{name + "/receipt-of-other-key", step, st, digest, fakeVerifier{
					{Job: "job-2", Item: item.ID, Step: step}:      "rcpt-other-job",
					{Job: job, Item: item.ID, Step: StepTransform}: "rcpt-other-step",
					{Job: job, Item: "item-002", Step: StepNotify}: "rcpt-other-item",
				}, want{skipped: before, held: []string{item.ID + ":" + step + ":unknown"}, final: rowState{Status: st}}})
			}
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			j, _ := openTestJournal(t)
			for _, s := range Steps {
				if s == c.step {
					break
				}
				if err := j.Mark(ctx, k(s), Succeeded, digest, "", ""); err != nil {
					t.Fatal(err)
				}
			}
			if c.status != "" {
				if err := j.Mark(ctx, k(c.step), c.status, c.digest, "", ""); err != nil {
					t.Fatal(err)
				}
			}
			snd := &fakeSender{}
			cfg := Config{Job: job, Journal: j, Sender: snd}
			if c.verifier != nil {
				cfg.Verifier = c.verifier
			}
			out, err := Run(ctx, cfg, []Item{item})
			if err != nil {
				t.Fatal(err)
			}
			got := want{executed: out.ExecutedSteps, skipped: out.SkippedSteps, held: out.Held, sent: len(snd.sent)}
			got.final, _ = rowOf(t, j, k(c.step))
			if d := cmp.Diff(c.want, got, cmp.AllowUnexported(want{}, rowState{}), cmpEmpty); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			wantStatus := StatusCompleted
			if len(c.want.held) > 0 {
				wantStatus = StatusNeedsReview
			}
			if out.Status != wantStatus {
				t.Errorf("status %s, want %s", out.Status, wantStatus)
			}
		})
	}
}

var cmpEmpty = cmp.FilterValues(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

func receiptIf(step string) string {
	if IsSideEffect(step) {
		return "rcpt-item-001"
	}
	return ""
}

// TestHeldItemDoesNotStopOthers: an item held unknown stops its own steps
// only; the next items run.
func TestHeldItemDoesNotStopOthers(t *testing.T) {
	ctx := context.Background()
	j, _ := openTestJournal(t)
	items := Items(3, 0)
	k := wire.Key{Job: "job-1", Item: items[1].ID, Step: StepNotify}
	if err := j.Mark(ctx, k, Failed, Digest(items[1]), "", "NoReply"); err != nil {
		t.Fatal(err)
	}
	snd := &fakeSender{}
	out, err := Run(ctx, Config{Job: "job-1", Journal: j, Sender: snd}, items)
	if err != nil {
		t.Fatal(err)
	}
	if out.ExecutedSteps != 8 || out.SkippedSteps != 0 || len(out.Held) != 1 || out.Status != StatusNeedsReview {
		t.Errorf("outcome %+v", out)
	}
	if d := cmp.Diff([]string{"item-001|", "item-003|"}, snd.sent); d != "" {
		t.Errorf("sent (-want +got):\n%s", d)
	}
}

type secretError struct{}

func (secretError) Error() string { return "POST https://token:s3cr3t@example.invalid failed" }

// TestStepErrorRecordsTypeOnly: the FAILED row keeps the error's type and
// never its message, and the run stops there.
func TestStepErrorRecordsTypeOnly(t *testing.T) {
	ctx := context.Background()
	j, path := openTestJournal(t)
	items := Items(3, 0)
	snd := &fakeSender{fail: map[string]error{items[1].ID: secretError{}}}
	out, err := Run(ctx, Config{Job: "job-1", Journal: j, Sender: snd, IdempotencyKey: true}, items)
	var se *StepError
	if !errors.As(err, &se) || se.Type != "batch.secretError" {
		t.Fatalf("error %v (%T), want a StepError of type batch.secretError", err, err)
	}
	if out.Status != StatusFailed || out.Failed != "item-002:notify_external" || out.ExecutedSteps != 6 {
		t.Errorf("outcome %+v", out)
	}
	if d := cmp.Diff([]string{"item-001|job-1:item-001:notify_external", "item-002|job-1:item-002:notify_external"}, snd.sent); d != "" {
		t.Errorf("sent (-want +got):\n%s", d)
	}
	r, _, _ := j.Get(ctx, wire.Key{Job: "job-1", Item: "item-002", Step: StepNotify})
	if r.Status != Failed || r.ErrorType != "batch.secretError" {
		t.Errorf("row %+v", r)
	}
	j.Close()
	for _, f := range []string{path, path + "-wal"} {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), "s3cr3t") {
			t.Errorf("%s holds the error message", filepath.Base(f))
		}
	}
}

func TestErrorTypeNames(t *testing.T) {
	cases := map[string]error{
		"ReceiverUnavailable": &wire.UnavailableError{Status: 503},
		"NoReply":             fmt.Errorf("wrapped: %w", &wire.NoReplyError{Err: errors.New("EOF")}),
		"errors.errorString":  errors.New("plain"),
	}
	for want, err := range cases {
		if got := ErrorType(err); got != want {
			t.Errorf("ErrorType(%v) = %q, want %q", err, got, want)
		}
	}
}

// TestCrashLeavesInFlight crashes after the send was accepted; the row
// must stay IN_FLIGHT, as a dead process leaves it.
func TestCrashLeavesInFlight(t *testing.T) {
	for _, point := range []string{PointBeforeSend, PointAfterSendAccepted} {
		t.Run(point, func(t *testing.T) {
			ctx := context.Background()
			j, _ := openTestJournal(t)
			items := Items(3, 0)
			type crashed struct{}
			call := protocol.NewCall("batch.run", nil, nil, &strings.Builder{}, &strings.Builder{}, ItemPoint(point, "item-002"), func(int) { panic(crashed{}) })
			snd := &fakeSender{}
			func() {
				defer func() {
					if _, ok := recover().(crashed); !ok {
						t.Fatal("did not crash")
					}
				}()
				Run(ctx, Config{Job: "job-1", Journal: j, Sender: snd, Points: call.Points}, items)
			}()
			r, _ := rowOf(t, j, wire.Key{Job: "job-1", Item: "item-002", Step: StepNotify})
			if r.Status != InFlight {
				t.Errorf("row %+v, want IN_FLIGHT", r)
			}
			wantSent := map[string]int{PointBeforeSend: 1, PointAfterSendAccepted: 2}[point]
			if len(snd.sent) != wantSent {
				t.Errorf("sent %v, want %d sends", snd.sent, wantSent)
			}
			if got := call.Points.Passed(); got[len(got)-1] != ItemPoint(point, "item-002") {
				t.Errorf("points %v", got)
			}
		})
	}
}

func TestRerunAllKeepsNoJournal(t *testing.T) {
	snd := &fakeSender{}
	out, err := Run(context.Background(), Config{Job: "job-1", Sender: snd}, Items(4, 0))
	if err != nil || out.ExecutedSteps != 12 || len(snd.sent) != 4 || out.SkippedSteps != 0 {
		t.Errorf("outcome %+v, sent %v, err %v", out, snd.sent, err)
	}
}

func TestResolve(t *testing.T) {
	const job = "job-1"
	k := wire.Key{Job: job, Item: "item-041", Step: StepNotify}
	cases := []struct {
		name      string
		seed      Status
		delivered bool
		receipt   string
		wantErr   error
		want      rowState
		wantGone  bool
	}{
		{"missing row", "", false, "", ErrNoRow, rowState{}, true},
		{"missing row delivered", "", true, "r", ErrNoRow, rowState{}, true},
		{"succeeded row", Succeeded, false, "", ErrAlreadySucceeded, rowState{Succeeded, ""}, false},
		{"delivered without receipt", Failed, true, "", ErrReceiptRequired, rowState{Failed, ""}, false},
		{"delivered", Failed, true, "rcpt-item-041-abc", nil, rowState{Succeeded, "rcpt-item-041-abc"}, false},
		{"delivered from in-flight", InFlight, true, "rcpt-x", nil, rowState{Succeeded, "rcpt-x"}, false},
		{"not delivered", InFlight, false, "", nil, rowState{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			j, _ := openTestJournal(t)
			if c.seed != "" {
				if err := j.Mark(ctx, k, c.seed, "d", "", "NoReply"); err != nil {
					t.Fatal(err)
				}
			}
			err := j.Resolve(ctx, k, c.delivered, c.receipt)
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, c.wantErr)
			}
			got, ok := rowOf(t, j, k)
			if ok == c.wantGone {
				t.Fatalf("row present %v, want gone %v", ok, c.wantGone)
			}
			if ok && got != c.want {
				t.Errorf("row %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestResolveFileRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.sqlite3")
	db, err := sql.Open("sqlite3", plain)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE other (x)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	j, journal := openTestJournal(t)
	j.Close()
	cases := map[string]ResolveArgs{
		"no file":          {DB: filepath.Join(dir, "missing.sqlite3"), Key: wire.Key{Job: "j", Item: "i", Step: "s"}},
		"not a journal":    {DB: plain, Key: wire.Key{Job: "j", Item: "i", Step: "s"}},
		"missing key part": {DB: journal, Key: wire.Key{Job: "j", Item: "", Step: "s"}},
		"missing row":      {DB: journal, Key: wire.Key{Job: "j", Item: "i", Step: "s"}},
		"no receipt":       {DB: journal, Key: wire.Key{Job: "j", Item: "i", Step: "s"}, Delivered: true},
	}
	for name, a := range cases {
		if err := ResolveFile(ctx, a); !errors.Is(err, ErrResolveUsage) {
			t.Errorf("%s: error %v, want ErrResolveUsage", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.sqlite3")); err == nil {
		t.Error("resolve created the missing file")
	}
}

// TestJournalSettings reads the pragmas back from a real file.
func TestJournalSettings(t *testing.T) {
	j, _ := openTestJournal(t)
	if j.Settings.JournalMode != "WAL" || j.Settings.Synchronous != "NORMAL" || j.Settings.LockingMode != "EXCLUSIVE" {
		t.Errorf("settings %+v", j.Settings)
	}
}
