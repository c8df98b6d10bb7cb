package deliver

import (
	"slices"

	"idemlab/experiments/backend"
	"idemlab/experiments/results"
	"idemlab/experiments/seed"
	"idemlab/experiments/subject"
	"idemlab/experiments/subject/builtin"
	"idemlab/worker/protocol"
)

// races folds a race condition, round by round.
func (f *folder) races(cf condFold) TimingObserved {
	obs := TimingObserved{Timing: TimingFigures{Histogram: map[string]int{}, RacerEnds: map[string]int{}, PerTrial: []TimingTrial{}}}
	for _, i := range cf.c.Indices {
		es, ok := cf.trials[i]
		if !ok {
			continue
		}
		if len(es) < 2 {
			f.c.Obs(es[0].l, "trial", "%s round %d has %d steps, want the racers and a recovery", cf.c.Name, i, len(es))
			continue
		}
		f.race(cf, i, es[0], es[1:], &obs)
	}
	return obs
}

// race folds one round from its lines: the racers rc, then the recovery
// steps rest on the database they left.
func (f *folder) race(cf condFold, i int, rc entry, rest []entry, obs *TimingObserved) {
	c, pat := cf.c, cf.pat
	f.rows(pat, rc, subject.StepRacers, c.Racers, "")
	f.fresh(rc)
	kills := f.raceKills(cf, i, rc)
	if rc.o.Point != "" || rc.o.K != 0 {
		f.c.Obs(rc.l, "", "a race round crashes at no point and kills only racers")
	}
	if len(rc.o.ProcessIDs) != c.Racers {
		return
	}
	h := subject.History{Items: f.p.Params.Items}
	t := TimingTrial{Trial: i}
	if c.Kills {
		t.KillDelaysUS = kills
	}
	added, killed := 0, false
	racer := pat.RacerOn(f.p.Params.Backend)
	toks := f.senders(pat, rc, 1)
	for r, id := range rc.o.ProcessIDs {
		w := procWant{label: racerLabel(i, r), role: subject.RoleRacer, worker: racer, args: pat.RacerArgs(f.p.Params, files(rc.o).As(toks[r])), kill: kills[r] > 0, racer: true, sender: toks[r]}
		x := f.proc(rc, id, w)
		h.Steps = append(h.Steps, x.step)
		if kills[r] > 0 {
			obs.Timing.Kills++
		}
		if !x.ok {
			continue
		}
		if x.step.Signal != "" {
			t.Landed++
			killed = true
			obs.Timing.RacerEnds["killed"]++
			continue
		}
		if f.racer(pat, c, x, &obs.Timing) {
			added++
		}
	}
	// A killed racer may have committed a job it never reported. A
	// pattern without jobs (the journal) counts its sends instead.
	if jobs, ok := rc.o.Rows[builtin.TableJobs]; ok && (added > len(jobs) || (!killed && added != len(jobs))) {
		f.c.Obs(rc.l, "rows", "%d jobs, but the racers report adding %d", len(jobs), added)
	}
	steps, ok := f.recovery(cf, i, rc, rest)
	if !ok || len(steps) == 0 {
		return
	}
	h.Steps = append(h.Steps, steps...)
	f.lateSends(cf, i, append([]entry{rc}, rest...))
	t.Outcome = pat.Classify(f.p.Params, rest[len(rest)-1].o.Rows)
	obs.Trials++
	obs.Timing.Landed += t.Landed
	obs.Timing.Histogram[t.Outcome]++
	if len(f.violations(cf, h, ViolationRecord{Trial: i, KillDelaysUS: t.KillDelaysUS, Racers: c.Racers}, pat.Invariants)) > 0 {
		obs.Timing.ViolatingTrials++
	}
	obs.Timing.PerTrial = append(obs.Timing.PerTrial, t)
}

// raceKills recomputes a round's kills from the seed and checks the
// recorded ones against them; a round without kills records none.
func (f *folder) raceKills(cf condFold, i int, rc entry) []int64 {
	c := cf.c
	kills := make([]int64, c.Racers)
	if !c.Kills {
		if rc.o.KillDelaysUS != nil {
			f.c.Obs(rc.l, "kill_delays_us", "%v, but %s kills no racer", rc.o.KillDelaysUS, c.Name)
		}
		return kills
	}
	window := f.window(c.Subject, rc.l)
	kills = seed.RaceKillsUS(f.p.Seed, c.Name, i, c.Racers, window)
	if !slices.Equal(rc.o.KillDelaysUS, kills) {
		f.c.Obs(rc.l, "kill_delays_us", "%v, but seed %d gives round %d of %s %v", rc.o.KillDelaysUS, f.p.Seed, i, c.Name, kills)
	}
	return kills
}

// racer checks what a racer of condition c that ran to its end says of
// itself, counts how it ended, and says whether it added the follow-up
// work.
func (f *folder) racer(pat subject.Subject, c Condition, x ran, tf *TimingFigures) bool {
	p := f.process(x)
	cl, err := pat.Claim(x.rep.Result, true)
	if err != nil {
		f.c.Proc(p, "stdout", "the racer's result: %v", err)
		return false
	}
	if cl.Settings != f.p.Params.SQLite {
		f.c.Proc(p, "stdout", "the racer read back %s, the settings require %s", results.Compact(cl.Settings), results.Compact(f.p.Params.SQLite))
	}
	if msg := backend.CheckReadBack(c.Spec.Requested(), cl.Postgres); msg != "" {
		f.c.Proc(p, "stdout", "%s", msg)
	}
	if (cl.Error != "") != (x.step.ExitCode == protocol.ExitWorkerError) || (cl.Error == "") != (cl.ErrorClass == "") {
		f.c.Proc(p, "exit_code", "%d, but the racer reports error %q of class %q", x.step.ExitCode, cl.Error, cl.ErrorClass)
	}
	if cl.Attempts < 1 || cl.Attempts > f.p.Params.MaxAttempts || cl.BusyErrors > cl.Attempts || cl.SerializationErrors < 0 {
		f.c.Proc(p, "stdout", "%d attempts, %d busy errors and %d serialization errors, but a racer makes 1 to %d attempts", cl.Attempts, cl.BusyErrors, cl.SerializationErrors, f.p.Params.MaxAttempts)
	}
	end := "ack"
	switch {
	case cl.ErrorClass != "":
		end = cl.ErrorClass
	case cl.End != "":
		end = cl.End
	}
	tf.RacerEnds[end]++
	tf.BusyErrors += cl.BusyErrors
	tf.SerializationErrors += cl.SerializationErrors
	tf.Retries += cl.Attempts - 1
	return cl.WorkAdded
}
