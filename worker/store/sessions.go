package store

import (
	"context"
	"errors"

	"idemlab/worker/sqlitedb"
)

// Sessions keeps a long-lived worker's database open from one use to the
// next where that is cheaper than opening it again and changes nothing
// the worker measures. A SQLite file is opened afresh for each use, as it
// always was. A PostgreSQL session costs the server a process to open, so
// one session is kept while the uses are on the same server, database,
// user and settings, and is moved to each use's schema; only a change of
// those opens a new one.
type Sessions struct {
	key string
	st  Store
}

// Open opens target for one use, or hands back the kept session moved to
// target's schema, with the settings read back either way. Release ends
// the use: it closes a SQLite handle and keeps a PostgreSQL session.
func (s *Sessions) Open(ctx context.Context, backend, target string, o sqlitedb.Options) (st Store, rb ReadBack, release func() error, err error) {
	key, schema, ok := "", "", false
	if backend == BackendPostgres {
		key, schema, ok = SessionKey(target)
	}
	if !ok {
		st, rb, err = Open(ctx, backend, target, o)
		return st, rb, st.closer(), err
	}
	keep := func() error { return nil }
	if s.key == key && s.st.DB != nil {
		pg, err := UseSchema(ctx, s.st, schema)
		if err != nil {
			return Store{}, rb, keep, errors.Join(err, s.Close())
		}
		return s.st, ReadBack{Postgres: &pg}, keep, nil
	}
	if err := s.Close(); err != nil {
		return Store{}, rb, keep, err
	}
	if s.st, rb, err = Open(ctx, backend, target, o); err != nil {
		return Store{}, rb, keep, err
	}
	s.key = key
	return s.st, rb, keep, nil
}

// Close closes the kept session, if any.
func (s *Sessions) Close() error {
	if s.st.DB == nil {
		return nil
	}
	err := s.st.Close()
	s.st, s.key = Store{}, ""
	return err
}

// closer closes st, or does nothing when it was never opened.
func (s Store) closer() func() error {
	return func() error {
		if s.DB == nil {
			return nil
		}
		return s.Close()
	}
}
