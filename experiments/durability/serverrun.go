package durability

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/errclass"
	"idemlab/experiments/scenario"
	wc "idemlab/worker/claim"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/store"
)

// applyServerSettings sets backend.CrashSettings on the run's cluster
// before the first trial when any condition crashes the server.
func (p *plan) applyServerSettings(ctx context.Context, env scenario.Env) error {
	if len(p.s.ServerSettings) == 0 {
		return nil
	}
	if env.Backend == nil {
		return fmt.Errorf("%w: the settings crash a PostgreSQL server, but the run has none", errclass.ErrHarness)
	}
	return env.Backend.Apply(ctx, p.s.ServerSettings)
}

// serverTrial runs one trial on PostgreSQL, in a schema of its own whose
// sessions carry the condition's synchronous_commit. The parent makes the
// tables and flushes them; for a server crash it also freezes the
// server's writers (backend.Server.PrepareCrash). The first process runs
// to its point or its ACK; the parent reads the rows; for a server crash
// it then crashes the server, lets it recover and reads the settings
// back; it reads the rows again with amcheck's verdict, lets the
// redelivery run, and reads the rows a last time.
func (p *plan) serverTrial(ctx context.Context, env scenario.Env, c Condition, tr TrialRef) ([]string, int, error) {
	if env.Backend == nil {
		return nil, 0, fmt.Errorf("%w: a PostgreSQL condition, but the run has no server", errclass.ErrHarness)
	}
	// The copy hands out the condition's sessions; everything else goes
	// through the run's server, whose connection a crash renews.
	srv := env.Backend
	db, err := srv.WithSpec(p.s.spec(c)).Fresh(ctx, "idemlab-durability")
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	defer db.Drop()
	t := &trial{p: p, env: env, c: c, db: db.Target, ctx: ctx, pg: &db}
	t.o = Observation{Scenario: Name, Condition: c.Name, Point: tr.Point, DB: db.Target, Steps: []Step{}}
	stop, err := t.startReceiver()
	if err != nil {
		return nil, 0, err
	}
	defer stop()
	ddl, err := ServerSchema(c.Pattern)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	if c.Kind == KindServer {
		err = srv.PrepareCrash(ctx, db, ddl)
	} else {
		err = srv.Setup(ctx, db, ddl)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w: prepare: %w", errclass.ErrHarness, err)
	}
	first, err := t.first(tr.Point)
	if err != nil {
		return nil, 0, err
	}
	if t.o.Before, _, err = readServer(ctx, db, c.Pattern, false); err != nil {
		return nil, 0, fmt.Errorf("%w: read the rows the first process left: %w", errclass.ErrHarness, err)
	}
	if c.Kind == KindServer {
		settings, err := srv.CrashAndRecover(ctx, p.s.ServerSettings)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
		t.o.Server = &ServerCrash{Frozen: true, Settings: settings}
	}
	if t.o.After, t.o.Integrity, err = readServer(ctx, db, c.Pattern, true); err != nil {
		return nil, 0, fmt.Errorf("%w: read the rows after the crash: %w", errclass.ErrHarness, err)
	}
	if t.o.Server != nil {
		t.o.Server.Lost = LostRows(t.o.Before, t.o.After)
	}
	if err := t.rest(); err != nil {
		return nil, 0, err
	}
	if t.o.Final, _, err = readServer(ctx, db, c.Pattern, false); err != nil {
		return nil, 0, fmt.Errorf("%w: read the rows at the end: %w", errclass.ErrHarness, err)
	}
	t.sends()
	if err := env.Recorder.Observe(t.o); err != nil {
		return nil, 0, fmt.Errorf("%w: record observation: %w", errclass.ErrHarness, err)
	}
	return first.Report.Points, 0, nil
}

// LostRows lists, per table, the rows of before that after lacks, as
// multisets; a table that lost nothing is left out.
func LostRows(before, after Rows) Rows {
	out := Rows{}
	for _, tb := range sortedKeys(before) {
		if m := missing(before[tb], after[tb]); len(m) > 0 {
			out[tb] = m
		}
	}
	return out
}

// ClaimedAtMark stands for a claim row's claimed_at in the lost rows a
// trial derives: the time is the worker's clock, which a rerun does not
// give again; the observation keeps it as read.
const ClaimedAtMark = "<claimed_at>"

// StableRows is rows with what a rerun cannot give again replaced by a
// mark: a claim's claimed_at. The other patterns' rows are the inputs'.
func StableRows(rows Rows) Rows {
	out := Rows{}
	for tb, rs := range rows {
		out[tb] = slices.Clone(rs)
		if tb != TableClaims {
			continue
		}
		for i, r := range rs {
			if c, ok := wc.ParseLine(r); ok && c.ClaimedAt != "" {
				c.ClaimedAt = ClaimedAtMark
				out[tb][i] = c.Line()
			}
		}
	}
	return out
}

// readServer reads the pattern's tables of a trial's schema through the
// workers' own readers (readRows), on a session as the next worker opens
// it. With integrity it also runs amcheck over the schema's tables and
// b-tree indexes, PostgreSQL's counterpart of integrity_check: "ok" when
// it finds nothing, else what it found.
func readServer(ctx context.Context, db backend.Database, pattern string, integrity bool) (Rows, []string, error) {
	st, err := db.Open(ctx, wr.Options(""))
	if err != nil {
		return nil, nil, err
	}
	rows, err := readRows(ctx, pattern, st)
	if err != nil {
		return nil, nil, errors.Join(err, st.Close())
	}
	var check []string
	if integrity {
		if check, err = amcheck(ctx, st); err != nil {
			return nil, nil, errors.Join(err, st.Close())
		}
	}
	return rows, check, st.Close()
}

// amcheck checks every table of the session's schema with verify_heapam
// and every b-tree index with bt_index_check, heap included. The
// extension lives in public, made there once per database.
func amcheck(ctx context.Context, st store.Store) ([]string, error) {
	if _, err := st.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS amcheck SCHEMA public"); err != nil {
		return nil, fmt.Errorf("amcheck: %w", err)
	}
	var found []string
	rows, err := st.QueryContext(ctx, `SELECT c.relname, v.blkno, v.offnum, v.msg
FROM pg_class c CROSS JOIN LATERAL public.verify_heapam(c.oid) v
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'`)
	if err != nil {
		return nil, fmt.Errorf("amcheck: verify_heapam: %w", err)
	}
	for rows.Next() {
		var rel, msg string
		var blk, off *int64
		if err := rows.Scan(&rel, &blk, &off, &msg); err != nil {
			rows.Close()
			return nil, fmt.Errorf("amcheck: verify_heapam: %w", err)
		}
		found = append(found, fmt.Sprintf("%s block %v offset %v: %s", rel, deref(blk), deref(off), msg))
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("amcheck: verify_heapam: %w", err)
	}
	// bt_index_check raises an error for what it finds, so each index is
	// checked on its own and its error kept.
	var idx []string
	rows, err = st.QueryContext(ctx, `SELECT c.relname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'i' AND a.amname = 'btree' ORDER BY c.relname`)
	if err != nil {
		return nil, fmt.Errorf("amcheck: list indexes: %w", err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("amcheck: list indexes: %w", err)
		}
		idx = append(idx, n)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("amcheck: list indexes: %w", err)
	}
	for _, n := range idx {
		if _, err := st.ExecContext(ctx, "SELECT public.bt_index_check(to_regclass($1), true)", n); err != nil {
			found = append(found, n+": "+strings.TrimSpace(err.Error()))
		}
	}
	if len(found) == 0 {
		return []string{"ok"}, nil
	}
	return found, nil
}

func deref(p *int64) any {
	if p == nil {
		return "-"
	}
	return *p
}
