package store

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

// sessionForms is every form one Session gives.
type sessionForms struct {
	DSN, ProgramDSN string
	Set             []string
	Requested       PGRequested
}

func formsOf(s Session) sessionForms {
	return sessionForms{DSN: s.DSN(), ProgramDSN: s.ProgramDSN(), Set: s.Set(false), Requested: s.Requested()}
}

// TestSessionForms derives the Go worker's connection string, the
// program's, the SET statements and the read-back from one value each.
// The connection strings are the bytes the code before Session wrote
// (SessionDSN, then pattern's ProgramDSN over it), which results folders
// record, so they must not change.
func TestSessionForms(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    Session
		want sessionForms
	}{
		{"key=value", Session{Base: "host=/tmp/x user=postgres dbname=idemlab_1 sslmode=disable", Schema: "pattern_7", Isolation: ReadCommitted, SynchronousCommit: "off"}, sessionForms{
			DSN:        "host=/tmp/x user=postgres dbname=idemlab_1 sslmode=disable search_path=pattern_7 default_transaction_isolation='read committed' synchronous_commit=off",
			ProgramDSN: `host=/tmp/x user=postgres dbname=idemlab_1 sslmode=disable options='-c search_path=pattern_7 -c default_transaction_isolation=read\\ committed -c synchronous_commit=off'`,
			Set:        []string{`SET search_path TO "pattern_7"`, `SET default_transaction_isolation TO 'read committed'`, `SET synchronous_commit TO 'off'`},
			Requested:  PGRequested{Isolation: "read committed", SynchronousCommit: "off"},
		}},
		{"base options and a quoted host", Session{Base: "host='/tmp/a b' user=postgres dbname=d options='-c work_mem=8MB'", Schema: "pattern_1", Isolation: Serializable, SynchronousCommit: "on"}, sessionForms{
			DSN:        "host='/tmp/a b' user=postgres dbname=d options='-c work_mem=8MB' search_path=pattern_1 default_transaction_isolation=serializable synchronous_commit=on",
			ProgramDSN: "host='/tmp/a b' user=postgres dbname=d options='-c work_mem=8MB -c search_path=pattern_1 -c default_transaction_isolation=serializable -c synchronous_commit=on'",
			Set:        []string{`SET search_path TO "pattern_1"`, `SET default_transaction_isolation TO 'serializable'`, `SET synchronous_commit TO 'on'`},
			Requested:  PGRequested{Isolation: "serializable", SynchronousCommit: "on"},
		}},
		{"quotes, backslashes and spaces", Session{Base: `host=/tmp/x password='it\'s x' user=o\\k dbname=d`, Schema: "s", Isolation: RepeatableRead, SynchronousCommit: "local"}, sessionForms{
			DSN:        `host=/tmp/x password='it\'s x' user=o\\k dbname=d search_path=s default_transaction_isolation='repeatable read' synchronous_commit=local`,
			ProgramDSN: `host=/tmp/x password='it\'s x' user='o\\k' dbname=d options='-c search_path=s -c default_transaction_isolation=repeatable\\ read -c synchronous_commit=local'`,
			Set:        []string{`SET search_path TO "s"`, `SET default_transaction_isolation TO 'repeatable read'`, `SET synchronous_commit TO 'local'`},
			Requested:  PGRequested{Isolation: "repeatable read", SynchronousCommit: "local"},
		}},
		{"a schema with a quote, a backslash and a space", Session{Base: "host=/tmp/x dbname=d", Schema: `we ird\'"`, Isolation: Serializable, SynchronousCommit: "off"}, sessionForms{
			DSN:        `host=/tmp/x dbname=d search_path='we ird\\\'"' default_transaction_isolation=serializable synchronous_commit=off`,
			ProgramDSN: `host=/tmp/x dbname=d options='-c search_path=we\\ ird\\\\\'" -c default_transaction_isolation=serializable -c synchronous_commit=off'`,
			Set:        []string{`SET search_path TO "we ird\'"""`, `SET default_transaction_isolation TO 'serializable'`, `SET synchronous_commit TO 'off'`},
			Requested:  PGRequested{Isolation: "serializable", SynchronousCommit: "off"},
		}},
		{"URL", Session{Base: "postgres://postgres@localhost:5433/idemlab_1?sslmode=disable", Schema: "pattern_7", Isolation: ReadCommitted, SynchronousCommit: "off"}, sessionForms{
			DSN:        "postgres://postgres@localhost:5433/idemlab_1?default_transaction_isolation=read+committed&search_path=pattern_7&sslmode=disable&synchronous_commit=off",
			ProgramDSN: "postgres://postgres@localhost:5433/idemlab_1?options=-c%20search_path%3Dpattern_7%20-c%20default_transaction_isolation%3Dread%5C%20committed%20-c%20synchronous_commit%3Doff&sslmode=disable",
			Set:        []string{`SET search_path TO "pattern_7"`, `SET default_transaction_isolation TO 'read committed'`, `SET synchronous_commit TO 'off'`},
			Requested:  PGRequested{Isolation: "read committed", SynchronousCommit: "off"},
		}},
		{"URL with options", Session{Base: "postgresql://u:p%20w@h/db?options=-c%20work_mem%3D8MB&application_name=a+b", Schema: "pattern_9", Isolation: RepeatableRead, SynchronousCommit: "local"}, sessionForms{
			DSN:        "postgresql://u:p%20w@h/db?application_name=a+b&default_transaction_isolation=repeatable+read&options=-c+work_mem%3D8MB&search_path=pattern_9&synchronous_commit=local",
			ProgramDSN: "postgresql://u:p%20w@h/db?application_name=a%20b&options=-c%20work_mem%3D8MB%20-c%20search_path%3Dpattern_9%20-c%20default_transaction_isolation%3Drepeatable%5C%20read%20-c%20synchronous_commit%3Dlocal",
			Set:        []string{`SET search_path TO "pattern_9"`, `SET default_transaction_isolation TO 'repeatable read'`, `SET synchronous_commit TO 'local'`},
			Requested:  PGRequested{Isolation: "repeatable read", SynchronousCommit: "local"},
		}},
		{"a schema alone", Session{Base: "  host=/tmp/x   dbname=d ", Schema: "pattern_3"}, sessionForms{
			DSN:        "host=/tmp/x   dbname=d search_path=pattern_3",
			ProgramDSN: "host=/tmp/x dbname=d options='-c search_path=pattern_3'",
			Set:        []string{`SET search_path TO "pattern_3"`},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, formsOf(tt.s)); d != "" {
				t.Errorf("forms (-want +got):\n%s", d)
			}
		})
	}
}

// TestSessionStrings: pgx, which stands in for libpq's parser here, reads
// from the Go worker's string and from the program's the same server and
// the session's own values, the program's as -c switches in options.
func TestSessionStrings(t *testing.T) {
	for _, s := range []Session{
		{Base: "host=/tmp/x user=postgres dbname=idemlab_1 sslmode=disable", Schema: "pattern_7", Isolation: ReadCommitted, SynchronousCommit: "off"},
		{Base: `host='/tmp/a b' user='o\'k' dbname=d options='-c work_mem=8MB'`, Schema: "s_1", Isolation: RepeatableRead, SynchronousCommit: "local"},
		{Base: "postgres://postgres@localhost:5433/idemlab_1?sslmode=disable", Schema: "pattern_7", Isolation: Serializable, SynchronousCommit: "on"},
	} {
		t.Run(s.Base, func(t *testing.T) {
			base, err := pgx.ParseConfig(s.Base)
			if err != nil {
				t.Fatal(err)
			}
			worker, err := pgx.ParseConfig(s.DSN())
			if err != nil {
				t.Fatalf("DSN %q does not parse: %v", s.DSN(), err)
			}
			program, err := pgx.ParseConfig(s.ProgramDSN())
			if err != nil {
				t.Fatalf("ProgramDSN %q does not parse: %v", s.ProgramDSN(), err)
			}
			values := map[string]string{"search_path": s.Schema, "default_transaction_isolation": s.Isolation.SQL(), "synchronous_commit": s.SynchronousCommit}
			var opts []string
			for _, k := range []string{"search_path", "default_transaction_isolation", "synchronous_commit"} {
				opts = append(opts, "-c "+k+"="+strings.ReplaceAll(values[k], " ", `\ `))
			}
			if o := base.RuntimeParams["options"]; o != "" {
				opts = append([]string{o}, opts...)
				values["options"] = o
			}
			wantProgram := map[string]string{"options": strings.Join(opts, " ")}
			for k, v := range base.RuntimeParams {
				if k != "options" {
					wantProgram[k], values[k] = v, v
				}
			}
			if d := cmp.Diff(values, worker.RuntimeParams); d != "" {
				t.Errorf("the worker's startup parameters (-want +got):\n%s", d)
			}
			if d := cmp.Diff(wantProgram, program.RuntimeParams); d != "" {
				t.Errorf("the program's startup parameters (-want +got):\n%s", d)
			}
			for _, c := range []*pgx.ConnConfig{worker, program} {
				if c.Host != base.Host || c.Port != base.Port || c.Database != base.Database || c.User != base.User {
					t.Errorf("names %s:%d/%s as %s, want %s:%d/%s as %s", c.Host, c.Port, c.Database, c.User, base.Host, base.Port, base.Database, base.User)
				}
			}
		})
	}
}

// TestParseSession reads a recorded connection string back into the
// values that made it, whichever way it spells the level, so the program
// string derived from it is the one the run gave.
func TestParseSession(t *testing.T) {
	for _, tt := range []struct {
		name, dsn string
		want      Session
	}{
		{"key=value", "host=/tmp/x user=u dbname=d search_path=p_1 default_transaction_isolation='read committed' synchronous_commit=on",
			Session{Base: "host=/tmp/x user=u dbname=d", Schema: "p_1", Isolation: ReadCommitted, SynchronousCommit: "on"}},
		{"the level by its name", "host=/tmp/x search_path=p_1 default_transaction_isolation=repeatable-read",
			Session{Base: "host=/tmp/x", Schema: "p_1", Isolation: RepeatableRead}},
		{"quoted values", `host='/tmp/a b' password='it\'s' search_path='we ird\\' default_transaction_isolation=serializable synchronous_commit=off`,
			Session{Base: `host='/tmp/a b' password='it\'s'`, Schema: `we ird\`, Isolation: Serializable, SynchronousCommit: "off"}},
		{"URL", "postgres://u@h/d?default_transaction_isolation=read+committed&search_path=p_2&sslmode=disable&synchronous_commit=local",
			Session{Base: "postgres://u@h/d?sslmode=disable", Schema: "p_2", Isolation: ReadCommitted, SynchronousCommit: "local"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSession(tt.dsn)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.want.ProgramDSN(), got.ProgramDSN()); d != "" {
				t.Errorf("ProgramDSN (-want +got):\n%s", d)
			}
		})
	}
	if _, err := ParseSession("host=h default_transaction_isolation='read uncommitted'"); err == nil {
		t.Error("a level idemlab never asks for read back without an error")
	}
}

// TestQuote quotes each rule's hard cases; a key=value value reads back
// as it was.
func TestQuote(t *testing.T) {
	for _, tt := range []struct{ in, conn, literal, ident string }{
		{"plain", "plain", "'plain'", `"plain"`},
		{"", "''", "''", `""`},
		{"a b", "'a b'", "'a b'", `"a b"`},
		{"it's", `'it\'s'`, "'it''s'", `"it's"`},
		{`back\slash`, `'back\\slash'`, `'back\slash'`, `"back\slash"`},
		{`say "hi"`, `'say "hi"'`, `'say "hi"'`, `"say ""hi"""`},
	} {
		got := [3]string{QuoteConnValue(tt.in), QuoteLiteral(tt.in), QuoteIdent(tt.in)}
		if d := cmp.Diff([3]string{tt.conn, tt.literal, tt.ident}, got); d != "" {
			t.Errorf("%q: conn, literal, ident (-want +got):\n%s", tt.in, d)
		}
		if kv := connValues("k=" + QuoteConnValue(tt.in)); !cmp.Equal(kv, [][2]string{{"k", tt.in}}) {
			t.Errorf("%q reads back as %q", tt.in, kv)
		}
	}
}

// TestIsolation: each level's name parses back to it, its SQL text is
// PostgreSQL's, and a recorded level reads back in either spelling; a
// flag takes the name alone.
func TestIsolation(t *testing.T) {
	type row struct {
		Name, SQL       string
		Parsed          Isolation
		RecordedName    Isolation
		RecordedSQL     Isolation
		SQLIsNotAName   bool
		RequestMatching bool
	}
	want := []row{
		{"read-committed", "read committed", ReadCommitted, ReadCommitted, ReadCommitted, true, true},
		{"repeatable-read", "repeatable read", RepeatableRead, RepeatableRead, RepeatableRead, true, true},
		{"serializable", "serializable", Serializable, Serializable, Serializable, false, true},
	}
	var got []row
	for _, l := range Isolations {
		p, err := ParseIsolation(l.String())
		if err != nil {
			t.Error(err)
		}
		rn, _ := RecordedIsolation(l.String())
		rs, _ := RecordedIsolation(l.SQL())
		_, err = ParseIsolation(l.SQL())
		byName := PGRequested{Isolation: l.String(), SynchronousCommit: "on"}
		got = append(got, row{l.String(), l.SQL(), p, rn, rs, err != nil, byName.Matches(Session{Isolation: l, SynchronousCommit: "on"}.Requested())})
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if _, err := ParseIsolation("read uncommitted"); err == nil || !strings.Contains(err.Error(), "read-committed, repeatable-read, serializable") {
		t.Errorf("an unknown level: %v", err)
	}
	if l, ok := RecordedIsolation(""); l != 0 || !ok {
		t.Errorf(`RecordedIsolation("") = %v %v, want no level`, l, ok)
	}
	if (PGRequested{Isolation: "serializable", SynchronousCommit: "on"}).Matches(PGRequested{Isolation: "serializable", SynchronousCommit: "off"}) {
		t.Error("a different synchronous_commit matches")
	}
}
