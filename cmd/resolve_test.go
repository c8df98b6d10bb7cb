package cmd

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	wb "idemlab/worker/batch"
	"idemlab/worker/wire"
)

// TestResolveCommand runs resolve through Execute on a real journal: the
// article's refusals exit 2 with a message naming the refusal, and an
// accepted resolve changes the row.
func TestResolveCommand(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "journal.sqlite3")
	j, err := wb.OpenJournal(ctx, db, true)
	if err != nil {
		t.Fatal(err)
	}
	held := wire.Key{Job: "job-1", Item: "item-041", Step: wb.StepNotify}
	done := wire.Key{Job: "job-1", Item: "item-040", Step: wb.StepNotify}
	if err := j.Mark(ctx, held, wb.Failed, "d", "", "NoReply"); err != nil {
		t.Fatal(err)
	}
	if err := j.Mark(ctx, done, wb.Succeeded, "d", "rcpt-40", ""); err != nil {
		t.Fatal(err)
	}
	j.Close()
	base := []string{"resolve", "--db", db, "--job", "job-1", "--step", wb.StepNotify}
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"delivered without receipt", []string{"--item", "item-041", "--delivered=true"}, 2, "receipt"},
		{"delivered flag missing", []string{"--item", "item-041"}, 2, "--delivered"},
		{"delivered not a boolean", []string{"--item", "item-041", "--delivered", "maybe"}, 2, "as --delivered=true or --delivered false"},
		{"delivered as a separate word", []string{"--item", "item-040", "--delivered", "false"}, 2, "already SUCCEEDED"},
		{"missing row", []string{"--item", "item-099", "--delivered=false"}, 2, "no journal row"},
		{"already succeeded", []string{"--item", "item-040", "--delivered=false"}, 2, "already SUCCEEDED"},
		{"no such file", []string{"--item", "item-041", "--delivered=false", "--db", db + ".missing"}, 2, "no such journal file"},
		{"delivered", []string{"--item", "item-041", "--delivered=true", "--receipt", "rcpt-item-041-4aa24c54"}, 0, "SUCCEEDED"},
		{"then refused", []string{"--item", "item-041", "--delivered=false"}, 2, "already SUCCEEDED"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := Execute(ctx, append(append([]string{}, base...), c.args...), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, sourcePatterns)
		if code != c.code || !strings.Contains(out.String()+errb.String(), c.msg) {
			t.Errorf("%s: exit %d (want %d), output %q %q, want %q in it", c.name, code, c.code, out.String(), errb.String(), c.msg)
		}
	}
	j, err = wb.OpenJournal(ctx, db, false)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	r, ok, err := j.Get(ctx, held)
	if err != nil || !ok || r.Status != wb.Succeeded || r.Receipt != "rcpt-item-041-4aa24c54" {
		t.Errorf("row after resolve: %+v %v %v", r, ok, err)
	}
}
