package claim

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/scenario"
	wc "idemlab/worker/claim"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Observation is one line of observations.jsonl per race: which pool
// process served which slot with which request, the parent's clock around
// the release, and the claim row the parent read from the file after every
// racer had answered done. It holds no verdict and no racer's word.
type Observation struct {
	Scenario   string     `json:"scenario"`
	Condition  string     `json:"condition"`
	Race       int        `json:"race"`
	Round      string     `json:"round"`
	Variant    wc.Variant `json:"variant"`
	Repetition int        `json:"repetition"`
	RaceName   string     `json:"race_name"`
	DB         string     `json:"db"`
	// BaseMS is the round's start and StartMS the race's, by the parent's
	// clock; requests are derived from them.
	BaseMS  int64 `json:"base_ms"`
	StartMS int64 `json:"start_ms"`
	// ReleasedAtUS is the parent's clock just before the release write;
	// ReadAtUS just before it read the row.
	ReleasedAtUS int64   `json:"released_at_us"`
	ReadAtUS     int64   `json:"read_at_us"`
	Racers       []Racer `json:"racers"`
	// ClaimedAtColumn is whether the file's table has claimed_at.
	ClaimedAtColumn bool `json:"claimed_at_column"`
	// Row is the claim row after the race; nil when there is none.
	Row *wc.Row `json:"row"`
	// Broken is what the parent saw of a member that broke the pool in
	// this race: it died, hung, or answered out of turn. The run stops
	// after such a race, and the fold reports it on the race's condition.
	Broken string `json:"broken,omitempty"`
}

// Racer is one slot of a race: the pool process and the request it was
// sent.
type Racer struct {
	Slot      int        `json:"slot"`
	ProcessID int        `json:"process_id"`
	Request   wc.Request `json:"request"`
}

type plan struct{ s Settings }

func (p *plan) Settings() any  { return p.s }
func (p *plan) Processes() int { return p.s.PoolSize }

// pending is an observation whose racers are still named by pool member:
// a member's process id exists only once the harness records it, when
// the pool closes.
type pending struct {
	obs     Observation
	members []int
}

// Run starts the pool, races every slot of the schedule and records what
// each race left. The lines are written once the pool has closed and its
// members have their process ids.
func (p *plan) Run(ctx context.Context, env scenario.Env) error {
	st := p.s
	pool, err := env.Runner.StartPool(ctx, harness.PoolSpec{
		Scenario: Name, Condition: PoolCondition, Worker: wc.PoolWorker, Size: st.PoolSize,
		Label: MemberLabel,
		Args:  func(i int) []string { return st.PoolArgs(MemberLabel(i)).Argv() },
	})
	if err != nil {
		return err
	}
	var lines []pending
	runErr := p.race(ctx, env, pool, &lines)
	procs, closeErr := pool.Close()
	if runErr != nil {
		return runErr
	}
	if closeErr != nil {
		return closeErr
	}
	for _, l := range lines {
		for k, m := range l.members {
			l.obs.Racers[k].ProcessID = procs[m].Record.ID
		}
		if err := env.Recorder.Observe(l.obs); err != nil {
			return fmt.Errorf("%w: record observation: %w", errclass.ErrHarness, err)
		}
	}
	return nil
}

func (p *plan) race(ctx context.Context, env scenario.Env, pool *harness.Pool, lines *[]pending) error {
	st := p.s
	busy := time.Duration(st.SQLite.BusyTimeoutMS) * time.Millisecond
	tpl, err := templates(ctx, env.TempDir, busy)
	if err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	var f *roundFile
	defer func() { f.close() }()
	var last int64
	for _, s := range Schedule(st) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.Index == 0 {
			if f, err = newRoundFile(ctx, env.TempDir, busy, tpl[s.Round.Schema]); err != nil {
				return fmt.Errorf("%w: %s repetition %d: %w", errclass.ErrHarness, s.Condition, s.Repetition, err)
			}
		}
		// Honest callers stamp the event with the race's own start, kept
		// strictly increasing so that each race's timestamp is its own.
		start := max(time.Now().UnixMilli(), last+1)
		last = start
		if s.Race.Pinned {
			start = f.base
		}
		who := Members(s.Seq, s.Racers, pool.Size())
		o := Observation{
			Scenario: Name, Condition: s.Condition, Race: s.Seq, Round: s.Round.ID, Variant: s.By,
			Repetition: s.Repetition, RaceName: s.Race.Name, DB: f.path, BaseMS: f.base, StartMS: start,
		}
		reqs := make([]string, len(who))
		for k := range who {
			req := RequestFor(s, k, f.path, start, f.base)
			o.Racers = append(o.Racers, Racer{Slot: k, Request: req})
			b, err := json.Marshal(req)
			if err != nil {
				return fmt.Errorf("%w: encode request: %w", errclass.ErrHarness, err)
			}
			reqs[k] = string(b)
		}
		// A member that fails, or answers out of turn, is a result: the
		// race is recorded with what the parent saw, and the run stops,
		// since the pool is out of step.
		rd, err := pool.Race(who, reqs)
		var me *harness.MemberError
		switch {
		case errors.As(err, &me):
			o.Broken = me.Error()
		case err != nil:
			return fmt.Errorf("%s repetition %d race %s: %w", s.Condition, s.Repetition, s.Race.Name, err)
		default:
			if err := checkAnswers(s.Seq, who, rd); err != nil {
				o.Broken = err.Error()
			}
		}
		o.ReleasedAtUS = rd.ReleasedAt.UnixMicro()
		o.ReadAtUS = time.Now().UnixMicro()
		row, ok, err := wc.ReadRow(ctx, store.SQLiteDB(f.db), st.Fingerprint)
		if err != nil {
			return fmt.Errorf("%w: %s repetition %d race %s: %w", errclass.ErrHarness, s.Condition, s.Repetition, s.Race.Name, err)
		}
		o.ClaimedAtColumn = row.HasClaimedAt
		if ok {
			o.Row = &row
		}
		*lines = append(*lines, pending{obs: o, members: who})
		if o.Broken != "" {
			return nil
		}
		if s.Last() {
			if err := f.close(); err != nil {
				return fmt.Errorf("%w: %s repetition %d: %w", errclass.ErrHarness, s.Condition, s.Repetition, err)
			}
			f = nil
		}
	}
	return nil
}

// roundFile is a round's fresh file and the parent's own connection to
// it, which reads the row after each race, and stays
// open for the whole round. Holding it means no racer's close is the last
// one, so no racer's close checkpoints the WAL (an fsync per race); the
// connection is idle during a race and holds no lock.
type roundFile struct {
	dir, path string
	db        *sql.DB
	base      int64
}

func newRoundFile(ctx context.Context, tmp string, busy time.Duration, template []byte) (*roundFile, error) {
	dir, err := os.MkdirTemp(tmp, "idemlab-claim-")
	if err != nil {
		return nil, fmt.Errorf("create database folder: %w", err)
	}
	f := &roundFile{dir: dir, path: filepath.Join(dir, DBName)}
	if err := os.WriteFile(f.path, template, 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("write fresh database: %w", err)
	}
	db, _, err := sqlitedb.Open(ctx, wc.Options(f.path, busy))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	f.db = db
	f.base = time.Now().UnixMilli()
	return f, nil
}

// templates creates one empty file per table layout, in WAL mode, and
// returns their bytes. A round's fresh file is a copy: byte for byte what
// creating it would give, without the five fsyncs that switching a new
// file to WAL costs.
func templates(ctx context.Context, tmp string, busy time.Duration) (map[wc.SchemaVersion][]byte, error) {
	dir, err := os.MkdirTemp(tmp, "idemlab-claim-template-")
	if err != nil {
		return nil, fmt.Errorf("create template folder: %w", err)
	}
	defer os.RemoveAll(dir)
	out := map[wc.SchemaVersion][]byte{}
	for _, v := range []wc.SchemaVersion{wc.SchemaNew, wc.SchemaOld} {
		path := filepath.Join(dir, string(v)+".sqlite3")
		db, _, err := sqlitedb.Open(ctx, wc.Options(path, busy))
		if err != nil {
			return nil, err
		}
		err = wc.CreateSchema(ctx, db, v)
		// Closing the only connection checkpoints the WAL into the file
		// and removes it, so the file alone holds the table.
		if err = errors.Join(err, db.Close()); err != nil {
			return nil, err
		}
		if out[v], err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("read template: %w", err)
		}
		if _, err := os.Stat(path + "-wal"); !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("template %s kept its WAL after close", v)
		}
	}
	return out, nil
}

// close drops the round's file. The file is deleted next, so its last
// checkpoint need not reach the disk: the connection turns synchronous
// off first, after the last row has been read.
func (f *roundFile) close() error {
	if f == nil {
		return nil
	}
	_, err := f.db.Exec("PRAGMA synchronous=OFF")
	err = errors.Join(err, f.db.Close())
	return errors.Join(err, os.RemoveAll(f.dir))
}

// checkAnswers makes sure the members answered this race, and without an
// error; anything else means the pool is out of step. The error names the
// member and quotes its answer.
func checkAnswers(seq int, who []int, rd harness.Round) error {
	for _, group := range []struct {
		state string
		lines []string
	}{{wc.StateReady, rd.Ready}, {wc.StateDone, rd.Done}} {
		for k, line := range group.lines {
			var a wc.Answer
			m := MemberLabel(who[k])
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				return fmt.Errorf("member %s answered %q when the parent waited for %s: %w", m, line, group.state, err)
			}
			if a.Error != "" {
				return fmt.Errorf("member %s failed: %s", m, a.Error)
			}
			if a.Race != seq || a.State != group.state {
				return fmt.Errorf("member %s answered %q, want race %d %s", m, line, seq, group.state)
			}
		}
	}
	return nil
}
