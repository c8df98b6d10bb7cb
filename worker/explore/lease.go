package explore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	wb "idemlab/worker/batch"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/wire"
)

// LeaseName is the registry name of the leased batch worker: article 002's
// journal run under article 003's TTL claim, held as a lease that every
// journal write renews. Each grant carries a generation, the fencing token
// every journal write and every send carries.
const LeaseName = "explore.lease"

// PointAcquired is passed once the lease is held; the batch's per-item
// points (before-send, after-send-accepted) follow.
const PointAcquired = "lease-acquired"

// LeasePoints are the crash points a lease run over n fresh items passes
// when nothing fails, in order: the lease, then the batch run's.
func LeasePoints(n int) []string { return append([]string{PointAcquired}, wb.CleanPoints(n)...) }

// LeaseSchema keeps the lease, the journal with the generation of its last
// writer, and an append-only log of grants and journal writes in one file,
// so a write and the log entry that witnesses it commit together.
const LeaseSchema = `
CREATE TABLE IF NOT EXISTS job_lease (
  job_id TEXT PRIMARY KEY NOT NULL,
  holder TEXT NOT NULL,
  generation INTEGER NOT NULL,
  claimed_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS lease_journal (
  job_id TEXT NOT NULL,
  item_id TEXT NOT NULL,
  step_name TEXT NOT NULL,
  status TEXT NOT NULL,
  generation INTEGER NOT NULL,
  receipt TEXT,
  PRIMARY KEY (job_id, item_id, step_name)
);
CREATE TABLE IF NOT EXISTS lease_log (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  holder TEXT NOT NULL,
  generation INTEGER NOT NULL,
  item_id TEXT NOT NULL DEFAULT '',
  step_name TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL DEFAULT '',
  at_ms INTEGER NOT NULL
);`

// Log kinds.
const (
	LogGrant = "grant"
	LogWrite = "write"
)

// acquireSQL is article 003's conditional upsert: a lease whose last
// renewal is older than the TTL is taken over with the next generation.
const acquireSQL = `INSERT INTO job_lease (job_id, holder, generation, claimed_at)
VALUES (:job, :holder, 1, :now)
ON CONFLICT(job_id) DO UPDATE SET holder = excluded.holder, generation = generation + 1, claimed_at = excluded.claimed_at
WHERE claimed_at < :cutoff`

// LeaseArgs are the leased worker's arguments.
type LeaseArgs struct {
	DB, Job, Receiver, Holder string
	Items                     int
	TTLMS, OffsetMS           int64
	// Fence makes every journal write conditional on the generation being
	// current, and stops the run when it is not; off, the worker renews
	// but ignores a lost lease.
	Fence bool
	// PauseAt, when set, names a point at which the worker writes a byte on
	// descriptor ReadyFD and blocks until its standard input closes: a
	// stop the parent controls, standing for a GC pause or SIGSTOP.
	PauseAt string
	ReadyFD int
	// WaitMS bounds how long the worker polls a live lease, every PollMS.
	WaitMS, PollMS int64
}

// Argv is the command line after the worker name; the parent and the
// fold both render it so.
func (a LeaseArgs) Argv() []string {
	out := []string{"-db", a.DB, "-job", a.Job, "-receiver", a.Receiver, "-holder", a.Holder, "-items", strconv.Itoa(a.Items),
		"-ttl-ms", fmt.Sprint(a.TTLMS), "-clock-offset-ms", fmt.Sprint(a.OffsetMS), "-fence=" + strconv.FormatBool(a.Fence),
		"-wait-ms", fmt.Sprint(a.WaitMS), "-poll-ms", fmt.Sprint(a.PollMS)}
	if a.PauseAt != "" {
		out = append(out, "-pause-at", a.PauseAt, "-ready-fd", strconv.Itoa(a.ReadyFD))
	}
	return out
}

// ParseLeaseArgs reads the command line Argv renders.
func ParseLeaseArgs(argv []string) (LeaseArgs, error) {
	var a LeaseArgs
	fs := newFlagSet(LeaseName)
	fs.StringVar(&a.DB, "db", "", "database file")
	fs.StringVar(&a.Job, "job", "", "job id")
	fs.StringVar(&a.Receiver, "receiver", "", "receiver base URL")
	fs.StringVar(&a.Holder, "holder", "", "this worker's name")
	fs.IntVar(&a.Items, "items", 0, "number of items")
	fs.Int64Var(&a.TTLMS, "ttl-ms", 0, "lease TTL")
	fs.Int64Var(&a.OffsetMS, "clock-offset-ms", 0, "added to the worker's clock")
	fs.BoolVar(&a.Fence, "fence", true, "condition writes on the generation")
	fs.StringVar(&a.PauseAt, "pause-at", "", "point at which to wait for the parent")
	fs.IntVar(&a.ReadyFD, "ready-fd", 0, "descriptor to signal the pause on")
	fs.Int64Var(&a.WaitMS, "wait-ms", 0, "longest wait for a live lease")
	fs.Int64Var(&a.PollMS, "poll-ms", 20, "interval between acquire attempts")
	if err := fs.Parse(argv); err != nil {
		return a, err
	}
	if a.DB == "" || a.Job == "" || a.Receiver == "" || a.Holder == "" || a.Items < 1 || a.TTLMS <= 0 || a.PollMS <= 0 || (a.PauseAt != "" && a.ReadyFD < 3) {
		return a, errors.New("-db, -job, -receiver, -holder, -items, -ttl-ms, -poll-ms, and -ready-fd with -pause-at are required")
	}
	return a, nil
}

// LeaseResult is the leased worker's report payload.
type LeaseResult struct {
	Holder     string `json:"holder"`
	Generation int64  `json:"generation"`
	Fence      bool   `json:"fence"`
	// Polls counts the acquire attempts that found the lease live.
	Polls int `json:"polls"`
	// Sent counts sends the receiver accepted; Verified side-effect rows
	// left unfinished that a lookup found delivered.
	Sent     int `json:"sent"`
	Verified int `json:"verified"`
	Skipped  int `json:"skipped"`
	// LeaseLost: a fenced write or send found the generation superseded,
	// and the worker stopped there.
	LeaseLost bool `json:"lease_lost"`
	// StaleWrites counts journal writes made (unfenced) after the lease
	// renewal found the generation superseded.
	StaleWrites int               `json:"stale_writes"`
	Paused      bool              `json:"paused"`
	Settings    sqlitedb.Settings `json:"settings"`
}

// errLeaseLost stops a fenced run.
var errLeaseLost = errors.New("lease lost to a newer generation")

// LeaseOptions are the file's settings: WAL, and the normal locking mode,
// since two holders of one job share the file.
func LeaseOptions(path string) sqlitedb.Options {
	return sqlitedb.Options{Path: path, JournalMode: "WAL", Synchronous: "NORMAL", BusyTimeout: 5 * time.Second}
}

type leaseRun struct {
	a      LeaseArgs
	db     *sql.DB
	call   *protocol.Call
	client *wire.Client
	gen    int64
	res    LeaseResult
}

func (r *leaseRun) now() int64 { return time.Now().UnixMilli() + r.a.OffsetMS }

// LeaseMain is the registered worker "explore.lease".
func LeaseMain(call *protocol.Call) int {
	a, err := ParseLeaseArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	ctx := context.Background()
	db, settings, err := sqlitedb.Open(ctx, LeaseOptions(a.DB))
	if err != nil {
		return call.Fail(err)
	}
	if _, err := db.ExecContext(ctx, LeaseSchema); err != nil {
		return call.Fail(fmt.Errorf("create lease tables: %w", err))
	}
	r := &leaseRun{a: a, db: db, call: call, client: wire.NewClient(a.Receiver), res: LeaseResult{Holder: a.Holder, Fence: a.Fence, Settings: settings}}
	if err := r.acquire(ctx); err != nil {
		return call.Fail(err)
	}
	r.hit(PointAcquired)
	err = r.items(ctx)
	r.client.CloseIdle()
	if errors.Is(err, errLeaseLost) {
		r.res.LeaseLost = true
	} else if err != nil {
		return call.Fail(err)
	}
	if err := db.Close(); err != nil {
		return call.Fail(fmt.Errorf("close database: %w", err))
	}
	return call.Finish(r.res, protocol.ExitACK)
}

// hit passes a point and, at the chosen one, waits for the parent.
func (r *leaseRun) hit(point string) {
	r.call.Points.Hit(point)
	if point != r.a.PauseAt || r.res.Paused {
		return
	}
	r.res.Paused = true
	f := os.NewFile(uintptr(r.a.ReadyFD), "ready")
	if f != nil {
		f.Write([]byte{1})
		f.Close()
	}
	if r.call.Stdin != nil {
		io.Copy(io.Discard, r.call.Stdin)
	}
}

// acquire polls the conditional upsert until it wins or WaitMS passes; the
// grant and its log entry commit together.
func (r *leaseRun) acquire(ctx context.Context) error {
	deadline := time.Now().Add(time.Duration(r.a.WaitMS) * time.Millisecond)
	for {
		won, err := r.tryAcquire(ctx)
		if err != nil || won {
			return err
		}
		r.res.Polls++
		if time.Now().After(deadline) {
			return fmt.Errorf("the lease of %s stayed live for %d ms", r.a.Job, r.a.WaitMS)
		}
		time.Sleep(time.Duration(r.a.PollMS) * time.Millisecond)
	}
}

func (r *leaseRun) tryAcquire(ctx context.Context) (bool, error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("begin acquire: %w", err)
	}
	defer tx.Rollback()
	now := r.now()
	res, err := tx.ExecContext(ctx, acquireSQL, sql.Named("job", r.a.Job), sql.Named("holder", r.a.Holder), sql.Named("now", now), sql.Named("cutoff", now-r.a.TTLMS))
	if err != nil {
		return false, fmt.Errorf("acquire lease: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return false, err
	}
	if err := tx.QueryRowContext(ctx, "SELECT generation FROM job_lease WHERE job_id = ?", r.a.Job).Scan(&r.gen); err != nil {
		return false, fmt.Errorf("read generation: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO lease_log (kind, holder, generation, at_ms) VALUES (?, ?, ?, ?)", LogGrant, r.a.Holder, r.gen, now); err != nil {
		return false, fmt.Errorf("log grant: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("commit acquire: %w", err)
	}
	r.res.Generation = r.gen
	return true, nil
}

// mark writes one journal row, renewing the lease in the same
// transaction. Fenced, the renewal is the condition: a superseded
// generation writes nothing and stops the run.
func (r *leaseRun) mark(ctx context.Context, item, step string, st wb.Status, receipt string) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin mark: %w", err)
	}
	defer tx.Rollback()
	now := r.now()
	res, err := tx.ExecContext(ctx, "UPDATE job_lease SET claimed_at = ? WHERE job_id = ? AND generation = ?", now, r.a.Job, r.gen)
	if err != nil {
		return fmt.Errorf("renew lease: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("renew lease: %w", err)
	}
	if n != 1 {
		if r.a.Fence {
			return errLeaseLost
		}
		r.res.StaleWrites++
	}
	var rc any
	if receipt != "" {
		rc = receipt
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO lease_journal (job_id, item_id, step_name, status, generation, receipt) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT(job_id, item_id, step_name) DO UPDATE SET status = excluded.status, generation = excluded.generation, receipt = excluded.receipt`,
		r.a.Job, item, step, string(st), r.gen, rc); err != nil {
		return fmt.Errorf("mark %s:%s %s: %w", item, step, st, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO lease_log (kind, holder, generation, item_id, step_name, status, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
		LogWrite, r.a.Holder, r.gen, item, step, string(st), now); err != nil {
		return fmt.Errorf("log write: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit mark: %w", err)
	}
	return nil
}

func (r *leaseRun) status(ctx context.Context, item, step string) (wb.Status, error) {
	var st string
	err := r.db.QueryRowContext(ctx, "SELECT status FROM lease_journal WHERE job_id = ? AND item_id = ? AND step_name = ?", r.a.Job, item, step).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s:%s: %w", item, step, err)
	}
	return wb.Status(st), nil
}

// items runs the journal's resume rules with one change a fenced receiver
// makes safe: a side-effect row left unfinished is looked up under the
// holder's generation, and a missing receipt means not sent, since the
// receiver now refuses the old holder's late send. Without the fence that
// same rule is what lets a paused holder's send through twice.
func (r *leaseRun) items(ctx context.Context) error {
	for _, it := range wb.Items(r.a.Items, 0) {
		for _, step := range wb.Steps {
			st, err := r.status(ctx, it.ID, step)
			if err != nil {
				return err
			}
			if st == wb.Succeeded {
				r.res.Skipped++
				continue
			}
			k := wire.Key{Job: r.a.Job, Item: it.ID, Step: step}
			if st != "" && wb.IsSideEffect(step) {
				rc, found, err := r.client.LookupAt(ctx, k, r.gen)
				if err != nil {
					return err
				}
				if found {
					r.res.Verified++
					if err := r.mark(ctx, it.ID, step, wb.Succeeded, rc); err != nil {
						return err
					}
					continue
				}
			}
			if err := r.mark(ctx, it.ID, step, wb.InFlight, ""); err != nil {
				return err
			}
			var receipt string
			if wb.IsSideEffect(step) {
				r.hit(wb.ItemPoint(wb.PointBeforeSend, it.ID))
				receipt, err = r.client.Send(ctx, wire.SendRequest{JobID: r.a.Job, ItemID: it.ID, Step: step, Digest: wb.Digest(it), Generation: r.gen})
				var ue *wire.UnavailableError
				if errors.As(err, &ue) && ue.Status == wire.StatusStale {
					return errLeaseLost
				}
				if err != nil {
					return err
				}
				r.res.Sent++
				r.hit(wb.ItemPoint(wb.PointAfterSendAccepted, it.ID))
			}
			if err := r.mark(ctx, it.ID, step, wb.Succeeded, receipt); err != nil {
				return err
			}
		}
	}
	return nil
}
