package batch

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/wire"
)

// TestRunArgsRoundTrip checks that the worker reads back every value the
// parent renders, and that Argv keeps the byte layout recorded folders
// hold: flags in a fixed order, -db only in journal mode, optional flags
// only when set.
func TestRunArgsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		args RunArgs
		argv string
	}{
		{"journal with every option", RunArgs{DB: "dir/journal.sqlite3", Mode: ModeJournal, Job: "job-1", Receiver: "http://127.0.0.1:9", Items: 50, ChangeItem: 41, ValidateMS: 1.5, TransformMS: 0.25, Verify: true, IdempotencyKey: true},
			"-mode journal -job job-1 -items 50 -receiver http://127.0.0.1:9 -validate-ms 1.5 -transform-ms 0.25 -db dir/journal.sqlite3 -change-item 41 -verify -idempotency-key"},
		{"rerun-all without latency", RunArgs{Mode: ModeRerunAll, Job: "j", Receiver: "http://127.0.0.1:9", Items: 1},
			"-mode rerun-all -job j -items 1 -receiver http://127.0.0.1:9 -validate-ms 0 -transform-ms 0"},
		{"a latency that needs every digit", RunArgs{DB: "f", Mode: ModeJournal, Job: "j", Receiver: "r", Items: 3, ValidateMS: math.Nextafter(0.3, 1)},
			"-mode journal -job j -items 3 -receiver r -validate-ms 0.30000000000000004 -transform-ms 0 -db f"},
		{"a racer on PostgreSQL", RunArgs{DB: "host=/s dbname=d search_path=s1", Mode: ModeJournal, Job: "j", Receiver: "r", Items: 2, Backend: "postgres", ReadyFD: 3},
			"-mode journal -job j -items 2 -receiver r -validate-ms 0 -transform-ms 0 -db host=/s dbname=d search_path=s1 -backend postgres -ready-fd 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { roundTrip(t, tt.args, tt.args.Argv(), tt.argv, ParseRunArgs) })
	}
}

// roundTrip checks that argv, rendered from args, reads want and parses
// back to args.
func roundTrip[A any](tb testing.TB, args A, argv []string, want string, parse func([]string) (A, error)) {
	tb.Helper()
	if got := strings.Join(argv, " "); got != want {
		tb.Errorf("Argv:\n got %s\nwant %s", got, want)
	}
	back, err := parse(argv)
	if err != nil {
		tb.Fatal(err)
	}
	if d := cmp.Diff(args, back); d != "" {
		tb.Errorf("parsed back (-rendered +parsed):\n%s", d)
	}
}

// TestRunArgsRefused checks that the worker refuses a command line it
// cannot run, naming the flag.
func TestRunArgsRefused(t *testing.T) {
	good := RunArgs{DB: "f", Mode: ModeJournal, Job: "j", Receiver: "r", Items: 3}
	tests := []struct {
		name string
		edit func(argv []string) []string
		want string
	}{
		{"unknown mode", func(a []string) []string { a[1] = "sometimes"; return a }, "-mode"},
		{"journal without file", func(a []string) []string { return a[:len(a)-2] }, "-db"},
		{"no items", func(a []string) []string { a[5] = "0"; return a }, "-items"},
		{"change item out of range", func(a []string) []string { return append(a, "-change-item", "4") }, "-change-item"},
		{"negative latency", func(a []string) []string { a[9] = "-1"; return a }, "-validate-ms"},
		{"stray argument", func(a []string) []string { return append(a, "extra") }, "unexpected"},
		{"unknown backend", func(a []string) []string { return append(a, "-backend", "mysql") }, "-backend"},
		{"ready on a standard descriptor", func(a []string) []string { return append(a, "-ready-fd", "1") }, "-ready-fd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRunArgs(tt.edit(good.Argv()))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one naming %s", err, tt.want)
			}
		})
	}
}

// TestResolveArgsRoundTrip checks the resolve's command line both ways; a
// receipt is rendered only with delivered=true.
func TestResolveArgsRoundTrip(t *testing.T) {
	k := wire.Key{Job: "job-1", Item: "item-041", Step: StepNotify}
	tests := []struct {
		args ResolveArgs
		argv string
	}{
		{ResolveArgs{DB: "j.sqlite3", Key: k, Delivered: true, Receipt: "rcpt-1"},
			"-db j.sqlite3 -job job-1 -item item-041 -step notify_external -delivered=true -receipt rcpt-1"},
		{ResolveArgs{DB: "j.sqlite3", Key: k},
			"-db j.sqlite3 -job job-1 -item item-041 -step notify_external -delivered=false"},
		{ResolveArgs{DB: "dbname=d", Key: k, Backend: "postgres"},
			"-db dbname=d -job job-1 -item item-041 -step notify_external -delivered=false -backend postgres"},
	}
	for _, tt := range tests {
		roundTrip(t, tt.args, tt.args.Argv(), tt.argv, ParseResolveArgs)
	}
	if _, err := ParseResolveArgs(append(tests[0].args.Argv(), "extra")); err == nil {
		t.Error("a stray argument was accepted")
	}
}

// TestLookupResolve checks that an answer from the receiver becomes the
// resolve it calls for.
func TestLookupResolve(t *testing.T) {
	k := wire.Key{Job: "job-1", Item: "item-002", Step: StepNotify}
	got := []ResolveArgs{
		Lookup{Key: k.String(), Found: true, Receipt: "rcpt"}.Resolve("f", k),
		Lookup{Key: k.String()}.Resolve("f", k),
	}
	want := []ResolveArgs{{DB: "f", Key: k, Delivered: true, Receipt: "rcpt"}, {DB: "f", Key: k}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
