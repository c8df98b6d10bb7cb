package backend

import (
	"fmt"
	"strings"

	"idemlab/worker/protocol"
)

// A scenario's side of the fsync sweep (syncsweep.go): what it may ask
// (CheckSweepInput), how long a window it sweeps (Bounded), the window its
// discovery trial counts (StartWindow, EndWindow), how its records are
// checked (CheckSweepRecord), and how its reports state it (SweepPhrase,
// SweepSentence). The scenario keeps only which of its conditions sweep
// and its own oracle of a cut.

// MaxSyncBound is the largest bound a sweep takes (--sync-bound).
const MaxSyncBound = 1000

// CheckSweepInput checks a sweep's request: sync_points (points) only with
// the power kind (power; kind is how the scenario spells it), sync_bound
// only with sync_points and from 1 to MaxSyncBound, 0 for none. name
// spells an input field as the user set it.
func CheckSweepInput(power, points bool, bound int, kind string, name func(field string) string) error {
	for _, f := range []struct {
		field string
		set   bool
	}{{"sync_points", points}, {"sync_bound", bound != 0}} {
		if !power && f.set {
			return fmt.Errorf("%s: only with kind %s on --backend postgres (the sweep cuts at the power-loss mount's fsyncs)", name(f.field), kind)
		}
	}
	if bound != 0 && !points {
		return fmt.Errorf("%s: only with %s", name("sync_bound"), name("sync_points"))
	}
	if bound < 0 || bound > MaxSyncBound {
		return fmt.Errorf("%s: %d is not from 1 to %d", name("sync_bound"), bound, MaxSyncBound)
	}
	return nil
}

// Bounded is window w as a sweep with bound n cuts it: at most n fsyncs
// past its start; all of it when n is 0.
func (w SyncWindow) Bounded(n int) SyncWindow {
	if n > 0 && w.To-w.From > n {
		w.To = w.From + n
	}
	return w
}

// StartWindow opens the window of a discovery trial on t: the mount's
// fsyncs once Setup has returned.
func (t *PowerTrial) StartWindow() (*SyncWindow, error) {
	from, err := t.Cluster.Syncs()
	if err != nil {
		return nil, fmt.Errorf("count the mount's fsyncs after Setup: %w", err)
	}
	return &SyncWindow{From: from}, nil
}

// EndWindow closes window w of a discovery trial on t: the mount's fsyncs
// once the delivery's first process has ended.
func (t *PowerTrial) EndWindow(w *SyncWindow) (err error) {
	if w.To, err = t.Cluster.Syncs(); err != nil {
		return fmt.Errorf("count the mount's fsyncs after the first process: %w", err)
	}
	return nil
}

// CheckSweepRecord checks a power trial's sweep fields: window w present
// on the discovery of a condition that sweeps and on no other trial, and
// agreeing with its cut after the delivery (CheckAt); a sweep trial's
// cut at sc's fsync (CheckSweepCut), sc nil for a trial that cuts at no
// fsync of the sweep. o is the trial's cut, nil if it has none; the field
// is named from the trial's record.
func CheckSweepRecord(w *SyncWindow, discovery bool, o *PowerOutcome, s PowerSettings, sc *protocol.SyncCut) (field, text string) {
	if (w != nil) != discovery {
		return "sync_window", fmt.Sprintf("present=%v, but the normal run of a PostgreSQL power condition with sync_points records its window, and no other trial", w != nil)
	}
	switch {
	case o == nil:
		return "", ""
	case discovery:
		field, text = w.CheckAt(s, o.Cut)
		return prefixed("sync_window.", field), text
	case sc != nil:
		field, text = CheckSweepCut(o.Cut, *sc)
		return prefixed("pg_power.", field), text
	}
	return "", ""
}

func prefixed(prefix, field string) string {
	if field == "" {
		return ""
	}
	return prefix + field
}

// SweptCondition is one condition a run swept, and the cuts it made.
type SweptCondition struct {
	Name string
	Cuts int
}

// SweepSentence says, for a run that swept conds, how many cuts the
// sweep made and which conditions' discoveries made no fsync in their
// delivery (fsync off, or synchronous_commit off, whose commits flush
// nothing), so that their sweep cut nowhere: an empty sweep is a result
// to state, not a pass to count. It is false when nothing was swept.
func SweepSentence(conds []SweptCondition) (string, bool) {
	if len(conds) == 0 {
		return "", false
	}
	cuts := 0
	var empty []string
	for _, c := range conds {
		if cuts += c.Cuts; c.Cuts == 0 {
			empty = append(empty, c.Name)
		}
	}
	text := fmt.Sprintf("The fsync sweep made %d cuts at the power-loss mount's fsyncs over %d conditions", cuts, len(conds))
	if len(empty) > 0 {
		text += fmt.Sprintf("; in %d of them the normal run's delivery made no fsync on the mount (fsync off, or commits that flush nothing), so their sweep is empty: %s", len(empty), strings.Join(empty, ", "))
	}
	return text + ".", true
}

// SweepPhrase says what a run's sweep cuts (points, bound), for a
// report's settings table.
func SweepPhrase(points bool, bound int) string {
	if !points {
		return "off (--sync-points)"
	}
	out := "each power condition also cuts just before and just after each fsync of the power-loss mount that its normal run's delivery made (its recorded window)"
	if bound > 0 {
		out += fmt.Sprintf(", the first %d of each window (--sync-bound)", bound)
	}
	return out
}
