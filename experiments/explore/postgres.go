package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"idemlab/experiments/backend"
	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/receiver"
	"idemlab/experiments/scenario"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// PostgresMaxAttempts is how often a racer on PostgreSQL runs a delivery
// that met 40001 or 40P01: the server's word that the transaction must be
// run again, which a busy file on SQLite is not, so the input's
// max_attempts (SQLite's) does not bound it; the claim scenario's bound.
const PostgresMaxAttempts = 50

// NotOnPostgres is what explore runs on SQLite alone, and why: one line
// each, recorded in the settings and printed by the report.
var NotOnPostgres = []NotRun{
	{"crash-point sweep, crash-after-hits and timed kills", "they crash the worker at each point, which redelivery --backend postgres already does for both redelivery patterns and the pattern scenario does for the article files; explore's are per SQLite file"},
	{"races with killed racers", "a killed racer's backend can hold its row lock after the client died (the lock that outlives its client), which is a measure of its own, not a race"},
	{"batch-rerun-all", "it keeps no table, so the backend changes nothing"},
	{"claim-ttl's probe inside the TTL", "the claim scenario runs the TTL claim on PostgreSQL, rounds 1-8 under each level; its pattern file races here"},
	{"lease-batch and its takeovers", "its workers read and write SQLite files only"},
}

// backendName is the settings' backend by its command-line name.
func (st Settings) backendName() string {
	if st.Backend == "" {
		return store.BackendSQLite
	}
	return st.Backend
}

// requested is what every PostgreSQL session of condition c must read
// back; nil on SQLite.
func (st Settings) requested(c Condition) *store.PGRequested {
	if st.Backend == "" {
		return nil
	}
	l, _ := store.ParseIsolation(c.Isolation)
	return &store.PGRequested{Isolation: l.SQL(), SynchronousCommit: st.SynchronousCommit}
}

// planPostgres plans the exploration on PostgreSQL: the concurrent deliveries
// alone, K racers released at once for every K of the input's racers and
// every pattern that races there, under every isolation level, or the one
// level the input's backend section or --isolation chose.
func (sc Scenario) planPostgres(b backend.Spec, section json.RawMessage, overrides map[string]string) (*plan, error) {
	for _, f := range []string{"trials", "only-trial", "shard"} {
		if _, ok := overrides[f]; ok {
			return nil, fmt.Errorf("--%s: explore on PostgreSQL runs its races alone, which are neither trials nor sharded; leave it out with --backend %s", f, b.Name)
		}
	}
	p, err := sc.planSQLite(section, overrides)
	if err != nil {
		return nil, err
	}
	return &plan{s: postgresSettings(p.s, b, levelsOf(b)), parallel: p.parallel}, nil
}

// levelsOf are the isolation levels a run on b covers: every level, or
// the one the input's backend section or --isolation chose.
func levelsOf(b backend.Spec) []string {
	var levels []string
	for _, l := range store.Isolations {
		if !b.IsolationChosen || l == b.Level() {
			levels = append(levels, l.String())
		}
	}
	return levels
}

// postgresSettings turns SQLite's settings into PostgreSQL's: the
// patterns of sq that race there and their race conditions, one per level
// and K.
func postgresSettings(sq Settings, b backend.Spec, levels []string) Settings {
	st := sq
	st.Trials, st.HitTrials, st.KillTrials = 0, 0, 0
	st.MaxAttempts = PostgresMaxAttempts
	st.SQLite = sqlitedb.Settings{}
	st.Backend, st.SynchronousCommit = b.Name, b.SynchronousCommit
	st.Isolations = append([]string{}, levels...)
	st.NotRun = NotOnPostgres
	st.Patterns, st.Conditions = nil, nil
	rounds := make([]int, st.Rounds)
	for i := range rounds {
		rounds[i] = i
	}
	for _, ps := range sq.Patterns {
		p, _ := LookupPattern(ps.Name)
		if p.racerOn(b.Name) == "" {
			continue
		}
		st.Patterns = append(st.Patterns, settingOf(p))
		if st.Rounds == 0 {
			continue
		}
		for _, level := range levels {
			for _, k := range st.Racers {
				st.Conditions = append(st.Conditions, Condition{
					Name: fmt.Sprintf("%s/%s/%s-%d", p.Name, level, KindRace, k), Pattern: p.Name,
					Kind: KindRace, Trials: slices.Clone(rounds), Racers: k, Isolation: level,
				})
			}
		}
	}
	return st
}

// runRaceOn runs one round on PostgreSQL: a fresh schema with the
// pattern's tables, the racers behind the barrier, then the pattern's
// recovery, each step observed as on SQLite.
func runRaceOn(ctx context.Context, env scenario.Env, srv *backend.Server, st Settings, pat Pattern, c Condition, i int) error {
	db, err := srv.Fresh(ctx, "explore")
	if err != nil {
		return fmt.Errorf("%w: %s round %d: %w", errclass.ErrHarness, c.Name, i, err)
	}
	if err := srv.Setup(ctx, db, pat.Tables(store.Postgres{})); err != nil {
		return fmt.Errorf("%s round %d: %w", c.Name, i, err)
	}
	t := &trialEnv{files: Files{DB: db.Target}}
	if pat.Sends {
		if t.rcv, err = receiver.Start(receiver.Config{Fence: pat.Fenced}); err != nil {
			return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
		t.files.Receiver = t.rcv.URL
	}
	defer t.close()
	racers := make([]harness.Racer, c.Racers)
	var toks []string
	for r := range racers {
		fl, tok := t.sender()
		if tok != "" {
			toks = append(toks, tok)
		}
		racers[r] = harness.Racer{Spec: harness.Spec{
			Scenario: Name, Condition: c.Name, Label: fmt.Sprintf("trial %06d racer %02d", i, r),
			Worker: pat.racerOn(st.Backend), Args: RacerArgs(st, pat, fl),
			Exits: []int{protocol.ExitACK, protocol.ExitWorkerError},
		}}
	}
	procs, err := harness.RunBarrier(ctx, env.Runner, racers)
	if err != nil {
		return fmt.Errorf("%s round %d: %w", c.Name, i, err)
	}
	o := Observation{Scenario: Name, Condition: c.Name, Trial: i, Step: StepRacers, DB: t.files.DB, Receiver: t.files.Receiver, Senders: toks}
	for _, p := range procs {
		o.ProcessIDs = append(o.ProcessIDs, p.Record.ID)
	}
	rows, err := observe(ctx, env, pat, t, o)
	if err != nil {
		return err
	}
	return runRecovery(ctx, env, st, pat, t, c, i, rows)
}
