package explore

import (
	"fmt"
	"slices"

	"idemlab/experiments/results"
	"idemlab/experiments/seed"
	"idemlab/worker/protocol"
)

// races folds a race condition, round by round.
func (f *folder) races(cf condFold) TimingObserved {
	obs := TimingObserved{Timing: TimingFigures{Histogram: map[string]int{}, RacerEnds: map[string]int{}, PerTrial: []TimingTrial{}}}
	for _, i := range cf.c.Trials {
		es, ok := cf.trials[i]
		if !ok {
			continue
		}
		if len(es) != 2 {
			f.c.Obs(es[0].l, "trial", "%s round %d has %d steps, want the racers and a recovery", cf.c.Name, i, len(es))
			continue
		}
		f.race(cf, i, es[0], es[1], &obs)
	}
	return obs
}

// race folds one round from its two lines: the racers rc, then the
// recovery rv on the file they left.
func (f *folder) race(cf condFold, i int, rc, rv entry, obs *TimingObserved) {
	c, pat := cf.c, cf.pat
	f.rows(pat, rc, StepRacers, c.Racers, "")
	f.rows(pat, rv, StepRecovery, 1, rc.o.DB)
	f.fresh(rc)
	kills := f.raceKills(cf, i, rc)
	if rc.o.Point != "" || rc.o.K != 0 || rv.o.Point != "" || rv.o.K != 0 || rv.o.KillDelaysUS != nil {
		f.c.Obs(rc.l, "", "a race round crashes at no point and kills only racers")
	}
	if len(rc.o.ProcessIDs) != c.Racers || len(rv.o.ProcessIDs) != 1 {
		return
	}
	h := History{Items: f.st.Items}
	t := TimingTrial{Trial: i}
	if c.Kills {
		t.KillDelaysUS = kills
	}
	added, killed := 0, false
	for r, id := range rc.o.ProcessIDs {
		w := procWant{label: fmt.Sprintf("trial %06d racer %02d", i, r), role: RoleRacer, worker: pat.Racer, args: RacerArgs(f.st, pat, rc.o.DB), kill: kills[r] > 0, racer: true}
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
		if f.racer(pat, x, &obs.Timing) {
			added++
		}
	}
	// A killed racer may have committed a job it never reported.
	if jobs := len(rc.o.Rows[TableJobs]); added > jobs || (!killed && added != jobs) {
		f.c.Obs(rc.l, "rows", "%d jobs, but the racers report adding %d", jobs, added)
	}
	rr := f.proc(rv, rv.o.ProcessIDs[0], procWant{label: label(i, StepRecovery), role: RoleRecovery, worker: pat.Worker, args: pat.Args(f.st, files(rv.o))})
	if !rr.ok {
		return
	}
	f.account(pat, rr, rc.o.Rows)
	h.Steps = append(h.Steps, rr.step)
	t.Outcome = pat.Classify(f.st, rv.o.Rows)
	obs.Trials++
	obs.Timing.Landed += t.Landed
	obs.Timing.Histogram[t.Outcome]++
	if len(f.violations(cf, h, ViolationRecord{Trial: i, KillDelaysUS: t.KillDelaysUS, Racers: c.Racers})) > 0 {
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
	window := f.extra.KillWindowUS[c.Pattern]
	kills = seed.RaceKillsUS(f.st.Seed, c.Name, i, c.Racers, window)
	if !slices.Equal(rc.o.KillDelaysUS, kills) {
		f.c.Obs(rc.l, "kill_delays_us", "%v, but seed %d gives round %d of %s %v", rc.o.KillDelaysUS, f.st.Seed, i, c.Name, kills)
	}
	return kills
}

// racer checks what a racer that ran to its end says of itself, counts
// how it ended, and says whether it added the follow-up work.
func (f *folder) racer(pat Pattern, x ran, tf *TimingFigures) bool {
	p := f.process(x)
	cl, err := pat.Claim(x.rep.Result, true)
	if err != nil {
		f.c.Proc(p, "stdout", "the racer's result: %v", err)
		return false
	}
	if cl.Settings != f.st.SQLite {
		f.c.Proc(p, "stdout", "the racer read back %s, the settings require %s", results.Compact(cl.Settings), results.Compact(f.st.SQLite))
	}
	if (cl.Error != "") != (x.step.ExitCode == protocol.ExitWorkerError) || (cl.Error == "") != (cl.ErrorClass == "") {
		f.c.Proc(p, "exit_code", "%d, but the racer reports error %q of class %q", x.step.ExitCode, cl.Error, cl.ErrorClass)
	}
	if cl.Attempts < 1 || cl.Attempts > f.st.MaxAttempts || cl.BusyErrors > cl.Attempts {
		f.c.Proc(p, "stdout", "%d attempts and %d busy errors, but a racer makes 1 to %d attempts", cl.Attempts, cl.BusyErrors, f.st.MaxAttempts)
	}
	end := "ack"
	if cl.ErrorClass != "" {
		end = cl.ErrorClass
	}
	tf.RacerEnds[end]++
	tf.BusyErrors += cl.BusyErrors
	tf.Retries += cl.Attempts - 1
	return cl.WorkAdded
}
