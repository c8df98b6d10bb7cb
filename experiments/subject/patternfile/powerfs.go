package patternfile

// A program's power class (issue 29): a user's handler opens its own
// database, so no cut can be taken from inside idemlab's VFS. Its power
// trials put the trial's database on a power-loss filesystem instead
// (worker/powerfs), one mount per trial, served by a re-executed idemlab
// process; the parent reads only the backing folder.
//
// The cuts of a program's power trial, with the same plan as the built-in
// worker's (PowerPlan):
//
//	a named point  the parent kills the program's group while it waits at
//	               the point, then cuts the mount: nothing it wrote after
//	               the point's announcement reaches the mount, and the
//	               cut decides what of the unsynced rest survives; the
//	               event is delivered again, as after any crash
//	ack            the program exits 0 (its ACK), having closed what it
//	               closes; then the cut
//	ack-open       the program's work is done and its connection still
//	               open: the parent cuts at the last point its discovery
//	               delivery announced (after its commit, before it
//	               closes and exits), and the delivery counts as its ACK,
//	               as a service with a connection pool ACKs before any
//	               close; no redelivery follows
//
// After the cut, the redeliveries run on a fresh mount of the rebuilt
// folder (the same IDEMLAB_DB), which is unmounted without a cut before
// the parent reads the invariants from the backing folder.
//
// Each trial records its op log (the ops, or their SHA-256 and size when
// there are more than MaxLoggedOps), the cut's parameters and its outcome;
// the fold derives the outcome again with powerfs.Plan.

import (
	"fmt"
	"os"
	"path/filepath"

	"idemlab/experiments/errclass"
	"idemlab/experiments/powerlayer"
	"idemlab/experiments/results"
	wp "idemlab/worker/pattern"
	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
)

// MaxLoggedOps is how many ops a trial's record keeps of its op log; a
// longer log is recorded by its SHA-256 and size.
const MaxLoggedOps = 20000

// PowerFS is a program power trial's record of its filesystem cut.
type PowerFS struct {
	// Params are the cut's models: the trial's model, strict POSIX
	// directories, and under torn the trial's seed and the run's unit
	// (Settings.FaultUnit, 512 bytes unless set).
	Params powerfs.Params `json:"params"`
	// Log is the op log up to the cut; LogSHA256 and LogOps describe it
	// (the SHA-256 of the ops' JSON array), and stand alone when the log
	// is longer than MaxLoggedOps.
	Log       []powerfs.Op `json:"log,omitempty"`
	LogSHA256 string       `json:"log_sha256"`
	LogOps    int          `json:"log_ops"`
	// Outcome is what the cut left, as the server planned and rebuilt it.
	Outcome powerfs.Outcome `json:"outcome"`
	// MountMS is how long the trial's first mount took.
	MountMS float64 `json:"mount_ms"`
	// ServerProcessIDs are the lines of raw-processes.jsonl of the
	// trial's mounts' servers: the first delivery's, which made the cut,
	// then the redeliveries', if any; absent in folders made before they
	// were recorded.
	ServerProcessIDs []int `json:"server_process_ids,omitempty"`
}

// withPowerEnv adds a power condition's setting to a program's
// environment: IDEMLAB_JOURNAL_MODE and IDEMLAB_SYNCHRONOUS, which a
// handler applies to its connection (the handlers topic's protocol); on
// PostgreSQL the server's settings are the cluster's, and the program
// gets its connection string alone, as without power.
func withPowerEnv(c Condition, env map[string]string) map[string]string {
	if c.Fault != wp.FaultPower || onServerPower(c) {
		return env
	}
	j, sy := SplitPower(c.Power)
	env[protocol.EnvJournalMode], env[protocol.EnvSynchronous] = j, sy
	return env
}

// ackOpenCut says whether delivery d is a program's first delivery cut at
// ack-open, which counts as its ACK: no redelivery follows it.
func ackOpenCut(pat Pattern, c Condition, o Observation, d Delivery) bool {
	return pat.File.IsProgram() && d.Number == 1 && firstFault(c, o, d.Worker).AckOpen && d.KilledAt != ""
}

// OpsSHA256 is the SHA-256 of ops as their JSON array, which a record
// keeps of its op log (powerfs.LogSHA256, which a cut's outcome names too).
func OpsSHA256(ops []powerfs.Op) (string, error) { return powerfs.LogSHA256(ops) }

// powerFirst runs the first delivery of a program power trial on its
// mount, cuts, and mounts the rebuilt folder again, at the same mount
// point, for the redeliveries.
func (t *trial) powerFirst() ([]delivered, error) {
	p := powerParams(t.r.s, *t.o)
	sc, atSync := syncCutOf(*t.o)
	fs, err := powerlayer.StartCut(t.r.ctx, t.r.env.Runner.Executable, t.backing, t.dir, p, sc.N, sc.After)
	if err != nil {
		return nil, fmt.Errorf("%w: mount the trial's folder: %w", errclass.ErrHarness, err)
	}
	t.fs = fs
	fs.RecordTo(t.recording())
	cutAt := func() (powerlayer.Record, error) { return fs.Cut() }
	if atSync {
		cutAt = t.cutAtSync(fs)
	}
	t.o.DB = filepath.Join(fs.Mount(), DBName)
	got, err := t.runProgram(Delivery{Number: 1}, nil)
	t.killOn = nil
	cut, cerr := cutAt()
	if err != nil {
		return nil, err
	}
	if t.o.PowerFS, err = cutRecord(fs, cut, cerr); err != nil {
		return nil, err
	}
	if ackOpenCut(t.r.pat, t.c, *t.o, t.o.Deliveries[0]) {
		got.acked = true
	}
	if !got.acked {
		if err := fs.Remount(t.r.ctx, t.r.env.Runner.Executable); err != nil {
			return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
	}
	return []delivered{got}, nil
}

// recording is where a power trial's servers' process lines go: the
// mount's, or the postmaster on the mount.
func (t *trial) recording() powerlayer.Recording {
	return powerlayer.Recording{Recorder: t.r.env.Recorder, Scenario: t.r.as, Condition: t.c.Name, Label: fmt.Sprintf("trial %d", t.o.Trial)}
}

// cutRecord is the trial's record of the cut of the mount the first
// delivery ran on, which returned cut and err; the servers are named once
// the trial's mounts are closed (powerlayer.Trial.ServerIDs).
func cutRecord(fs *powerlayer.Trial, cut powerlayer.Record, err error) (*PowerFS, error) {
	if err != nil {
		return nil, fmt.Errorf("%w: power cut: %w", errclass.ErrHarness, err)
	}
	rec := &PowerFS{Params: cut.Params, Outcome: cut.Outcome, MountMS: float64(fs.MountTook().Microseconds()) / 1000, LogOps: len(cut.Log)}
	if rec.LogSHA256, err = OpsSHA256(cut.Log); err != nil {
		return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	if len(cut.Log) <= MaxLoggedOps {
		rec.Log = cut.Log
	}
	return rec, nil
}

// checkPowerFS checks a program power trial's record of the cut: the
// trial's models, the log against its hash, and the outcome against what
// powerfs.Plan derives from the log.
func (f *folder) checkPowerFS(t *trialLine) {
	r := t.o.PowerFS
	if r == nil {
		f.c.Obs(t.l, "powerfs", "missing: a program's power trial records its filesystem cut")
		return
	}
	if want := powerParams(f.st, t.o); r.Params != want {
		f.c.Obs(t.l, "powerfs.params."+r.Params.Differs(want), "the cut was made under %+v, but the trial's models are %+v", r.Params, want)
		return
	}
	if r.Log == nil && r.LogOps > MaxLoggedOps {
		return // recorded by its hash alone: taken on trust
	}
	if len(r.Log) != r.LogOps {
		f.c.Obs(t.l, "powerfs.log_ops", "is %d, but the log holds %d ops", r.LogOps, len(r.Log))
	}
	if h, err := OpsSHA256(r.Log); err != nil || h != r.LogSHA256 {
		f.c.Obs(t.l, "powerfs.log_sha256", "is %s, but the log's ops hash to %s", r.LogSHA256, h)
	}
	if field, text := powerlayer.CheckLogHash(r.Outcome, f.rec.Since(results.FormatPowerEvidence)); field != "" {
		f.c.Obs(t.l, "powerfs."+field, "%s", text)
	}
	if field, text := powerlayer.Check(powerlayer.Record{Params: r.Params, Log: r.Log, Outcome: r.Outcome}); field != "" {
		f.c.Obs(t.l, "powerfs."+field, "%s", text)
		if field == "log" {
			return
		}
	}
	f.checkServers(t, r)
}

// checkServers checks the process lines of the trial's mounts' servers,
// which its record names: the first made the cut under the trial's models,
// a second served the redeliveries. A folder made before they were
// recorded names none.
func (f *folder) checkServers(t *trialLine, r *PowerFS) {
	if len(r.ServerProcessIDs) > 2 {
		f.c.Obs(t.l, "powerfs.server_process_ids", "names %d servers, but a trial mounts at most twice", len(r.ServerProcessIDs))
	}
	for i, id := range r.ServerProcessIDs {
		params := r.Params
		if i > 0 {
			params = powerfs.Params{} // the redeliveries' mount cuts nothing
		}
		powerlayer.FoldServerLine(&f.c, f.rec, t.l, id, filepath.Dir(t.o.DB), params)
	}
}

// ProgPowerNotApplicable is the error of a run that asked for the power
// class explicitly for a program on a machine without FUSE: a plan's error,
// which the edge classes as a usage error (exit 2) as it does every plan's.
func ProgPowerNotApplicable(why string) error {
	return fmt.Errorf("%s.faults: power: not applicable to a handler program: %s", Name, why)
}

// sweepIfMounts clears, at the start of a run whose program power trials
// mount, the powerfs mounts a killed run left, and says so on stderr.
func (p *plan) sweepIfMounts() error {
	for _, c := range p.s.Conditions {
		if c.Fault != wp.FaultPower {
			continue
		}
		for _, pat := range p.s.Patterns {
			if pat.File.Name == c.Pattern && pat.File.IsProgram() {
				if _, err := powerfs.Sweep(os.Stderr); err != nil {
					return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
				}
				return nil
			}
		}
	}
	return nil
}
