package patternfile

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wp "idemlab/worker/pattern"
	"idemlab/worker/store"
)

// programFiles hashes every argument of the command that names a file
// under the pattern file's folder, through files, so the folder carries
// the program's source and verify checks it.
func programFiles(files scenario.Files, dir string, argv []string) map[string]string {
	out := map[string]string{}
	for _, a := range argv[1:] {
		if b, err := files.ReadFile(filepath.Join(dir, a)); err == nil {
			out[a] = results.SHA256Hex(b)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ProgramEnv is the environment of one delivery of a program as the fold
// derives it from the record: on PostgreSQL from the session the recorded
// target asks for, which store.ParseSession reads back in folders of every
// format; a target it cannot read gives an empty connection string, which
// no recorded environment has.
func ProgramEnv(s Settings, o Observation, d Delivery) map[string]string {
	var pg *store.Session
	if s.Backend == store.BackendPostgres {
		if sess, err := store.ParseSession(o.DB); err == nil {
			pg = &sess
		}
	}
	return programEnv(s, o, d, pg)
}

// programEnv is the environment of one delivery of a program on session
// pg (nil on SQLite). On SQLite the program gets the file's path in
// IDEMLAB_DB, as it always did; on PostgreSQL it gets
// IDEMLAB_BACKEND=postgres and the session's connection string, as libpq
// reads one, in IDEMLAB_DSN, whose search_path is the trial's own schema,
// and no IDEMLAB_DB.
func programEnv(s Settings, o Observation, d Delivery, pg *store.Session) map[string]string {
	env := map[string]string{
		wp.EnvEventID: s.EventID, wp.EnvDelivery: strconv.Itoa(d.Number), wp.EnvWorker: strconv.Itoa(d.Worker),
		wp.EnvNowOffsetMS: strconv.FormatInt(d.OffsetMS, 10), wp.EnvDB: o.DB, wp.EnvReceiver: ReceiverOf(o, d),
		wp.EnvPointsFD: strconv.Itoa(harness.ProgramPointsFD),
	}
	if s.Backend == store.BackendPostgres {
		delete(env, wp.EnvDB)
		env[wp.EnvBackend], env[wp.EnvDSN] = s.Backend, ""
		if pg != nil {
			env[wp.EnvDSN] = pg.ProgramDSN()
		}
	}
	return env
}

// firstProgram runs a program trial's first delivery, or its racers: held
// at a first point "ready" and released together when discovery showed one,
// else started together.
func (t *trial) firstProgram() ([]delivered, error) {
	if !t.o.race() {
		got, err := t.runProgram(Delivery{Number: 1}, nil)
		if err != nil {
			return nil, err
		}
		return []delivered{got}, nil
	}
	var gate *harness.Gate
	if t.r.ready {
		gate = harness.NewGate(t.o.Racers)
	}
	out := make([]delivered, t.o.Racers)
	ds := make([]Delivery, t.o.Racers)
	errs := make([]error, t.o.Racers)
	var wg sync.WaitGroup
	for i := range t.o.Racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ds[i], out[i], errs[i] = t.startProgram(Delivery{Number: 1, Worker: i}, gate)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t.o.Deliveries = append(t.o.Deliveries, ds...)
	return out, nil
}

// runProgram runs one delivery of the program and records it in order.
func (t *trial) runProgram(d Delivery, gate *harness.Gate) (delivered, error) {
	d, got, err := t.startProgram(d, gate)
	if err != nil {
		return got, err
	}
	t.o.Deliveries = append(t.o.Deliveries, d)
	return got, nil
}

func (t *trial) startProgram(d Delivery, gate *harness.Gate) (Delivery, delivered, error) {
	pat := t.r.pat
	p := harness.Program{
		Scenario: t.r.as, Condition: t.c.Name, Label: fmt.Sprintf("trial %d delivery %d.%d", t.o.Trial, d.Number, d.Worker),
		Argv: pat.File.Command, Dir: t.r.progDir, Env: withPowerEnv(t.c, programEnv(t.r.s, *t.o, d, t.db.Session)),
		Timeout: time.Duration(pat.TimeoutMS) * time.Millisecond, Gate: gate,
	}
	if d.Number == 1 {
		p.KillAt = firstFault(t.c, *t.o, d.Worker).killAt(t.r.last)
		p.KillOn = t.killOn
		if delay := time.Duration(t.o.KillUS) * time.Microsecond; t.r.fromFirst {
			p.KillAfterFirst = delay
		} else {
			p.KillAfter = delay
		}
	}
	var run *harness.ProgramRun
	var err error
	acked := false
	if t.br != nil {
		d, run, acked, err = t.consumeProgram(d)
	} else {
		run, err = t.r.env.Runner.RunProgram(t.r.ctx, p)
	}
	if errors.Is(err, harness.ErrCannotStart) {
		return d, delivered{}, fmt.Errorf("%w: pattern %s: command %w; fix the command (it runs in %s)", errclass.ErrUsage, pat.File.Name, err, pat.Dir)
	}
	if err != nil {
		return d, delivered{}, fmt.Errorf("%s trial %d: %w", t.c.Name, t.o.Trial, err)
	}
	if t.o.Kind == KindDiscovery && (run.Record.ExitCode == 126 || run.Record.ExitCode == 127) {
		return d, delivered{}, fmt.Errorf("%w: pattern %s: command %q cannot start: it exited %d%s; nothing was run", errclass.ErrUsage, pat.File.Name, pat.File.Command, run.Record.ExitCode, tail(run.Record.Stderr))
	}
	if cannotRun(*t.o, d, run) {
		return d, delivered{}, fmt.Errorf("%w: pattern %s: command %q exited %d in the discovery delivery (no faults) before announcing any point%s; fix the command (it runs in %s); nothing was run", errclass.ErrUsage, pat.File.Name, pat.File.Command, run.Record.ExitCode, tail(run.Record.Stderr), pat.Dir)
	}
	d.ProcessID, d.Points, d.PointsUS, d.KilledAt, d.Stray, d.TimedOut = run.Record.ID, run.Points, run.PointsUS, run.KilledAt, run.Stray, run.TimedOut
	d.SocketCut = run.SocketCut
	if d.Points == nil {
		d.Points = []string{}
	}
	if t.br == nil {
		acked = ackedRecord(run.Record)
	}
	return d, delivered{acked: acked, points: run.Points, pointsUS: run.PointsUS, durationMS: run.Record.DurationMS}, nil
}

// cannotRun says whether a program's discovery delivery, which runs with
// no fault on a fresh database, exited non-zero of its own before
// announcing any point: a program that cannot run its script (python3
// missing.py exits 2), which no trial could judge.
func cannotRun(o Observation, d Delivery, run *harness.ProgramRun) bool {
	return o.Kind == KindDiscovery && d.Number == 1 && len(run.Points) == 0 && len(run.Stray) == 0 &&
		run.Record.Signal == "" && run.Record.ExitCode != 0 && !run.TimedOut && run.Record.KilledBy == ""
}
