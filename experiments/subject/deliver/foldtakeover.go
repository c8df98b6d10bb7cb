package deliver

import (
	"slices"

	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	"idemlab/experiments/subject"
	we "idemlab/worker/explore"
)

// TakeoverTrial is one paused-holder trial.
type TakeoverTrial struct {
	Point      string   `json:"point"`
	Outcome    string   `json:"outcome"`
	Violations []string `json:"violations"`
	// LeaseLost: the paused holder, run on, found its generation
	// superseded and stopped.
	LeaseLost bool `json:"lease_lost"`
	// StaleRefused counts the sends the receiver refused and logged as
	// stale.
	StaleRefused int `json:"stale_refused"`
}

// TakeoverObserved is a takeover condition: one trial per discovered
// point, the holder paused there.
type TakeoverObserved struct {
	Fenced          bool            `json:"fenced"`
	Points          []string        `json:"points"`
	Outcomes        []TakeoverTrial `json:"outcomes"`
	ViolatingPoints []string        `json:"violating_points"`
	LeaseLost       int             `json:"lease_lost"`
	StaleRefused    int             `json:"stale_refused"`
	Timing          TakeoverTiming  `json:"timing" idemlab:"measure"`
}

// TakeoverTiming is what the scheduler decided: how often successors
// found the lease live before the TTL ran out.
type TakeoverTiming struct {
	SuccessorPolls int `json:"successor_polls"`
}

func (f *folder) takeover(cf condFold) TakeoverObserved {
	c, points := cf.c, cf.points
	obs := TakeoverObserved{Fenced: !c.Unfenced, Points: append([]string{}, points...), Outcomes: []TakeoverTrial{}, ViolatingPoints: []string{}}
	for i, pt := range points {
		es, ok := cf.trials[i]
		if !ok {
			continue
		}
		if len(es) != 2 {
			f.c.Obs(es[0].l, "trial", "%s trial %d has %d steps, want the successor and the stale holder", c.Name, i, len(es))
			continue
		}
		t, polls, ok := f.takeoverTrial(cf, i, es[0], es[1])
		if !ok {
			continue
		}
		if len(t.Violations) > 0 {
			obs.ViolatingPoints = append(obs.ViolatingPoints, pt)
		}
		if t.LeaseLost {
			obs.LeaseLost++
		}
		obs.StaleRefused += t.StaleRefused
		obs.Timing.SuccessorPolls += polls
		obs.Outcomes = append(obs.Outcomes, t)
	}
	return obs
}

// takeoverTrial folds one takeover from its two lines: the successor sc,
// then the stale holder sh, paused at the trial's point while sc ran. It
// returns the trial and the successor's polls of the live lease.
func (f *folder) takeoverTrial(cf condFold, i int, sc, sh entry) (TakeoverTrial, int, bool) {
	c, pat, points := cf.c, cf.pat, cf.points
	pt := points[i]
	f.rows(pat, sc, subject.StepSuccessor, 1, "")
	f.rows(pat, sh, subject.StepStale, 1, sc.o.DB)
	f.fresh(sc)
	if sc.o.Point != pt || sc.o.K != 0 || sc.o.KillDelaysUS != nil || sh.o.Point != "" || sh.o.K != 0 || sh.o.KillDelaysUS != nil || sh.o.Receiver != sc.o.Receiver {
		f.c.Obs(sc.l, "point", "%q (k %d), but takeover trial %d pauses at discovered point %q, kills nothing and keeps one receiver", sc.o.Point, sc.o.K, i, pt)
	}
	if len(sc.o.ProcessIDs) != 1 || len(sh.o.ProcessIDs) != 1 {
		return TakeoverTrial{}, 0, false
	}
	fl, fence := files(sc.o), !c.Unfenced
	// The paused holder started first: it is the trial's first process.
	stok, htok := f.senders(pat, sc, 2)[0], f.senders(pat, sh, 1)[0]
	r1 := f.proc(sc, sc.o.ProcessIDs[0], procWant{label: subject.Label(i, subject.StepSuccessor), role: subject.StepSuccessor, worker: pat.Worker, args: pat.Takeover.Args(f.p.Params, fl.As(stok), true, fence, ""), sender: stok})
	f.account(pat, r1, subject.State{})
	r2 := f.proc(sh, sh.o.ProcessIDs[0], procWant{label: subject.Label(i, subject.StepStale), role: subject.StepStale, worker: pat.Worker, args: pat.Takeover.Args(f.p.Params, fl.As(htok), false, fence, pt), sender: htok})
	f.account(pat, r2, subject.State{})
	f.lateSends(cf, i, []entry{sc, sh})
	if !r1.ok || !r2.ok || r1.rep == nil || r2.rep == nil {
		return TakeoverTrial{}, 0, false
	}
	if n := len(r2.rep.Points); n <= i || !slices.Equal(r2.rep.Points[:i+1], points[:i+1]) {
		f.c.Proc(f.process(r2), "stdout", "passed %v, but a holder paused at %q passes %v first", r2.rep.Points, pt, points[:i+1])
	}
	var succ, stale we.LeaseResult
	if results.DecodeStrict(r1.rep.Result, &succ) != nil || results.DecodeStrict(r2.rep.Result, &stale) != nil {
		return TakeoverTrial{}, 0, false
	}
	if !stale.Paused || stale.Fence != fence || succ.Fence != fence || succ.LeaseLost {
		f.c.Proc(f.process(r2), "stdout", "the holder says paused %v, fence %v, and the successor fence %v, lost %v; the trial pauses the holder with fence %v and the successor finishes", stale.Paused, stale.Fence, succ.Fence, succ.LeaseLost, fence)
	}
	t := TakeoverTrial{Point: pt, Outcome: pat.Classify(f.p.Params, sh.o.Rows), LeaseLost: stale.LeaseLost}
	for _, x := range subject.Sends(sh.o.Rows) {
		if x.Outcome == receiver.SendStale {
			t.StaleRefused++
		}
	}
	// The stale holder is not a recovery, so recovery-acknowledged does
	// not apply.
	var invs []subject.Invariant
	for _, inv := range pat.Invariants {
		if inv.Name != "recovery-acknowledged" {
			invs = append(invs, inv)
		}
	}
	h := subject.History{Items: f.p.Params.Items, Steps: []subject.Step{r1.step, r2.step}}
	t.Violations = f.violations(cf, h, ViolationRecord{Trial: i, Point: pt}, invs)
	return t, succ.Polls, true
}
