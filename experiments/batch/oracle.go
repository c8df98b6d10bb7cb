package batch

import (
	"strings"

	"idemlab/experiments/receiver"
	"idemlab/experiments/scenario"
	wb "idemlab/worker/batch"
	"idemlab/worker/protocol"
	"idemlab/worker/wire"
)

// Expect is the oracle over the recorded settings: the model's outcome
// for each condition, once per trial.
func (Scenario) Expect(st Settings) ([]scenario.Expected, error) {
	if err := st.input().Validate(); err != nil {
		return nil, err
	}
	var out []scenario.Expected
	for _, c := range st.Conditions {
		out = append(out, scenario.Expected{Condition: c.Name, Value: Repeat(Expect(st.Params(c)), st.Trials)})
	}
	return out, nil
}

// Expect is the oracle. It does not look anything up: it plays the
// condition's script on an abstract model of the journal (a map of rows
// holding a status and the body they were written for) and of the
// receiver (accept counts, receipts, one armed failure), applying the
// article's rules, and reads the expected figures off the model.
func Expect(p Params) Outcome {
	m := &model{
		p: p, rows: map[wire.Key]mrow{}, accepts: map[wire.Key]int{}, receipts: map[wire.Key]string{},
		keys: map[string]bool{}, armed: Injects(p),
	}
	var out Outcome
	out.Runs, out.Resolved = []RunObs{}, []ResolveObs{}
	usesJournal := false
	for _, a := range Script(p) {
		switch a.Kind {
		case ActRun:
			r := m.run(a)
			r.Run = len(out.Runs) + 1
			out.Runs = append(out.Runs, r)
			out.Steps = r.ExecutedSteps
			usesJournal = usesJournal || a.Mode == wb.ModeJournal
		case ActResolveHeld:
			out.Resolved = append(out.Resolved, m.resolveHeld(a)...)
		}
	}
	byNote := map[[2]string]int{}
	for k, n := range m.accepts {
		byNote[[2]string{k.Item, k.Step}] += n
		out.Accepts += n
	}
	for _, n := range byNote {
		out.Duplicates += n - 1
		if n == 1 {
			out.SentOnceItems++
		}
	}
	out.JournalRows = map[string]int{}
	if usesJournal {
		for _, r := range m.rows {
			out.JournalRows[string(r.status)]++
		}
	}
	return out
}

type mrow struct {
	status wb.Status
	body   string
}

type model struct {
	p        Params
	rows     map[wire.Key]mrow
	accepts  map[wire.Key]int
	receipts map[wire.Key]string
	keys     map[string]bool
	armed    bool
	lastHeld []string
}

// stop ends a modelled run early, as a step error or a crash does.
type stop struct{}

func (m *model) run(a Action) (r RunObs) {
	r = RunObs{JobID: a.Job, Mode: a.Mode, Status: wb.StatusCompleted, Held: []string{}, ExecutedByStep: map[string]int{}}
	journal := a.Mode == wb.ModeJournal
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(stop); !ok {
				panic(v)
			}
		}
		if r.Status == wb.StatusCompleted && len(r.Held) > 0 {
			r.Status = wb.StatusNeedsReview
		}
		m.lastHeld = r.Held
	}()
	for i := 1; i <= m.p.Items; i++ {
		id, body := wb.ItemID(i), wb.ItemBody(i)
		if a.ChangeItem && i == m.p.FailAt {
			body = wb.ChangedBody(i)
		}
	steps:
		for _, step := range wb.Steps {
			k := wire.Key{Job: a.Job, Item: id, Step: step}
			if row, ok := m.rows[k]; journal && ok {
				switch {
				case row.body != body:
					r.Held = append(r.Held, id+":"+step+":"+wb.HeldInputChanged)
					break steps
				case row.status == wb.Succeeded:
					r.SkippedSteps++
					continue
				case wb.IsSideEffect(step):
					if _, found := m.receipts[k]; found && a.Verify {
						m.rows[k] = mrow{wb.Succeeded, body}
						r.SkippedSteps++
						continue
					}
					r.Held = append(r.Held, id+":"+step+":"+wb.HeldUnknown)
					break steps
				}
			}
			m.execute(a, k, body, &r)
		}
	}
	return r
}

func (m *model) execute(a Action, k wire.Key, body string, r *RunObs) {
	journal := a.Mode == wb.ModeJournal
	mark := func(st wb.Status) {
		if journal {
			m.rows[k] = mrow{st, body}
		}
	}
	crash := func(point string) {
		if a.CrashPoint == wb.ItemPoint(point, k.Item) {
			*r = RunObs{Run: r.Run, JobID: r.JobID, Mode: r.Mode, ExitCode: protocol.ExitCrash, Status: StatusCrashed, CrashedAt: a.CrashPoint}
			panic(stop{})
		}
	}
	fail := func(errType string) {
		mark(wb.Failed)
		r.ExitCode, r.Status, r.Failed, r.ErrorType = protocol.ExitStepFailed, wb.StatusFailed, k.Item+":"+k.Step, errType
		panic(stop{})
	}
	mark(wb.InFlight)
	r.ExecutedSteps++
	r.ExecutedByStep[k.Step]++
	if !wb.IsSideEffect(k.Step) {
		mark(wb.Succeeded)
		return
	}
	crash(wb.PointBeforeSend)
	inject := m.armed && k.Item == wb.ItemID(m.p.FailAt)
	if inject {
		m.armed = false
		if m.p.Mode == BeforeAccept {
			fail("ReceiverUnavailable")
		}
	}
	idem := ""
	if a.IdempotencyKey {
		idem = k.String()
	}
	if idem == "" || !m.keys[idem] {
		m.accepts[k]++
		m.receipts[k] = receiver.Receipt(k.Item, wb.Digest(wb.Item{ID: k.Item, Body: body}))
		if idem != "" {
			m.keys[idem] = true
		}
	}
	if inject {
		fail("NoReply")
	}
	crash(wb.PointAfterSendAccepted)
	mark(wb.Succeeded)
}

// resolveHeld models the person: for each item held unknown, the receipt
// found at the receiver decides delivered; resolve then marks the row
// SUCCEEDED or deletes it.
func (m *model) resolveHeld(a Action) []ResolveObs {
	var out []ResolveObs
	for _, h := range m.lastHeld {
		k, ok := parseHeld(a.Job, h)
		if !ok {
			continue
		}
		rc, found := m.receipts[k]
		if found {
			m.rows[k] = mrow{wb.Succeeded, m.rows[k].body}
		} else {
			delete(m.rows, k)
		}
		out = append(out, ResolveObs{Key: k.String(), Delivered: found, Receipt: rc})
	}
	return out
}

// parseHeld reads "item:step:unknown"; other reasons are not for resolve.
func parseHeld(job, held string) (wire.Key, bool) {
	parts := strings.Split(held, ":")
	if len(parts) != 3 || parts[2] != wb.HeldUnknown {
		return wire.Key{}, false
	}
	return wire.Key{Job: job, Item: parts[0], Step: parts[1]}, true
}

// Repeat is the oracle for T trials: the same outcome each time.
func Repeat(o Outcome, trials int) []Outcome {
	out := make([]Outcome, trials)
	for i := range out {
		out[i] = o
	}
	return out
}
