package pattern

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
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"idemlab/experiments/errclass"
	"idemlab/experiments/powerlayer"
	"idemlab/experiments/seed"
	"idemlab/worker/faultvfs"
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
	// directories, and under torn the trial's seed and 512-byte units.
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

// ProgramPowerParams are the cut's models of program power trial o.
func ProgramPowerParams(s Settings, o Observation) powerfs.Params {
	p := powerfs.Params{Model: modelName(o.Model), DirModel: powerfs.DirPOSIX, Unit: faultvfs.UnitSector}
	if p.Model == powerfs.ModelTorn {
		p.Seed = seed.TornSeed(s.Seed, o.Condition, o.Trial)
	}
	return p
}

// withPowerEnv adds a power condition's setting to a program's
// environment: IDEMLAB_JOURNAL_MODE and IDEMLAB_SYNCHRONOUS, which a
// handler applies to its connection (the handlers topic's protocol).
func withPowerEnv(c Condition, env map[string]string) map[string]string {
	if c.Fault != wp.FaultPower {
		return env
	}
	j, sy := splitPower(c.Power)
	env[protocol.EnvJournalMode], env[protocol.EnvSynchronous] = j, sy
	return env
}

// powerKillAt is where the parent stops a program power trial's first
// delivery: at its point, or for ack-open at the last point the
// discovery delivery announced; nil for the cut after the ACK.
func powerKillAt(o Observation, last string) func(string, int) bool {
	switch {
	case o.Point == PointACK:
		return nil
	case o.Point == PointACKOpen:
		return func(name string, _ int) bool { return last != "" && name == last }
	}
	return func(name string, _ int) bool { return name == o.Point }
}

// ackOpenCut says whether delivery d is a program's first delivery cut at
// ack-open, which counts as its ACK: no redelivery follows it.
func ackOpenCut(pat Pattern, o Observation, d Delivery) bool {
	return pat.File.IsProgram() && o.Kind == KindPower && o.Point == PointACKOpen && d.Number == 1 && d.KilledAt != ""
}

// fsTrial is one program power trial's folders and mount; rec is where
// its servers' process lines go, and pf the record that names them.
type fsTrial struct {
	backing, mnt, store string
	m                   *powerfs.Mount
	rec                 powerlayer.Recording
	pf                  *PowerFS
}

// recordServer records the ended server of m and names it in the trial's
// record.
func (f *fsTrial) recordServer(m *powerfs.Mount) error {
	id, err := powerlayer.RecordServer(m, f.rec)
	if err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	if id != 0 && f.pf != nil {
		f.pf.ServerProcessIDs = append(f.pf.ServerProcessIDs, id)
	}
	return nil
}

func newFSTrial(dir string) *fsTrial {
	return &fsTrial{backing: filepath.Join(dir, "backing"), mnt: filepath.Join(dir, "mnt"), store: filepath.Join(dir, "store")}
}

// start mounts the backing folder with the cut's models; n numbers the
// mount's store, as a trial mounts twice.
func (f *fsTrial) start(ctx context.Context, exe string, p powerfs.Params, n int) error {
	m, err := powerfs.Start(ctx, exe, powerfs.Config{Backing: f.backing, Mountpoint: f.mnt,
		Store: fmt.Sprintf("%s-%d", f.store, n), Params: p})
	if err != nil {
		return fmt.Errorf("%w: mount the trial's folder: %w", errclass.ErrHarness, err)
	}
	f.m = m
	return nil
}

// cut cuts the mount the first delivery ran on and records it.
func (f *fsTrial) cut(o *Observation, p powerfs.Params) error {
	m := f.m
	f.m = nil
	out, err := m.Cut()
	f.pf = &PowerFS{}
	if rerr := f.recordServer(m); rerr != nil {
		return rerr
	}
	if err != nil {
		return fmt.Errorf("%w: power cut: %w", errclass.ErrHarness, err)
	}
	ops, err := powerfs.ReadLogFile(m.Store)
	if err != nil {
		return fmt.Errorf("%w: read the op log: %w", errclass.ErrHarness, err)
	}
	rec := &PowerFS{Params: p, Outcome: out, MountMS: float64(m.MountTook.Microseconds()) / 1000, LogOps: len(ops), ServerProcessIDs: f.pf.ServerProcessIDs}
	if rec.LogSHA256, err = OpsSHA256(ops); err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	if len(ops) <= MaxLoggedOps {
		rec.Log = ops
	}
	o.PowerFS, f.pf = rec, rec
	return nil
}

// close unmounts without a cut, if a mount is up.
func (f *fsTrial) close() error {
	if f == nil || f.m == nil {
		return nil
	}
	m := f.m
	f.m = nil
	return errors.Join(m.Close(), f.recordServer(m))
}

// OpsSHA256 is the SHA-256 of ops as their JSON array, which a record
// keeps of its op log.
func OpsSHA256(ops []powerfs.Op) (string, error) {
	if ops == nil {
		ops = []powerfs.Op{}
	}
	b, err := json.Marshal(ops)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// powerFirst runs the first delivery of a program power trial on its
// mount, cuts, and mounts the rebuilt folder again for the redeliveries.
func (t *trial) powerFirst() ([]delivered, error) {
	p := ProgramPowerParams(t.r.s, *t.o)
	t.fs.rec = powerlayer.Recording{Recorder: t.r.env.Recorder, Scenario: t.r.as, Condition: t.c.Name, Label: fmt.Sprintf("trial %d", t.o.Trial)}
	if err := t.fs.start(t.r.ctx, t.r.env.Runner.Executable, p, 1); err != nil {
		return nil, err
	}
	got, err := t.runProgram(Delivery{Number: 1}, nil)
	if err != nil {
		return nil, err
	}
	if err := t.fs.cut(t.o, p); err != nil {
		return nil, err
	}
	if ackOpenCut(t.r.pat, *t.o, t.o.Deliveries[0]) {
		got.acked = true
	}
	if !got.acked {
		if err := t.fs.start(t.r.ctx, t.r.env.Runner.Executable, powerfs.Params{}, 2); err != nil {
			return nil, err
		}
	}
	return []delivered{got}, nil
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
	if want := ProgramPowerParams(f.st, t.o); r.Params != want {
		f.c.Obs(t.l, "powerfs.params", "the cut was made under %+v, but the trial's models are %+v", r.Params, want)
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
	want, err := powerfs.Plan(r.Log, r.Params)
	if err != nil {
		f.c.Obs(t.l, "powerfs.log", "%v", err)
		return
	}
	if field, text := powerlayer.FirstDiff(want, r.Outcome); field != "" {
		f.c.Obs(t.l, "powerfs.outcome"+field, "differs from what powerfs.Plan derives from the trial's op log and models (%s)", text)
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
		p, ok := f.c.Use(f.rec, t.l, id)
		if !ok {
			continue
		}
		params := r.Params
		if i > 0 {
			params = powerfs.Params{} // the redeliveries' mount cuts nothing
		}
		if field, text := powerlayer.CheckServer(p, filepath.Dir(t.o.DB), params); field != "" {
			f.c.Proc(p, field, "%s", text)
		}
	}
}

// progPowerNotApplicable is the error of a run that asked for the power
// class explicitly for a program on a machine without FUSE.
func progPowerNotApplicable(why string) error {
	return fmt.Errorf("%w: %s.faults: power: not applicable to a handler program: %s", errclass.ErrUsage, Name, why)
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
