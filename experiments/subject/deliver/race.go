package deliver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/receiver"
	"idemlab/experiments/subject"
	"idemlab/worker/protocol"
	"idemlab/worker/store"
)

// race runs one round: the racers behind the barrier on a fresh database
// (raceDB), on SQLite some killed after the release, then the recovery:
// one process on SQLite, the subject's whole recovery on PostgreSQL.
func (r Runner) race(ctx context.Context, cond string, i, n int, kills []int64) error {
	t, err := r.raceDB(ctx, cond, i)
	if err != nil {
		return err
	}
	defer t.close()
	racers := make([]harness.Racer, n)
	var toks []string
	for k := range racers {
		fl, tok := t.sender()
		if tok != "" {
			toks = append(toks, tok)
		}
		racers[k] = harness.Racer{
			Spec: harness.Spec{
				Scenario: r.Scenario, Condition: cond, Label: racerLabel(i, k),
				Worker: r.Subject.RacerOn(r.Params.Backend), Args: r.Subject.RacerArgs(r.Params, fl),
				Exits: []int{protocol.ExitACK, protocol.ExitWorkerError},
			},
			KillAfterRelease: time.Duration(kills[k]) * time.Microsecond,
		}
	}
	procs, err := harness.RunBarrier(ctx, r.Env.Runner, racers)
	if err != nil {
		return fmt.Errorf("%s round %d: %w", cond, i, err)
	}
	o := r.observation(cond, i, subject.StepRacers, t)
	o.Senders = toks
	for _, p := range procs {
		o.ProcessIDs = append(o.ProcessIDs, p.Record.ID)
	}
	if r.Conds[cond].Kills {
		o.KillDelaysUS = kills
	}
	rows, err := r.observe(ctx, t, o)
	if err != nil {
		return err
	}
	if r.Params.Backend != "" {
		return r.recovery(ctx, t, cond, i, rows)
	}
	rec := harness.Spec{
		Scenario: r.Scenario, Condition: cond, Label: fmt.Sprintf("trial %06d recovery", i),
		Worker: r.Subject.Worker, Args: r.Subject.Args(r.Params, t.files),
	}
	// The recovery's observation names no receiver and its step no
	// senders: it is read as the file the racers left.
	ro := subject.Observation{Scenario: r.Scenario, Condition: cond, Trial: i, Step: subject.StepRecovery, DB: t.files.DB}
	_, _, err = r.step(ctx, &trialEnv{files: t.files}, rec, ro)
	return err
}

// racerLabel labels racer k of round i.
func racerLabel(i, k int) string { return fmt.Sprintf("trial %06d racer %02d", i, k) }

// raceDB is a race round's database with the subject's tables, empty, so
// the racers start from one state and the first statement after the
// release is theirs: a prepared file on SQLite; on PostgreSQL a schema of
// its own, and the subject's receiver where it sends.
func (r Runner) raceDB(ctx context.Context, cond string, i int) (*trialEnv, error) {
	if r.Params.Backend == "" {
		dir, err := os.MkdirTemp(r.Env.TempDir, "idemlab-"+r.Scenario+"-")
		if err != nil {
			return nil, fmt.Errorf("%w: create database folder: %w", errclass.ErrHarness, err)
		}
		t := &trialEnv{dir: dir, files: subject.Files{DB: filepath.Join(dir, r.DBName)}}
		if err := r.Subject.Prepare(ctx, t.files.DB); err != nil {
			t.close()
			return nil, fmt.Errorf("%w: %s round %d: prepare the file: %w", errclass.ErrHarness, cond, i, err)
		}
		return t, nil
	}
	srv := r.Env.Backend.WithSpec(r.Conds[cond].Spec)
	db, err := srv.Fresh(ctx, r.Scenario)
	if err != nil {
		return nil, fmt.Errorf("%w: %s round %d: %w", errclass.ErrHarness, cond, i, err)
	}
	if err := srv.Setup(ctx, db, r.Subject.Tables(store.Postgres{})); err != nil {
		return nil, fmt.Errorf("%s round %d: %w", cond, i, err)
	}
	t := &trialEnv{files: subject.Files{DB: db.Target}}
	if r.Subject.Sends {
		if t.rcv, err = receiver.Start(receiver.Config{Fence: r.Subject.Fenced}); err != nil {
			return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
		t.files.Receiver = t.rcv.URL
	}
	return t, nil
}
