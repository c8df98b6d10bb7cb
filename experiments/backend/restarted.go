package backend

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"idemlab/experiments/powerlayer"
	"idemlab/experiments/results"
)

// The postmaster a power cut restarts on the rebuilt folder (issue 29):
// the cut SIGKILLs the postmaster on the mount, whose process line
// recordPostmaster writes, and Cut starts a second one on the backing
// folder, on which WAL recovery, the redeliveries and the invariants
// run. Finish stops it once the trial has read what it needs, so its line
// has an end, and names the line in the record (RestartedProcessID); the
// fold checks the line (CheckRestarted).

// RestartedRole ends the label of a restarted postmaster's process line.
const RestartedRole = "postmaster restarted on the rebuilt folder"

// restartedStop is the signal the harness ends a restarted postmaster
// with: an immediate shutdown, as Stop's.
const restartedStop = syscall.SIGQUIT

// Finish stops the server the cut restarted on the rebuilt folder,
// records its process line and names it in o (RestartedProcessID). Call
// it after the trial's last read of the server and before its record is
// written; it does nothing for a server that did not start again, or
// twice. Close stops the server too, unrecorded, on the paths that fail.
func (t *PowerTrial) Finish(o *PowerOutcome) error {
	pm, err := t.Cluster.stopRestarted()
	if pm.PID == 0 || t.rec.Recorder == nil {
		return err
	}
	id, rerr := recordPostmasterAs(pm, t.rec, RestartedRole, restartedStop)
	o.RestartedProcessID = id
	return errors.Join(err, rerr)
}

// stopRestarted stops the postmaster Cut started on the rebuilt folder and
// returns it with its end; a zero Postmaster when none runs.
func (p *PowerCluster) stopRestarted() (Postmaster, error) {
	if p.restarted.PID == 0 || p.stopped || p.PID != p.restarted.PID {
		return Postmaster{}, nil
	}
	err := p.stopServer()
	p.restarted.Ended = time.Now()
	pm := p.restarted
	p.restarted = Postmaster{}
	return pm, err
}

// CheckRestarted checks process line p, which a power trial's record
// names as the postmaster its cut restarted: a postgres server started
// with the trial's settings (as CheckPostmaster's), on the folder the
// cut rebuilt (its -D is the mount server's -backing; not checked when
// backing is empty), started once the cut had ended the postmaster on
// the mount (cutEnded; not checked when zero), and stopped by the
// harness with an immediate shutdown. It returns the first field that is
// wrong, or "".
func CheckRestarted(p results.Process, want PowerSettings, backing string, cutEnded time.Time) (field, text string) {
	if field, text := checkServerLine(p, want, "restarted on the rebuilt folder"); field != "" {
		return field, text
	}
	if d := dataDirOf(p.Argv); backing != "" && d != backing {
		return "argv", fmt.Sprintf("gives -D %q, but the cut rebuilt the mount's backing folder %q, where the server starts again", d, backing)
	}
	if s, _, ok := results.Window(p); ok && !cutEnded.IsZero() && s.Before(cutEnded) {
		return "started_at", fmt.Sprintf("%s, before the cut ended the postmaster on the mount (%s)", p.StartedAt, cutEnded.UTC().Format(time.RFC3339Nano))
	}
	if p.Signal != restartedStop.String() || p.KilledBy != "harness" {
		return "signal", fmt.Sprintf("%q, killed by %q, but the harness stops the restarted server with %s (an immediate shutdown)", p.Signal, p.KilledBy, restartedStop)
	}
	return "", ""
}

// checkRestartedIn is FoldPostmaster's part for the restarted server:
// the record names its line exactly when the server started again (a
// folder that names the cut postmaster's line is new enough to name this
// one), and the line is checked against the mount server's backing
// folder and the cut postmaster's end.
func checkRestartedIn(c *results.Checker, r results.Records, l results.Line, o PowerOutcome, want PowerSettings, cut results.Process, mount *results.Process) {
	switch {
	case o.Started && o.RestartedProcessID == 0 && !r.Since(results.FormatPowerLines):
		return // an older folder names no restarted postmaster
	case o.Started && o.RestartedProcessID == 0:
		c.Obs(l, "pg_power.restarted_process_id", "missing: the server started again on the rebuilt folder, and its postmaster has a process line as the cut one does")
		return
	case !o.Started && o.RestartedProcessID != 0:
		c.Obs(l, "pg_power.restarted_process_id", "%d, but the server did not start again on the rebuilt folder", o.RestartedProcessID)
		return
	case o.RestartedProcessID == 0:
		return
	}
	p, ok := c.Use(r, l, o.RestartedProcessID)
	if !ok {
		return
	}
	backing := ""
	if mount != nil {
		backing, _ = powerlayer.ArgOf(mount.Argv, "-backing")
	}
	_, cutEnded, _ := results.Window(cut)
	if field, text := CheckRestarted(p, want, backing, cutEnded); field != "" {
		c.Proc(p, field, "%s", text)
	}
}
