package claim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/engine"
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

// Caps: one pool, raced slot by slot; it needs nothing before the run.
func (p *plan) Caps() scenario.PlanCaps { return scenario.PlanCaps{} }

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
	if err := st.checkOnServer(ctx, env); err != nil {
		return err
	}
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
		if err := engine.Record(env.Recorder, l.obs); err != nil {
			return err
		}
	}
	return nil
}

func (p *plan) race(ctx context.Context, env scenario.Env, pool *harness.Pool, lines *[]pending) error {
	st := p.s
	busy := time.Duration(st.SQLite.BusyTimeoutMS) * time.Millisecond
	var tpl map[wc.SchemaVersion][]byte
	var feed *schemaFeed
	if env.Backend == nil {
		var err error
		if tpl, err = templates(ctx, env.TempDir, busy); err != nil {
			return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
	} else {
		feed = newSchemaFeed(ctx, env.Backend, Schedule(st))
		defer feed.stop()
	}
	var f *roundFile
	// The parent's own session to the rounds' databases is kept from one
	// round to the next where the backend allows (store.Sessions).
	var sessions store.Sessions
	defer func() { f.close(); sessions.Close() }()
	var last int64
	for _, s := range Schedule(st) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.Index == 0 {
			db, err := feed.next()
			if err != nil {
				return fmt.Errorf("%w: %s repetition %d: %w", errclass.ErrHarness, s.Condition, s.Repetition, err)
			}
			if f, err = newRoundFile(ctx, env, &sessions, busy, s.Round.Schema, tpl, db); err != nil {
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
		row, ok, err := wc.ReadRow(ctx, f.st, st.Fingerprint)
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

// roundFile is a round's fresh database and the parent's own connection
// to it, which reads the row after each race, and stays open for the
// whole round. On SQLite, holding it means no racer's close is the last
// one, so no racer's close checkpoints the WAL (an fsync per race); the
// connection is idle during a race and holds no lock.
type roundFile struct {
	db      backend.Database
	st      store.Store
	release func() error
	path    string
	base    int64
	// copied says the file is a copy of a SQLite template.
	copied bool
}

// newRoundFile makes the round's database with the round's table layout:
// on SQLite a copy of the layout's template file (tpl), on PostgreSQL the
// schema made before the races (made, holding the table already), or a
// fresh one in which the table is created.
func newRoundFile(ctx context.Context, env scenario.Env, sessions *store.Sessions, busy time.Duration, v wc.SchemaVersion, tpl map[wc.SchemaVersion][]byte, made *backend.Database) (*roundFile, error) {
	var db backend.Database
	var err error
	if made != nil {
		db = *made
	} else if db, err = env.Fresh(ctx, "idemlab-claim-", DBName); err != nil {
		return nil, err
	}
	f := &roundFile{db: db, path: db.Target}
	hasTable := made != nil
	if template, ok := tpl[v]; ok && !hasTable {
		if err := os.WriteFile(f.path, template, 0o644); err != nil {
			db.Drop()
			return nil, fmt.Errorf("write fresh database: %w", err)
		}
		f.copied, hasTable = true, true
	}
	if f.st, _, f.release, err = sessions.Open(ctx, db.Backend, db.Target, wc.Options("", busy)); err != nil {
		db.Drop()
		return nil, err
	}
	if !hasTable {
		if err := wc.CreateSchema(ctx, f.st.DB, v); err != nil {
			return nil, errors.Join(err, f.close())
		}
	}
	f.base = time.Now().UnixMilli()
	return f, nil
}

// schemaFeed makes every round's schema on PostgreSQL, with its table, in
// the schedule's order, twenty rounds per commit, on a goroutine of its
// own while the races run: the rounds' tables cost their commits once per
// twenty rounds, and the making overlaps the racing, as SQLite's rounds
// copy a template file.
type schemaFeed struct {
	made   chan feedItem
	cancel context.CancelFunc
	done   chan struct{}
}

type feedItem struct {
	db  backend.Database
	err error
}

func newSchemaFeed(ctx context.Context, srv *backend.Server, sched []Slot) *schemaFeed {
	var ddls []string
	for _, s := range sched {
		if s.Index == 0 {
			ddl, _ := wc.DDL(s.Round.Schema)
			ddls = append(ddls, ddl)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &schemaFeed{made: make(chan feedItem, len(ddls)), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		defer close(f.made)
		for len(ddls) > 0 && ctx.Err() == nil {
			n := min(20, len(ddls))
			dbs, err := srv.FreshMany(ctx, "idemlab-claim", ddls[:n])
			if err != nil {
				f.made <- feedItem{err: err}
				return
			}
			for _, db := range dbs {
				f.made <- feedItem{db: db}
			}
			ddls = ddls[n:]
		}
	}()
	return f
}

// next is the next round's database; nil, nil on SQLite (a nil feed).
func (f *schemaFeed) next() (*backend.Database, error) {
	if f == nil {
		return nil, nil
	}
	it, ok := <-f.made
	if !ok {
		return nil, errors.New("no schema left for the round")
	}
	return &it.db, it.err
}

// stop ends the making and waits for it, so nothing uses the server after
// the run.
func (f *schemaFeed) stop() {
	f.cancel()
	<-f.done
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
	var err error
	if f.copied {
		_, err = f.st.DB.Exec("PRAGMA synchronous=OFF")
	}
	err = errors.Join(err, f.release())
	return errors.Join(err, f.db.Drop())
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
