package pattern

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// TestJudgeValue: only one row of one integer is judged against the bound;
// no row, NULL, several rows or columns, and a value of another type are
// an error naming the invariant and what came back. An integer-valued
// numeric (PostgreSQL's sum()) is an integer.
func TestJudgeValue(t *testing.T) {
	one := int64(1)
	iv := Invariant{Name: "at most one shipment", Query: "q", AtMost: &one}
	for _, tt := range []struct {
		name string
		v    Value
		held bool
		err  string
	}{
		{"an integer within the bound", IntValue(1), true, ""},
		{"an integer past the bound", IntValue(2), false, ""},
		{"zero is an integer", IntValue(0), true, ""},
		{"an int8 from the server", Value{Rows: 1, Columns: 1, Type: "int8", Text: "2"}, false, ""},
		{"a whole numeric", Value{Rows: 1, Columns: 1, Type: "numeric", Text: "1"}, true, ""},
		{"a whole numeric with a scale", Value{Rows: 1, Columns: 1, Type: "numeric", Text: "2.00"}, false, ""},
		{"no row", Value{Columns: 1}, false, "invariant 'at most one shipment' returned no row"},
		{"NULL", Value{Rows: 1, Columns: 1, Type: "null", Null: true}, false, "invariant 'at most one shipment' returned NULL"},
		{"NULL of an integer column", Value{Rows: 1, Columns: 1, Type: "int8", Null: true}, false, "invariant 'at most one shipment' returned NULL"},
		{"two rows", Value{Rows: 2, Columns: 1, Type: "integer", Text: "1"}, false, "invariant 'at most one shipment' returned 2 rows"},
		{"two columns", Value{Rows: 1, Columns: 2, Type: "integer", Text: "1"}, false, "invariant 'at most one shipment' returned 2 columns"},
		{"text", Value{Rows: 1, Columns: 1, Type: "text", Text: "1"}, false, `invariant 'at most one shipment' returned "1", not an integer (type text)`},
		{"a real", Value{Rows: 1, Columns: 1, Type: "real", Text: "1"}, false, "not an integer (type real)"},
		{"a boolean", Value{Rows: 1, Columns: 1, Type: "bool", Text: "true"}, false, "not an integer (type bool)"},
		{"a fractional numeric", Value{Rows: 1, Columns: 1, Type: "numeric", Text: "0.5"}, false, "invariant 'at most one shipment' returned 0.5, not an integer (type numeric)"},
		{"a numeric past int64", Value{Rows: 1, Columns: 1, Type: "numeric", Text: "99999999999999999999"}, false, "not an integer (type numeric)"},
		{"a query that failed as it ran", Value{Error: "integer overflow"}, false, "invariant 'at most one shipment' failed as it ran: integer overflow"},
		{"an integer type whose text is not one", Value{Rows: 1, Columns: 1, Type: "int8", Text: "x"}, false, "not an integer (type int8)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := iv.JudgeValue(tt.v)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("JudgeValue(%+v) = %v, %v; want an error with %q", tt.v, v, err, tt.err)
				}
				return
			}
			if err != nil || v.Held != tt.held {
				t.Fatalf("JudgeValue(%+v) = %v (held %v), %v; want held %v", tt.v, v, v.Held, err, tt.held)
			}
		})
	}
}

// TestValueDecodes: a value reads back as recorded; a bare integer, as a
// folder of format 4 or older recorded it, reads as that integer; an
// unknown field or a non-integer number is refused.
func TestValueDecodes(t *testing.T) {
	for _, tt := range []struct {
		json string
		want Value
		err  bool
	}{
		{`{"rows":0,"columns":1}`, Value{Columns: 1}, false},
		{`{"rows":1,"columns":1,"type":"numeric","null":true}`, Value{Rows: 1, Columns: 1, Type: "numeric", Null: true}, false},
		{`2`, IntValue(2), false},
		{` 0`, IntValue(0), false},
		{`1.5`, Value{}, true},
		{`"2"`, Value{}, true},
		{`{"rows":1,"columns":1,"value":2}`, Value{}, true},
	} {
		var got Value
		err := json.Unmarshal([]byte(tt.json), &got)
		if (err != nil) != tt.err {
			t.Errorf("decode %s: error %v, want an error: %v", tt.json, err, tt.err)
			continue
		}
		if d := cmp.Diff(tt.want, got); !tt.err && d != "" {
			t.Errorf("decode %s (-want +got):\n%s", tt.json, d)
		}
	}
	b, err := json.Marshal(IntValue(3))
	if err != nil || string(b) != `{"rows":1,"columns":1,"type":"integer","text":"3"}` {
		t.Errorf("IntValue(3) encodes as %s, %v", b, err)
	}
}

// TestQueryValuesRecordsWhatCameBack reads invariants from a real SQLite
// file and records what each returned, deciding nothing: rows, columns,
// the value's storage class and its text.
func TestQueryValuesRecordsWhatCameBack(t *testing.T) {
	ctx := context.Background()
	db, _, err := sqlitedb.Open(ctx, Options(filepath.Join(t.TempDir(), "p.sqlite3")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{"CREATE TABLE jobs (event_id TEXT NOT NULL, n INTEGER)", "INSERT INTO jobs VALUES ('ev-1', 1), ('ev-1', 1)"} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	queries := map[string]string{
		"count":     "SELECT count(*) FROM jobs WHERE event_id = :event_id",
		"no row":    "SELECT count(*) FROM jobs WHERE event_id = :event_id GROUP BY event_id HAVING event_id = 'wrong'",
		"null":      "SELECT max(n) FROM jobs WHERE event_id = 'wrong'",
		"two rows":  "SELECT n FROM jobs WHERE event_id = :event_id",
		"two cols":  "SELECT count(*), 1 FROM jobs",
		"text":      "SELECT event_id FROM jobs LIMIT 1",
		"real":      "SELECT total(n) FROM jobs",
		"a boolean": "SELECT count(*) > 0 FROM jobs WHERE event_id = :event_id",
		"overflow":  "SELECT sum(n) FROM (SELECT 9223372036854775807 AS n UNION ALL SELECT 1)",
	}
	var f File
	for _, name := range slices.Sorted(maps.Keys(queries)) {
		f.Invariants = append(f.Invariants, Invariant{Name: name, Query: queries[name]})
	}
	f.Invariants = append(f.Invariants, Invariant{Name: "sent", Sends: &SendsCheck{Step: "s"}})
	got, err := QueryValues(ctx, store.SQLiteDB(db), f, "ev-1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Value{
		"count":     IntValue(2),
		"no row":    {Columns: 1},
		"null":      {Rows: 1, Columns: 1, Type: "null", Null: true},
		"two rows":  {Rows: 2, Columns: 1, Type: "integer", Text: "1"},
		"two cols":  {Rows: 1, Columns: 2, Type: "integer", Text: "2"},
		"text":      {Rows: 1, Columns: 1, Type: "text", Text: "ev-1"},
		"real":      {Rows: 1, Columns: 1, Type: "real", Text: "2"},
		"a boolean": IntValue(1),
		"overflow":  {Error: "integer overflow"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("values (-want +got):\n%s", d)
	}
}
