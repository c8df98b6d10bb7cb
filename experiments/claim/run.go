package claim

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"idemlab/experiments/harness"
	"idemlab/experiments/scenario"
	wc "idemlab/worker/claim"
	"idemlab/worker/sqlitedb"
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
		Args:  func(i int) []string { return wc.PoolArgs(PoolConfig(st, MemberLabel(i))) },
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
			return fmt.Errorf("%w: record observation: %v", harness.ErrHarness, err)
		}
	}
	return nil
}

func (p *plan) race(ctx context.Context, env scenario.Env, pool *harness.Pool, lines *[]pending) error {
	st := p.s
	busy := time.Duration(st.SQLite.BusyTimeoutMS) * time.Millisecond
	var dir, db string
	var base, last int64
	defer func() {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}()
	for _, s := range Schedule(st) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.Index == 0 {
			var err error
			if dir, err = os.MkdirTemp(env.TempDir, "idemlab-claim-"); err != nil {
				return fmt.Errorf("%w: create database folder: %v", harness.ErrHarness, err)
			}
			db = filepath.Join(dir, DBName)
			if err := prepare(ctx, db, busy, s.Round.Schema); err != nil {
				return fmt.Errorf("%w: %s repetition %d: %v", harness.ErrHarness, s.Condition, s.Repetition, err)
			}
			base = time.Now().UnixMilli()
		}
		// Honest callers stamp the event with the race's own start, kept
		// strictly increasing so that each race's timestamp is its own.
		start := max(time.Now().UnixMilli(), last+1)
		last = start
		if s.Race.Pinned {
			start = base
		}
		who := Members(s.Seq, s.Racers, pool.Size())
		o := Observation{
			Scenario: Name, Condition: s.Condition, Race: s.Seq, Round: s.Round.ID, Variant: s.By,
			Repetition: s.Repetition, RaceName: s.Race.Name, DB: db, BaseMS: base, StartMS: start,
		}
		reqs := make([]string, len(who))
		for k := range who {
			req := RequestFor(s, k, db, start, base)
			o.Racers = append(o.Racers, Racer{Slot: k, Request: req})
			b, err := json.Marshal(req)
			if err != nil {
				return fmt.Errorf("%w: encode request: %v", harness.ErrHarness, err)
			}
			reqs[k] = string(b)
		}
		rd, err := pool.Race(who, reqs)
		if err != nil {
			return fmt.Errorf("%s repetition %d race %s: %w", s.Condition, s.Repetition, s.Race.Name, err)
		}
		if err := checkAnswers(s.Seq, rd); err != nil {
			return fmt.Errorf("%w: %s repetition %d race %s: %v", harness.ErrHarness, s.Condition, s.Repetition, s.Race.Name, err)
		}
		o.ReleasedAtUS = rd.ReleasedAt.UnixMicro()
		o.ReadAtUS = time.Now().UnixMicro()
		row, hasCol, err := readRow(ctx, db, busy, st.Fingerprint)
		if err != nil {
			return fmt.Errorf("%w: %s repetition %d race %s: %v", harness.ErrHarness, s.Condition, s.Repetition, s.Race.Name, err)
		}
		o.Row, o.ClaimedAtColumn = row, hasCol
		*lines = append(*lines, pending{obs: o, members: who})
		if s.Last() {
			os.RemoveAll(dir)
			dir = ""
		}
	}
	return nil
}

// checkAnswers makes sure the members answered this race, and without an
// error; anything else means the pool is out of step.
func checkAnswers(seq int, rd harness.Round) error {
	for _, group := range []struct {
		state string
		lines []string
	}{{wc.StateReady, rd.Ready}, {wc.StateDone, rd.Done}} {
		for _, line := range group.lines {
			var a wc.Answer
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				return fmt.Errorf("answer %q: %v", line, err)
			}
			if a.Error != "" {
				return fmt.Errorf("a racer failed: %s", a.Error)
			}
			if a.Race != seq || a.State != group.state {
				return fmt.Errorf("answer %q, want race %d %s", line, seq, group.state)
			}
		}
	}
	return nil
}

// prepare creates the round's file in WAL mode with the round's layout,
// before any racer opens it.
func prepare(ctx context.Context, path string, busy time.Duration, v wc.SchemaVersion) error {
	db, _, err := sqlitedb.Open(ctx, wc.Options(path, busy))
	if err != nil {
		return err
	}
	if err := wc.CreateSchema(ctx, db, v); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}

func readRow(ctx context.Context, path string, busy time.Duration, fingerprint string) (*wc.Row, bool, error) {
	db, _, err := sqlitedb.Open(ctx, wc.Options(path, busy))
	if err != nil {
		return nil, false, err
	}
	defer db.Close()
	row, ok, err := wc.ReadRow(ctx, db, fingerprint)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return nil, row.HasClaimedAt, nil
	}
	return &row, row.HasClaimedAt, nil
}
