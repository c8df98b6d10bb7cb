package pattern

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"idemlab/worker/store"
)

// TestCancelledCheckIsNotARefusal checks a file on a scratch database
// under a context a signal has cancelled, at each kind of statement
// CheckOn runs first (the schema; the handler's, with no schema; the
// invariants', with neither): the error keeps context.Canceled in its
// chain and names the field, and is no refusal of the user's file (an
// *Error). The same file under a live context is checked as ever: the
// whole file passes, and a handler or an invariant without its tables is
// refused.
func TestCancelledCheckIsNotARefusal(t *testing.T) {
	b, _ := json.Marshal(good(t))
	f, err := Check(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path  string
		file        File
		liveRefused bool
	}{
		{"schema", "schema[0]", f, false},
		{"handler", "handler[", File{Handler: f.Handler, Invariants: f.Invariants}, true},
		{"invariant", "invariants[0].query", File{Invariants: f.Invariants}, true},
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkScratch(t, cancelled, tt.file)
			var refusal *Error
			if !errors.Is(err, context.Canceled) || errors.As(err, &refusal) || !strings.HasPrefix(errString(err), tt.path) {
				t.Errorf("cancelled: err = %v; want one at %s that wraps context.Canceled and is no *Error", err, tt.path)
			}
			err = checkScratch(t, context.Background(), tt.file)
			if got := errors.As(err, &refusal); got != tt.liveRefused || errors.Is(err, context.Canceled) {
				t.Errorf("live: err = %v; want a refusal: %v", err, tt.liveRefused)
			}
		})
	}
}

func checkScratch(tb testing.TB, ctx context.Context, f File) error {
	tb.Helper()
	db, err := sql.Open("sqlite3", "file::memory:?mode=memory")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	return CheckOn(ctx, store.SQLiteDB(db), f)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
