package backend

import (
	"context"
	"maps"
	"slices"
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
