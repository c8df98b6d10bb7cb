package backend

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"idemlab/experiments/errclass"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Options say where a PostgreSQL run's database lives.
type Options struct {
	// DSN names an existing server; empty starts a throwaway cluster.
	DSN string
	// Keep leaves the run's database on the server named by DSN.
	Keep bool
	// TempDir holds a throwaway cluster; empty means the system default.
	TempDir string
	// Settings are extra server settings for a throwaway cluster,
	// "name=value" each.
	Settings []string
}

// Server is a run's PostgreSQL database: one database made for the run,
// in which every condition gets a schema of its own.
type Server struct {
	spec    Spec
	opts    Options
	cluster *Cluster
	// base is the connection string of the run's database.
	base    string
	dbName  string
	admin   *sql.DB
	version string
	// schemas numbers the schemas made, shared with WithSpec's copies.
	schemas *atomic.Int64
	// dropOn is the server's maintenance connection string, from which
	// the run's database is dropped; empty when nothing is to drop.
	dropOn string
	// cleaned says what the run removed that runs now gone left behind.
	cleaned []string
}

// Info is what a run records about its server.
type Info struct {
	ServerVersion string
	Database      string
	// Cluster is the throwaway cluster, nil on a server named by --dsn.
	Cluster *Cluster
	// Cleaned says, a line each, what the run's start removed that runs
	// now gone left behind: their throwaway clusters under the temp
	// folder, their databases on the server named by --dsn (orphans.go).
	Cleaned []string
}

// Start makes the run's database on the backend spec names: for SQLite it
// returns nil, for nothing is shared between SQLite conditions. The caller
// must Close what it returns, on success, failure and interrupt alike.
func Start(ctx context.Context, spec Spec, o Options) (*Server, error) {
	if spec.IsSQLite() {
		if o.DSN != "" || o.Keep {
			return nil, fmt.Errorf("%w: --%s and --%s are for --backend postgres", errclass.ErrUsage, FlagDSN, FlagKeep)
		}
		return nil, nil
	}
	self, err := Self()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	s := &Server{spec: spec, opts: o, schemas: new(atomic.Int64)}
	s.cleaned = SweepClusters(o.TempDir, self)
	maintenance := o.DSN
	if o.DSN == "" {
		if o.Keep {
			return nil, fmt.Errorf("%w: --%s keeps the run's database on a server named by --%s; a throwaway cluster is always removed", errclass.ErrUsage, FlagKeep, FlagDSN)
		}
		c, err := StartCluster(ctx, o.TempDir, o.Settings)
		if err != nil {
			if errors.Is(err, errclass.ErrUsage) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: start a throwaway PostgreSQL cluster: %w", errclass.ErrHarness, err)
		}
		s.cluster = c
		maintenance = c.AdminDSN("postgres")
	} else if err := protocol.CheckArg(o.DSN); err != nil {
		// The run's connection string reaches every worker as an argument.
		return nil, fmt.Errorf("%w: --%s: %w", errclass.ErrUsage, FlagDSN, err)
	} else if _, err := pgx.ParseConfig(o.DSN); err != nil {
		return nil, fmt.Errorf("%w: --%s: %w", errclass.ErrUsage, FlagDSN, err)
	}
	if err := s.makeDatabase(ctx, maintenance, self); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// makeDatabase creates idemlab_<run> from the maintenance connection and
// opens the parent's own connection to it. On a server named by --dsn it
// first drops the databases that runs now gone left there, then records
// self as the new database's owner, unless --keep keeps it.
func (s *Server) makeDatabase(ctx context.Context, maintenance string, self Owner) error {
	var b [4]byte
	rand.Read(b[:])
	s.dbName = "idemlab_" + time.Now().UTC().Format("20060102_150405") + "_" + hex.EncodeToString(b[:])
	m, err := sql.Open("pgx", maintenance)
	if err != nil {
		return fmt.Errorf("%w: connect to PostgreSQL: %w", errclass.ErrHarness, err)
	}
	defer m.Close()
	if s.cluster == nil {
		lines, err := sweepDatabases(ctx, m, self)
		if err != nil {
			return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
		s.cleaned = append(s.cleaned, lines...)
	}
	if _, err := m.ExecContext(ctx, "CREATE DATABASE "+s.dbName); err != nil {
		return fmt.Errorf("%w: create the run's database: %w", errclass.ErrHarness, err)
	}
	s.dropOn = maintenance
	if s.cluster == nil && !s.opts.Keep {
		if err := commentOwner(ctx, m, s.dbName, self); err != nil {
			return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
	}
	s.base = withDatabase(maintenance, s.dbName)
	if s.cluster != nil {
		s.base = s.cluster.AdminDSN(s.dbName)
	}
	if s.admin, err = sql.Open("pgx", s.base); err != nil {
		return fmt.Errorf("%w: connect to the run's database: %w", errclass.ErrHarness, err)
	}
	s.admin.SetMaxOpenConns(1)
	if err := s.admin.QueryRowContext(ctx, "SHOW server_version").Scan(&s.version); err != nil {
		return fmt.Errorf("%w: read the server's version: %w", errclass.ErrHarness, err)
	}
	return nil
}

// withDatabase points a connection string at database db.
func withDatabase(dsn, db string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + db
		return u.String()
	}
	return strings.TrimSpace(dsn) + " dbname=" + db
}

// Info says which server the run used.
func (s *Server) Info() Info {
	return Info{ServerVersion: s.version, Database: s.dbName, Cluster: s.cluster, Cleaned: s.cleaned}
}

// Crash crashes the run's throwaway cluster (Cluster.Crash) and opens the
// parent's connection again once the server has recovered. A server named
// by --dsn is not this run's to kill: Crash refuses it.
func (s *Server) Crash(ctx context.Context) error {
	if s.cluster == nil {
		return fmt.Errorf("%w: a server crash needs the run's own throwaway cluster; leave out --%s", errclass.ErrUsage, FlagDSN)
	}
	if err := s.cluster.Crash(ctx); err != nil {
		return fmt.Errorf("crash and restart the server: %w", err)
	}
	s.admin.Close()
	var err error
	if s.admin, err = sql.Open("pgx", s.base); err != nil {
		return fmt.Errorf("reconnect after the crash: %w", err)
	}
	s.admin.SetMaxOpenConns(1)
	return s.admin.PingContext(ctx)
}

// Apply sets server settings with ALTER SYSTEM on the run's own cluster,
// reloads the configuration, and waits until the parent's session reads
// every one back. The settings outlive a crash (postgresql.auto.conf).
func (s *Server) Apply(ctx context.Context, settings map[string]string) error {
	if s == nil || s.cluster == nil {
		return fmt.Errorf("%w: server settings are set on the run's own throwaway cluster only; leave out --%s", errclass.ErrUsage, FlagDSN)
	}
	names := make([]string, 0, len(settings))
	for k, v := range settings {
		if _, err := s.admin.ExecContext(ctx, fmt.Sprintf("ALTER SYSTEM SET %s = %s", store.QuoteIdent(k), store.QuoteLiteral(v))); err != nil {
			return fmt.Errorf("%w: set %s: %w", errclass.ErrHarness, k, err)
		}
		names = append(names, k)
	}
	if _, err := s.admin.ExecContext(ctx, "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("%w: reload the configuration: %w", errclass.ErrHarness, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := s.Show(ctx, names)
		if err != nil {
			return err
		}
		same := true
		for k, v := range settings {
			same = same && got[k] == v
		}
		if same {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: the server reads back %v after the reload, want %v", errclass.ErrHarness, got, settings)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Setup runs ddl in db's schema on the parent's own session, whose commits
// wait for the WAL's flush whatever the run's synchronous_commit: tables a
// trial starts with are on the disk before it begins.
func (s *Server) Setup(ctx context.Context, db Database, ddl string) error {
	if db.Session == nil || db.Session.Schema == "" {
		return fmt.Errorf("%w: %q names no schema", errclass.ErrHarness, db.Target)
	}
	set := store.Session{Schema: db.Session.Schema, SynchronousCommit: "on"}.Set(true)
	q := fmt.Sprintf("BEGIN; %s; %s; COMMIT;", strings.Join(set, "; "), ddl)
	if _, err := s.admin.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("%w: set up schema %s: %w", errclass.ErrHarness, db.Session.Schema, err)
	}
	return nil
}

// FreezeWriters stops (SIGSTOP) the server's WAL writer and background
// writer until the next crash kills them. Under synchronous_commit off a
// commit is acknowledged before its WAL is flushed, and these two are what
// would flush it a moment later: the WAL writer at its next wake, the
// background writer when it writes a page whose WAL is not yet on the
// disk. Frozen, they leave every acknowledged async commit unflushed until
// the crash, the window the setting opens held open on purpose.
func (s *Server) FreezeWriters(ctx context.Context) error {
	if s == nil || s.cluster == nil {
		return fmt.Errorf("%w: freezing the server's writers needs the run's own throwaway cluster; leave out --%s", errclass.ErrUsage, FlagDSN)
	}
	rows, err := s.admin.QueryContext(ctx, "SELECT pid FROM pg_stat_activity WHERE backend_type IN ('walwriter', 'background writer')")
	if err != nil {
		return fmt.Errorf("%w: find the server's writers: %w", errclass.ErrHarness, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return fmt.Errorf("%w: find the server's writers: %w", errclass.ErrHarness, err)
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return fmt.Errorf("%w: stop the server's writer %d: %w", errclass.ErrHarness, pid, err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w: find the server's writers: %w", errclass.ErrHarness, err)
	}
	if n != 2 {
		return fmt.Errorf("%w: found %d of the server's two writers (walwriter, background writer)", errclass.ErrHarness, n)
	}
	return nil
}

// Show reads settings with current_setting on the parent's session.
func (s *Server) Show(ctx context.Context, names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		var v string
		if err := s.admin.QueryRowContext(ctx, "SELECT current_setting($1)", n).Scan(&v); err != nil {
			return nil, fmt.Errorf("%w: read %s: %w", errclass.ErrHarness, n, err)
		}
		out[n] = v
	}
	return out, nil
}

// WithSpec is the same server and database handing out schemas whose
// sessions start with spec's settings instead, which a session takes from
// its connection string. It shares the original's database: close only
// the original, and crash only the original, since Crash renews the
// parent's connection of the server it is called on alone.
func (s *Server) WithSpec(spec Spec) *Server {
	c := *s
	c.spec = spec
	return &c
}

// Close drops the run's database, unless --keep, and stops a throwaway
// cluster and removes its folder. It is safe on nil and on a server whose
// start failed half-way.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	var errs []error
	if s.admin != nil {
		errs = append(errs, s.admin.Close())
	}
	if s.dropOn != "" && !s.opts.Keep && s.cluster == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m, err := sql.Open("pgx", s.dropOn)
		if err == nil {
			_, err = m.ExecContext(ctx, "DROP DATABASE IF EXISTS "+s.dbName+" WITH (FORCE)")
			err = errors.Join(err, m.Close())
		}
		errs = append(errs, err)
	}
	errs = append(errs, s.cluster.Stop())
	return errors.Join(errs...)
}

// Database is one condition's fresh database: a file in a folder of its
// own for SQLite, a schema of its own for PostgreSQL. Target is what a
// worker opens.
type Database struct {
	Backend string
	Target  string
	// Session is what Target asks of a PostgreSQL session, as values; nil
	// on SQLite.
	Session *store.Session
	drop    func() error
}

// Fresh makes a fresh schema for one condition, named prefix with a
// number.
func (s *Server) Fresh(ctx context.Context, prefix string) (Database, error) {
	schema := fmt.Sprintf("%s_%d", strings.ReplaceAll(prefix, "-", "_"), s.schemas.Add(1))
	if _, err := s.admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		return Database{}, fmt.Errorf("create schema %s: %w", schema, err)
	}
	sess := s.spec.Session(s.base, schema)
	return Database{
		Backend: store.BackendPostgres,
		Target:  sess.DSN(),
		Session: &sess,
		drop:    func() error { return nil },
	}, nil
}

// Scratch runs check on one session to a fresh schema made for it alone,
// then closes the session: a statement a user gave is prepared there
// before any trial, on the server the trials will use. Failing to make or
// open the schema is the harness's fault (errclass.ErrHarness); check's
// own error comes back as it is, for the caller to class.
func (s *Server) Scratch(ctx context.Context, prefix string, check func(store.Store) error) error {
	db, err := s.Fresh(ctx, prefix)
	if err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	st, err := db.Open(ctx, sqlitedb.Options{MaxConns: 1})
	if err != nil {
		return fmt.Errorf("%w: open a scratch schema: %w", errclass.ErrHarness, err)
	}
	return errors.Join(check(st), st.Close())
}

// FreshMany makes one fresh schema per entry of setups, named prefix with
// a number, each set up by its entry's statements run with the schema as
// search_path, in one transaction per chunk of 100: many conditions'
// databases for the cost of a few commits, where Fresh pays one each.
func (s *Server) FreshMany(ctx context.Context, prefix string, setups []string) ([]Database, error) {
	const chunk = 100
	out := make([]Database, 0, len(setups))
	for len(setups) > 0 {
		n := min(chunk, len(setups))
		var b strings.Builder
		b.WriteString("BEGIN;\n")
		for _, setup := range setups[:n] {
			schema := fmt.Sprintf("%s_%d", strings.ReplaceAll(prefix, "-", "_"), s.schemas.Add(1))
			sess := s.spec.Session(s.base, schema)
			fmt.Fprintf(&b, "CREATE SCHEMA %s;\n%s;\n%s;\n", schema, store.Session{Schema: schema}.Set(true)[0], setup)
			out = append(out, Database{Backend: store.BackendPostgres, Target: sess.DSN(), Session: &sess})
		}
		b.WriteString("COMMIT;")
		// Without arguments the statements go as one simple query.
		if _, err := s.admin.ExecContext(ctx, b.String()); err != nil {
			return nil, fmt.Errorf("create %d schemas: %w", n, err)
		}
		setups = setups[n:]
	}
	return out, nil
}

// FreshFile makes a fresh SQLite file named name in a new folder under
// tmp; Drop removes the folder.
func FreshFile(tmp, prefix, name string) (Database, error) {
	dir, err := os.MkdirTemp(tmp, prefix)
	if err != nil {
		return Database{}, fmt.Errorf("create database folder: %w", err)
	}
	return Database{Backend: store.BackendSQLite, Target: filepath.Join(dir, name), drop: func() error { return os.RemoveAll(dir) }}, nil
}

// Open opens the database as the next worker would: a SQLite file with
// the worker's options o, which also rolls back a hot journal left by a
// crash, or a PostgreSQL session with the run's settings.
func (d Database) Open(ctx context.Context, o sqlitedb.Options) (store.Store, error) {
	st, _, err := store.Open(ctx, d.Backend, d.Target, o)
	return st, err
}

// Drop removes what Fresh made on disk. A PostgreSQL schema stays until
// the run's database is dropped.
func (d Database) Drop() error {
	if d.drop == nil {
		return nil
	}
	return d.drop()
}
