package backend

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"idemlab/worker/store"
)

// CrashSettings are what a run that crashes its server sets on the
// cluster, with ALTER SYSTEM (Apply), and reads back after each crash: a
// WAL writer that sleeps 10 s and no autovacuum, so that under
// synchronous_commit off nothing flushes a trial's commits before the
// crash, and what is lost is decided by the setting, not by timing. The
// redelivery scenario's --server-crash and the durability scenario's
// server kind both crash through this file.
var CrashSettings = map[string]string{"wal_writer_delay": "10s", "autovacuum": "off"}

// PrepareCrash readies a trial whose server will be crashed: its tables,
// ddl, are made and flushed by the parent (Setup), so the trial's own
// commits are the only ones at stake, and the server's writers are frozen
// until the crash (FreezeWriters), so that under synchronous_commit off no
// background flush decides, by its timing, what survives.
func (s *Server) PrepareCrash(ctx context.Context, db Database, ddl string) error {
	if err := s.Setup(ctx, db, ddl); err != nil {
		return err
	}
	return s.FreezeWriters(ctx)
}

// FreshTrial makes a trial's schema, named prefix with a number, whose
// sessions carry spec's settings, with its tables, ddl, made and flushed
// by the parent (Setup); and for a trial whose server will be crashed,
// the server's writers frozen (PrepareCrash). Drop it on every path.
func (s *Server) FreshTrial(ctx context.Context, spec Spec, prefix, ddl string, crash bool) (Database, error) {
	db, err := s.WithSpec(spec).Fresh(ctx, prefix)
	if err != nil {
		return Database{}, err
	}
	prepare := s.Setup
	if crash {
		prepare = s.PrepareCrash
	}
	if err := prepare(ctx, db, ddl); err != nil {
		return Database{}, errors.Join(fmt.Errorf("prepare: %w", err), db.Drop())
	}
	return db, nil
}

// CrashAndRecover crashes the run's server (Crash: SIGKILL of every
// server process, restart, recovery) and reads back the settings named in
// want, which a run applied before, from the recovered server.
func (s *Server) CrashAndRecover(ctx context.Context, want map[string]string) (map[string]string, error) {
	if err := s.Crash(ctx); err != nil {
		return nil, err
	}
	return s.Show(ctx, slices.Sorted(maps.Keys(want)))
}

// CrashLoses says whether a crash of the server under synchronous_commit
// sc loses the commits made since PrepareCrash froze the writers: under
// off a commit returns before its WAL is flushed, and nothing flushes it
// until the crash; on and local flush the WAL before the commit returns.
func CrashLoses(sc string) bool { return sc == "off" }

// CrashKeeps is how many of the made commits a trial's process made since
// PrepareCrash a crash of the server under synchronous_commit sc keeps:
// every one, or none where it loses them (CrashLoses).
func CrashKeeps(sc string, made int) int {
	if CrashLoses(sc) {
		return 0
	}
	return made
}

// Integrity is the database's own check of what st opens: amcheck on
// PostgreSQL (Amcheck), PRAGMA integrity_check's answer, line by line, on
// SQLite; "ok" when either finds nothing.
func Integrity(ctx context.Context, st store.Store) ([]string, error) {
	if st.Dialect.Name() == store.BackendPostgres {
		return Amcheck(ctx, st)
	}
	rs, err := st.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return nil, fmt.Errorf("integrity_check: %w", err)
	}
	defer rs.Close()
	var check []string
	for rs.Next() {
		var s string
		if err := rs.Scan(&s); err != nil {
			return nil, fmt.Errorf("integrity_check: %w", err)
		}
		check = append(check, s)
	}
	return check, rs.Err()
}

// Amcheck checks every table of the session's schema with verify_heapam
// and every b-tree index with bt_index_check, heap included. The
// extension lives in public, made there once per database. It is
// PostgreSQL's counterpart of SQLite's integrity_check: "ok" when it finds
// nothing, else what it found.
func Amcheck(ctx context.Context, st store.Store) ([]string, error) {
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
