// Package sqlitedb is the one way idemlab opens a SQLite file, in workers
// and in the parent alike. Every pragma is set explicitly, read back and
// checked, so a result never rests on a setting that silently did not apply.
// A VFS name can be given, which is where a fault-injecting VFS plugs in.
package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"

	"idemlab/worker/faultvfs"
	"idemlab/worker/protocol"
)

// Options selects the file and the durability settings.
type Options struct {
	// Path is the database file.
	Path string
	// VFS is the SQLite VFS to open the file through; empty means the
	// default VFS.
	VFS string
	// JournalMode is DELETE, WAL, TRUNCATE, PERSIST or MEMORY.
	JournalMode string
	// Synchronous is OFF, NORMAL, FULL or EXTRA.
	Synchronous string
	// BusyTimeout is how long a statement waits for a lock before it
	// returns SQLITE_BUSY.
	BusyTimeout time.Duration
	// MaxConns bounds the pool; 0 means 1, which keeps one connection and
	// so one lock holder per process.
	MaxConns int
	// LockingMode is NORMAL or EXCLUSIVE; empty leaves SQLite's default
	// (NORMAL) and skips the check. EXCLUSIVE keeps the file locked until
	// the connection closes, which suits a file one process owns.
	LockingMode string
}

// Settings are the values read back from SQLite after opening.
type Settings struct {
	JournalMode   string `json:"journal_mode"`
	Synchronous   string `json:"synchronous"`
	BusyTimeoutMS int    `json:"busy_timeout_ms"`
	VFS           string `json:"vfs,omitempty"`
	LockingMode   string `json:"locking_mode,omitempty"`
}

// ErrPragmaMismatch reports a pragma that did not take the requested value.
var ErrPragmaMismatch = errors.New("pragma not in effect")

var syncNames = map[int]string{0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}

// DSN builds the connection string. Transactions begin with BEGIN
// IMMEDIATE, so a writer takes the write lock up front instead of failing
// to upgrade a read lock half-way through.
func DSN(o Options) string {
	q := url.Values{}
	q.Set("_txlock", "immediate")
	q.Set("_journal_mode", strings.ToUpper(o.JournalMode))
	q.Set("_synchronous", strings.ToUpper(o.Synchronous))
	q.Set("_busy_timeout", fmt.Sprint(o.BusyTimeout.Milliseconds()))
	if o.VFS != "" {
		q.Set("vfs", o.VFS)
	}
	if o.LockingMode != "" {
		q.Set("_locking_mode", strings.ToUpper(o.LockingMode))
	}
	return "file:" + o.Path + "?" + q.Encode()
}

// Open opens the file with the requested settings and checks that SQLite
// applied them.
func Open(ctx context.Context, o Options) (*sql.DB, Settings, error) {
	if o.Path == "" {
		return nil, Settings{}, errors.New("open database: empty path")
	}
	if o.JournalMode == "" {
		o.JournalMode = "DELETE"
	}
	if o.Synchronous == "" {
		o.Synchronous = "FULL"
	}
	if o.VFS == faultvfs.Name {
		if err := faultvfs.Register(); err != nil {
			return nil, Settings{}, fmt.Errorf("open database %s: %w", o.Path, err)
		}
	}
	db, err := sql.Open("sqlite3", DSN(o))
	if err != nil {
		return nil, Settings{}, fmt.Errorf("open database %s: %w", o.Path, err)
	}
	n := o.MaxConns
	if n <= 0 {
		n = 1
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	got, err := ReadSettings(ctx, db)
	if err != nil {
		db.Close()
		return nil, Settings{}, fmt.Errorf("open database %s: %w", o.Path, err)
	}
	got.VFS = o.VFS
	if got.JournalMode != strings.ToUpper(o.JournalMode) {
		db.Close()
		return nil, Settings{}, fmt.Errorf("open database %s: %w: journal_mode is %s, want %s", o.Path, ErrPragmaMismatch, got.JournalMode, strings.ToUpper(o.JournalMode))
	}
	if got.Synchronous != strings.ToUpper(o.Synchronous) {
		db.Close()
		return nil, Settings{}, fmt.Errorf("open database %s: %w: synchronous is %s, want %s", o.Path, ErrPragmaMismatch, got.Synchronous, strings.ToUpper(o.Synchronous))
	}
	if want := int(o.BusyTimeout.Milliseconds()); got.BusyTimeoutMS != want {
		db.Close()
		return nil, Settings{}, fmt.Errorf("open database %s: %w: busy_timeout is %d ms, want %d", o.Path, ErrPragmaMismatch, got.BusyTimeoutMS, want)
	}
	if o.LockingMode != "" {
		var mode string
		if err := db.QueryRowContext(ctx, "PRAGMA locking_mode").Scan(&mode); err != nil {
			db.Close()
			return nil, Settings{}, fmt.Errorf("open database %s: read locking_mode: %w", o.Path, err)
		}
		got.LockingMode = strings.ToUpper(mode)
		if got.LockingMode != strings.ToUpper(o.LockingMode) {
			db.Close()
			return nil, Settings{}, fmt.Errorf("open database %s: %w: locking_mode is %s, want %s", o.Path, ErrPragmaMismatch, got.LockingMode, strings.ToUpper(o.LockingMode))
		}
	}
	return db, got, nil
}

// VFSFromEnv returns the VFS name a worker should put in Options.VFS, as
// the parent chose it with protocol.EnvVFS: empty for the default VFS, or
// faultvfs.Name. Open registers that VFS on first use. Any other value is an
// error, so a misspelt setting cannot quietly run without the model.
func VFSFromEnv() (string, error) {
	switch v := os.Getenv(protocol.EnvVFS); v {
	case "":
		return "", nil
	case protocol.VFSFault, faultvfs.Name:
		return faultvfs.Name, nil
	default:
		return "", fmt.Errorf("%s=%q: unknown VFS (known: %q)", protocol.EnvVFS, v, protocol.VFSFault)
	}
}

// Journal modes and synchronous levels a parent may choose through
// protocol.EnvJournalMode and protocol.EnvSynchronous.
var (
	JournalModes = []string{"DELETE", "WAL"}
	SyncLevels   = []string{"OFF", "NORMAL", "FULL", "EXTRA"}
)

// FromEnv applies what the parent chose for this process to a worker's
// default options: the VFS (protocol.EnvVFS), the journal mode and the
// synchronous level. An unset variable keeps the default, so every other
// scenario runs exactly as before; an unknown value is an error, so a typo
// cannot run the wrong setting.
func FromEnv(o Options) (Options, error) {
	vfs, err := VFSFromEnv()
	if err != nil {
		return o, err
	}
	o.VFS = vfs
	if v := os.Getenv(protocol.EnvJournalMode); v != "" {
		if !contains(JournalModes, v) {
			return o, fmt.Errorf("%s=%q: want one of %q", protocol.EnvJournalMode, v, JournalModes)
		}
		o.JournalMode = v
	}
	if v := os.Getenv(protocol.EnvSynchronous); v != "" {
		if !contains(SyncLevels, v) {
			return o, fmt.Errorf("%s=%q: want one of %q", protocol.EnvSynchronous, v, SyncLevels)
		}
		o.Synchronous = v
	}
	return o, nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// ReadSettings reads the pragmas in effect on one connection of db.
func ReadSettings(ctx context.Context, db *sql.DB) (Settings, error) {
	var s Settings
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return s, fmt.Errorf("read journal_mode: %w", err)
	}
	s.JournalMode = strings.ToUpper(mode)
	var sync int
	if err := db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return s, fmt.Errorf("read synchronous: %w", err)
	}
	s.Synchronous = syncNames[sync]
	if err := db.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&s.BusyTimeoutMS); err != nil {
		return s, fmt.Errorf("read busy_timeout: %w", err)
	}
	return s, nil
}

// Version returns the linked SQLite library's version.
func Version() string {
	v, _, _ := sqlite3.Version()
	return v
}

// IsBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED.
func IsBusy(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	return false
}
