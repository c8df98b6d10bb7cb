package pattern

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/store"
)

// good is a small valid pattern that tests edit into each refusal.
func good(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	b, err := os.ReadFile("../../testdata/patterns/jobs-then-processed.json")
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatal(err)
	}
	return m
}

func step(m map[string]any, i int) map[string]any {
	return m["handler"].([]any)[i].(map[string]any)
}

func TestCheckAcceptsTheShippedPattern(t *testing.T) {
	b, _ := json.Marshal(good(t))
	f, err := Check(context.Background(), b)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	before, after := f.Handler[3].Points(3)
	if before != "before-4-commit" || after != "after-4-commit" {
		t.Errorf("points of step 4: %s, %s", before, after)
	}
}

// callerFaults stand for the words a caller passes to CheckFaults: the
// fault engine's registry (engine.FaultWords), above this package.
var callerFaults = []string{FaultPoints, FaultRandom, FaultConcurrent, FaultPower}

// TestCheckRefuses: one edit per refusal, each named by its JSON path.
func TestCheckRefuses(t *testing.T) {
	tests := []struct {
		name, path, text string
		edit             func(m map[string]any)
	}{
		{"unknown step kind", "handler[1].upsert", "unknown key", func(m map[string]any) { step(m, 1)["upsert"] = "x" }},
		{"unknown top-level key", "handlers", "unknown key", func(m map[string]any) { m["handlers"] = []any{} }},
		{"unknown send key", "handler[4].send.url", "unknown key", func(m map[string]any) { step(m, 4)["send"].(map[string]any)["url"] = "x" }},
		{"two kinds in a step", "handler[2]", "2 step kinds", func(m map[string]any) { step(m, 2)["commit"] = true }},
		{"no kind in a step", "handler[2]", "0 step kinds", func(m map[string]any) { delete(step(m, 2), "exec") }},
		{"parameter that does not exist", "handler[2].exec", "parameter :job does not exist", func(m map[string]any) {
			step(m, 2)["exec"] = "INSERT INTO follow_up_jobs (event_id, job_key) VALUES (:event_id, :job)"
		}},
		{"SQL that does not prepare", "handler[2].exec", "does not prepare against the schema", func(m map[string]any) {
			step(m, 2)["exec"] = "INSERT INTO follow_up_job (event_id, job_key) VALUES (:event_id, 'k')"
		}},
		{"commit without begin", "handler[3].commit", "no transaction is open", func(m map[string]any) { delete(step(m, 1), "begin"); step(m, 1)["exec"] = "SELECT 1" }},
		{"stop_if outside a query", "handler[2].stop_if", "only a query", func(m map[string]any) { step(m, 2)["stop_if"] = "rows" }},
		{"stop_if of no meaning", "handler[0].stop_if", "want \"rows\" or \"no_rows\"", func(m map[string]any) { step(m, 0)["stop_if"] = "some" }},
		{"unfinished transaction", "handler", "ends inside a transaction", func(m map[string]any) { step(m, 3)["commit"] = false; step(m, 3)["exec"] = "SELECT 1" }},
		{"begin of no kind", "handler[1].begin", "want \"deferred\" or \"immediate\"", func(m map[string]any) { step(m, 1)["begin"] = "exclusive" }},
		{"schema that does not run", "schema[1]", "does not run", func(m map[string]any) { m["schema"].([]any)[1] = "CREATE TABLE" }},
		{"no invariants", "invariants", "cannot fail", func(m map[string]any) { m["invariants"] = []any{} }},
		{"invariant with two bounds", "invariants[0]", "exactly one of equals and at_most", func(m map[string]any) {
			m["invariants"].([]any)[0].(map[string]any)["at_most"] = 1
		}},
		{"sends of a step never sent", "invariants[2].sends.step", "not a step any send", func(m map[string]any) {
			m["invariants"].([]any)[2].(map[string]any)["sends"].(map[string]any)["step"] = "email"
		}},
		{"invariant parameter", "invariants[0].query", "parameter :delivery does not exist", func(m map[string]any) {
			m["invariants"].([]any)[0].(map[string]any)["query"] = "SELECT :delivery"
		}},
		{"unknown fault class", "known_unsafe[0]", "want a fault class", func(m map[string]any) { m["known_unsafe"] = []any{"crash"} }},
		{"bad power setting", "power[0]", "JOURNAL_MODE/SYNCHRONOUS", func(m map[string]any) { m["power"] = []any{"WAL"} }},
		{"wrong type", "max_deliveries", "want int", func(m map[string]any) { m["max_deliveries"] = "3" }},
		{"both handler and command", "command", "not both", func(m map[string]any) { m["command"] = []any{"python3", "h.py"} }},
		{"timeout without a command", "handler_timeout_ms", "command only", func(m map[string]any) { m["handler_timeout_ms"] = 5 }},
		{"two invariants of one name", "invariants[1].name", "earlier invariant", func(m map[string]any) { m["invariants"].([]any)[1].(map[string]any)["name"] = "one job" }},
		{"unknown backend in known_unsafe", "known_unsafe[0]", "backend \"mysql\"", func(m map[string]any) { m["known_unsafe"] = []any{"points@mysql"} }},
		{"isolation on sqlite", "known_unsafe[0]", "qualifies postgres only", func(m map[string]any) { m["known_unsafe"] = []any{"concurrent@sqlite/serializable"} }},
		{"unknown isolation", "known_unsafe[0]", "qualifies postgres only", func(m map[string]any) { m["known_unsafe"] = []any{"concurrent@postgres/snapshot"} }},
		{"power on postgres", "known_unsafe[0]", "runs on sqlite only", func(m map[string]any) { m["known_unsafe"] = []any{"power@postgres"} }},
		{"a setting narrows power only", "known_unsafe[0]", "only power is narrowed", func(m map[string]any) { m["known_unsafe"] = []any{"points:WAL/FULL"} }},
		{"unknown backend", "backends[0]", "want each of", func(m map[string]any) { m["backends"] = []any{"oracle"} }},
		{"a backend twice", "backends[1]", "at most once", func(m map[string]any) { m["backends"] = []any{"sqlite", "sqlite"} }},
		{"two ack steps", "handler[2].ack", "handler[0] acks already", func(m map[string]any) {
			m["handler"] = append([]any{map[string]any{"ack": true}}, m["handler"].([]any)...)
			m["handler"].([]any)[2] = map[string]any{"ack": true}
		}},
		{"ack beside another kind", "handler[2]", "2 step kinds", func(m map[string]any) { step(m, 2)["ack"] = true }},
		{"schema_postgres on a sqlite-only file", "schema_postgres", "leaves out postgres", func(m map[string]any) { m["backends"] = []any{"sqlite"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := good(t)
			tt.edit(m)
			b, _ := json.Marshal(m)
			f, err := Check(context.Background(), b)
			if err == nil {
				err = f.CheckFaults(callerFaults)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Check accepted the file or gave no path: %v", err)
			}
			if pe.Path != tt.path || !strings.Contains(pe.Message, tt.text) {
				t.Errorf("refusal %q, want path %q and text %q", err, tt.path, tt.text)
			}
		})
	}
}

func TestParamNames(t *testing.T) {
	got := ParamNames(`SELECT :a, ':b', ":c", :a || :d_1`)
	if strings.Join(got, ",") != "a,d_1" {
		t.Errorf("ParamNames = %v, want [a d_1]", got)
	}
}

// TestScansMatchTheRegexps checks the hand-written scans against the
// regexps they stand for, as the oracle: ParamNames against
// :([A-Za-z_][A-Za-z0-9_]*) over each unquoted piece, isName against
// ^[a-z][a-z0-9_]*$, on fixed cases and on seeded random texts drawn from
// the characters that decide a match.
func TestScansMatchTheRegexps(t *testing.T) {
	paramRE := regexp.MustCompile(`:([A-Za-z_][A-Za-z0-9_]*)`)
	nameRE := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	wantParams := func(sqlText string) []string {
		var out []string
		for _, part := range unquoted(sqlText) {
			for _, m := range paramRE.FindAllStringSubmatch(part, -1) {
				if !slices.Contains(out, m[1]) {
					out = append(out, m[1])
				}
			}
		}
		return out
	}
	texts := []string{"", ":", "::a", ":1a", "a:b:c", ":a_1:b", ":_x9 :Z", "é:a", ":aé", "':a' :b", "x :a\n:a", "as", "a1_", "_a", "A", "a-b"}
	rng := rand.New(rand.NewPCG(31, 31))
	const alphabet = ":aZz_09 '\"é-"
	chars := []rune(alphabet)
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteRune(chars[rng.IntN(len(chars))])
		}
		texts = append(texts, b.String())
	}
	for _, text := range texts {
		if diff := cmp.Diff(wantParams(text), ParamNames(text)); diff != "" {
			t.Fatalf("ParamNames(%q) (-regexp +scan):\n%s", text, diff)
		}
		if got, want := isName(text), nameRE.MatchString(text); got != want {
			t.Fatalf("isName(%q) = %v, the regexp says %v", text, got, want)
		}
	}
}

func TestJudge(t *testing.T) {
	one, two := int64(1), int64(2)
	tests := []struct {
		iv   Invariant
		got  int64
		held bool
		text string
	}{
		{Invariant{Name: "one job", Query: "q", Equals: &one}, 1, true, "one job: want 1, got 1"},
		{Invariant{Name: "one job", Query: "q", Equals: &one}, 2, false, "one job: want 1, got 2"},
		{Invariant{Name: "few", Query: "q", AtMost: &two}, 2, true, "few: want at most 2, got 2"},
		{Invariant{Name: "few", Query: "q", AtMost: &two}, 3, false, "few: want at most 2, got 3"},
		{Invariant{Name: "sent", Sends: &SendsCheck{Step: "s", Equals: &one}}, 0, false, "sent: want 1, got 0"},
	}
	for _, tt := range tests {
		v := tt.iv.Judge(tt.got)
		if v.Held != tt.held || v.String() != tt.text {
			t.Errorf("Judge(%d) = %v %q, want %v %q", tt.got, v.Held, v, tt.held, tt.text)
		}
	}
}

// TestUnsafeCovers: an entry covers a condition by class, power setting,
// backend and isolation level; an unqualified entry covers every backend.
func TestUnsafeCovers(t *testing.T) {
	sqlite := Target{Backend: "sqlite"}
	rc := Target{Backend: "postgres", Isolation: store.ReadCommitted}
	ser := Target{Backend: "postgres", Isolation: store.Serializable}
	for _, tt := range []struct {
		entry, fault, power string
		on                  Target
		want                bool
	}{
		{"concurrent", "concurrent", "", sqlite, true},
		{"concurrent", "concurrent", "", ser, true},
		{"concurrent", "points", "", ser, false},
		{"concurrent@postgres", "concurrent", "", rc, true},
		{"concurrent@postgres", "concurrent", "", sqlite, false},
		{"concurrent@postgres/serializable", "concurrent", "", ser, true},
		{"concurrent@postgres/serializable", "concurrent", "", rc, false},
		{"concurrent@sqlite", "concurrent", "", Target{}, true},
		{"power:WAL/FULL", "power", "WAL/FULL", sqlite, true},
		{"power:wal/full@sqlite", "power", "WAL/FULL", sqlite, true},
		{"power:WAL/FULL", "power", "DELETE/FULL", sqlite, false},
	} {
		u, err := ParseUnsafe(tt.entry)
		if err != nil {
			t.Fatalf("ParseUnsafe(%q): %v", tt.entry, err)
		}
		if got := u.Covers(tt.fault, tt.power, tt.on); got != tt.want {
			t.Errorf("%q covers %s %s on %+v: %v, want %v", tt.entry, tt.fault, tt.power, tt.on, got, tt.want)
		}
	}
}

// TestSchemaOn: PostgreSQL gets schema_postgres where the file gives one,
// SQLite always the schema.
func TestSchemaOn(t *testing.T) {
	f := File{Schema: []string{"a"}, SchemaPostgres: []string{"b"}}
	if got := strings.Join(f.SchemaOn("sqlite"), ",") + "|" + strings.Join(f.SchemaOn("postgres"), ","); got != "a|b" {
		t.Errorf("SchemaOn: %s, want a|b", got)
	}
	f.SchemaPostgres = nil
	if got := strings.Join(f.SchemaOn("postgres"), ","); got != "a" {
		t.Errorf("SchemaOn(postgres) without schema_postgres: %s, want a", got)
	}
}
