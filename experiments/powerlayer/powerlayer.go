// Package powerlayer starts one power-loss mount (worker/powerfs) for one
// trial and cuts it: the shared helper of every scenario whose power cuts
// are made by the filesystem (engine.LayerFS) rather than by the VFS.
//
// A trial's folder is the mount's backing folder; the mount point and the
// server's store are folders of their own beside it, on the same
// filesystem. The trial's processes open their files through Mount(); the
// parent reads the backing folder. A parent may also open a file on the
// mount (it does not serve it, so it cannot deadlock on it: golang/go#21014
// is the serving process's), as durability's held reader does.
package powerlayer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"idemlab/experiments/harness"
	"idemlab/experiments/owner"
	"idemlab/experiments/results"
	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
)

// Record is what a trial on the filesystem layer keeps of its cut: the
// models, the op log as the server wrote it (no data), and the outcome the
// server rebuilt the folder to, which powerfs.Plan derives again from the
// log and the models alone.
type Record struct {
	Params  powerfs.Params  `json:"params"`
	Log     []powerfs.Op    `json:"log"`
	Outcome powerfs.Outcome `json:"outcome"`
	// ServerProcessID is the line of raw-processes.jsonl that records
	// the mount's server; 0 in folders made before it was recorded.
	ServerProcessID int `json:"server_process_id,omitempty"`
}

// Trial is one mount over a trial's folder, and after its cut, if the
// caller asks (Remount), a second one over the rebuilt folder at the same
// mount point.
type Trial struct {
	m                        *powerfs.Mount
	backing, mnt, store, tmp string
	params                   powerfs.Params
	rec                      Recording
	// mountTook is how long the first mount took.
	mountTook time.Duration
	// serverIDs are the process lines of the ended mounts' servers, in
	// order; recorded says the current mount's server has its line.
	serverIDs []int
	recorded  bool
	closed    bool
}

// Recording says where the server's process line goes: the run's
// recorder, and the scenario, condition and label the line carries. A
// zero Recording records nothing.
type Recording struct {
	Recorder                   *results.Recorder
	Scenario, Condition, Label string
}

// RecordTo has the server recorded in raw-processes.jsonl when it ends,
// as every process the run starts is.
func (t *Trial) RecordTo(r Recording) { t.rec = r }

// startTimeout bounds the wait for the server's "mounted".
const startTimeout = 30 * time.Second

// MountPrefix and StorePrefix start the names of a trial's mount point
// and its server's store, each made with its owner's record
// (owner.MkdirTemp), so that a run after a SIGKILLed one removes them
// (owner.SweepTemp).
const (
	MountPrefix = "idemlab-powerfs-mnt-"
	StorePrefix = "idemlab-powerfs-store-"
)

// Start mounts the power-loss filesystem over backing, with its mount
// point and store made in tmp, under the models p. exe is the binary that
// serves it, the running one when empty.
func Start(ctx context.Context, exe, backing, tmp string, p powerfs.Params) (*Trial, error) {
	return StartCut(ctx, exe, backing, tmp, p, 0, false)
}

// StartCut is Start with a cut at a sync: the mount freezes at its
// cutSync-th fsync (of a file or a directory, by any process), before it
// reaches the disk or, with after, after it, and says so on Cuts; the
// caller then makes the Cut. A cutSync of 0 cuts at no sync.
func StartCut(ctx context.Context, exe, backing, tmp string, p powerfs.Params, cutSync int, after bool) (*Trial, error) {
	if why := powerfs.Missing(); why != "" {
		return nil, errors.New(why)
	}
	mnt, err := owner.MkdirTemp(tmp, MountPrefix)
	if err != nil {
		return nil, err
	}
	store, err := owner.MkdirTemp(tmp, StorePrefix)
	if err != nil {
		os.Remove(mnt)
		_ = owner.Forget(mnt)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	m, err := powerfs.Start(ctx, exe, powerfs.Config{Backing: backing, Mountpoint: mnt, Store: store, Params: p,
		CutSync: cutSync, CutAfter: after})
	if err != nil {
		_ = powerfs.Detach(mnt)
		os.Remove(mnt)
		_ = owner.Forget(mnt)
		_ = owner.RemoveAll(store)
		return nil, fmt.Errorf("power layer fs: mount: %w", err)
	}
	return &Trial{m: m, backing: backing, mnt: mnt, store: store, tmp: tmp, params: p, mountTook: m.MountTook}, nil
}

// Remount mounts the backing folder, as the cut rebuilt it, again at the
// same mount point, with no models (it is closed, never cut), so later
// processes open the same paths; call it after Cut. The first mount's
// op log is gone with its store.
func (t *Trial) Remount(ctx context.Context, exe string) error {
	if err := t.recordServer(); err != nil {
		return err
	}
	if err := os.RemoveAll(t.store); err != nil {
		return err
	}
	store, err := os.MkdirTemp(t.tmp, "idemlab-powerfs-store-")
	if err != nil {
		return err
	}
	t.store = store
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	m, err := powerfs.Start(ctx, exe, powerfs.Config{Backing: t.backing, Mountpoint: t.mnt, Store: store})
	if err != nil {
		_ = powerfs.Detach(t.mnt)
		return fmt.Errorf("power layer fs: mount again: %w", err)
	}
	t.m, t.recorded = m, false
	return nil
}

// MountTook is how long the trial's first mount took.
func (t *Trial) MountTook() time.Duration { return t.mountTook }

// ServerIDs are the process lines of the trial's mounts' servers that have
// ended and been recorded, the first mount's first.
func (t *Trial) ServerIDs() []int { return t.serverIDs }

// Cuts delivers the sync cut the trial was started with (StartCut), when
// a process reaches it.
func (t *Trial) Cuts() <-chan powerfs.CutEvent { return t.m.Cuts() }

// Mount is the mount point the trial's processes open their files under.
func (t *Trial) Mount() string { return t.mnt }

// Cut is the power cut: it stops every process on the mount and the
// process groups pgids, has the server rebuild the backing folder under
// the models and unmount, and returns the record: the log read back from
// the store, and the outcome.
func (t *Trial) Cut(pgids ...int) (Record, error) {
	o, err := t.m.Cut(pgids...)
	if rerr := t.recordServer(); rerr != nil {
		return Record{}, errors.Join(err, rerr)
	}
	if err != nil {
		return Record{}, fmt.Errorf("power layer fs: cut: %w", err)
	}
	log, err := powerfs.ReadLogFile(t.store)
	if err != nil {
		return Record{}, fmt.Errorf("power layer fs: read the op log: %w", err)
	}
	r := Record{Params: t.params, Log: log, Outcome: o}
	if len(t.serverIDs) > 0 {
		r.ServerProcessID = t.serverIDs[0]
	}
	return r, nil
}

// ServerRole ends the label of a server's process line.
const ServerRole = "power-loss server"

// recordServer appends the current mount's server's process line once it
// has ended, once.
func (t *Trial) recordServer() error {
	if t.recorded {
		return nil
	}
	id, err := RecordServer(t.m, t.rec)
	if id != 0 {
		t.serverIDs, t.recorded = append(t.serverIDs, id), true
	}
	return err
}

// RecordServer appends the process line of m's server to r's recorder,
// once the server has been reaped, and returns the line's id: 0 when r
// records nothing or the server has not ended.
func RecordServer(m *powerfs.Mount, r Recording) (int, error) {
	if r.Recorder == nil {
		return 0, nil
	}
	end, st, killed, ok := m.Ended()
	if !ok {
		return 0, nil
	}
	started, ended, ms := harness.Window(m.Started(), end)
	argv := m.Argv()
	p := results.ProcessRecord{Scenario: r.Scenario, Condition: r.Condition,
		Label: strings.TrimSpace(r.Label + " " + ServerRole), Worker: powerfs.WorkerName,
		Argv: argv, Env: map[string]string{}, PID: m.Pid(),
		StartedAt: started, EndedAt: ended, DurationMS: ms, ExitCode: -1, Stderr: m.Stderr(),
		ExecutableSHA256: r.Recorder.ExecutableSHA256("", argv[0])}
	if st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.Signal = ws.Signal().String()
		} else {
			p.ExitCode = st.ExitCode()
		}
	}
	if killed {
		p.KilledBy = "harness"
	}
	if err := r.Recorder.AppendProcess(&p); err != nil {
		return 0, fmt.Errorf("power layer fs: record the server: %w", err)
	}
	return p.ID, nil
}

// Close unmounts, if a cut has not already, and removes the mount point
// and the store; the backing folder stays. Call it on every path: after a
// cut, a failure or a cancelled run, nothing is left mounted. A second
// Close does nothing.
func (t *Trial) Close() error {
	if t == nil || t.closed {
		return nil
	}
	t.closed = true
	err := t.m.Close()
	if err == nil {
		err = errors.Join(os.Remove(t.mnt), owner.Forget(t.mnt))
	}
	return errors.Join(err, t.recordServer(), owner.RemoveAll(t.store))
}

// Sweep clears the stale mounts a killed harness left (powerfs.Sweep),
// saying on w what it unmounted; a run on the fs layer calls it first.
func Sweep(w io.Writer) error {
	_, err := powerfs.Sweep(w)
	return err
}

// Check derives the cut again from the record: powerfs.Plan of its log
// under its models must give its outcome. It returns the first field that
// differs, named as the record names it, or "" when they agree.
//
// An outcome recorded without the log's hash (a folder of format 8 or
// older) is not held to it: CheckLogHash, which every fold calls, asks a
// newer one for it.
func Check(r Record) (field, text string) {
	o, err := powerfs.Plan(r.Log, r.Params)
	if err != nil {
		return "log", err.Error()
	}
	if r.Outcome.LogSHA256 == "" {
		o.LogSHA256 = ""
	}
	if f, text := FirstDiff(o, r.Outcome); f != "" {
		return "outcome" + f, "the log replayed (powerfs.Plan) gives another cut: outcome" + f + ": " + text
	}
	return "", ""
}

// CheckLogHash says whether cut outcome o names the SHA-256 of the op log
// it was planned from, which Check holds the recorded log to: recorded
// says the folder is new enough to name it (results.FormatPowerEvidence).
// It returns the field that is wrong ("outcome.log_sha256"), or "".
func CheckLogHash(o powerfs.Outcome, recorded bool) (field, text string) {
	if o.LogSHA256 == "" && recorded {
		return "outcome.log_sha256", "missing: the mount's server names the SHA-256 of the op log it planned the cut from, which the recorded log must hash to"
	}
	return "", ""
}

// CheckServer checks the process line p that a trial's record names as
// its mount's server: the server worker, serving mount under the models
// params (not checked when params names no model), ended by itself with
// exit 0 (a server that crashed or had to be killed did not make the cut
// or the unmount it was asked for). It returns the first field that is
// wrong, or "".
func CheckServer(p results.Process, mount string, params powerfs.Params) (field, text string) {
	if p.Worker != powerfs.WorkerName {
		return "worker", fmt.Sprintf("is %q, but the record names it as its mount's server (%s)", p.Worker, powerfs.WorkerName)
	}
	want := map[string]string{"-mnt": mount, "-model": params.Model, "-dir-model": params.DirModel}
	flags := []string{"-mnt", "-model", "-dir-model"}
	if params.Model == "" {
		flags = flags[:1]
	}
	for _, flag := range flags {
		if got, ok := ArgOf(p.Argv, flag); !ok || got != want[flag] {
			return "argv", fmt.Sprintf("gives %s %q, but the trial's mount and models say %q", flag, got, want[flag])
		}
	}
	if p.ExitCode != 0 || p.Signal != "" {
		by := ""
		if p.KilledBy != "" {
			by = ", killed by the " + p.KilledBy
		}
		return "exit_code", fmt.Sprintf("%s%s: the server did not end by itself after the cut or the unmount", protocol.Ending(p.ExitCode, p.Signal, p.Stderr), by)
	}
	return "", ""
}

// ArgOf finds the value after flag in a command line argv.
func ArgOf(argv []string, flag string) (string, bool) {
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == flag {
			return argv[i+1], true
		}
	}
	return "", false
}

// emptyJSON says whether a DiffPaths value is nothing: absent, null or an
// empty list or object.
func emptyJSON(v string) bool {
	return v == "(absent)" || v == "null" || v == "[]" || v == "{}"
}

// FirstDiff names the first field where a cut's recorded outcome, got,
// differs from what its op log derives, want (powerfs.Plan): its JSON path
// from the outcome (".files[0].decisions"; a list one side has more of is
// named whole, ".entries"; "." for the whole), and what each side holds
// there; "" when they agree. An empty list and none are the same cut.
// Both folds that derive a cut again, durability's fs layer (Check) and a
// program's power trial, name a tampered field with it.
func FirstDiff(want, got powerfs.Outcome) (field, text string) {
	for _, d := range results.DiffPaths("", want, got) {
		if emptyJSON(d.A) && emptyJSON(d.B) {
			continue
		}
		if field = d.Path; field == "" {
			field = "."
		}
		return field, fmt.Sprintf("derived %s, recorded %s", d.A, d.B)
	}
	return "", ""
}
