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
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"idemlab/worker/powerfs"
)

// Record is what a trial on the filesystem layer keeps of its cut: the
// models, the op log as the server wrote it (no data), and the outcome the
// server rebuilt the folder to, which powerfs.Plan derives again from the
// log and the models alone.
type Record struct {
	Params  powerfs.Params  `json:"params"`
	Log     []powerfs.Op    `json:"log"`
	Outcome powerfs.Outcome `json:"outcome"`
}

// Trial is one mount over a trial's folder.
type Trial struct {
	m          *powerfs.Mount
	mnt, store string
	params     powerfs.Params
}

// startTimeout bounds the wait for the server's "mounted".
const startTimeout = 30 * time.Second

// Start mounts the power-loss filesystem over backing, with its mount
// point and store made in tmp, under the models p. exe is the binary that
// serves it, the running one when empty.
func Start(ctx context.Context, exe, backing, tmp string, p powerfs.Params) (*Trial, error) {
	if why := powerfs.Missing(); why != "" {
		return nil, errors.New(why)
	}
	mnt, err := os.MkdirTemp(tmp, "idemlab-powerfs-mnt-")
	if err != nil {
		return nil, err
	}
	store, err := os.MkdirTemp(tmp, "idemlab-powerfs-store-")
	if err != nil {
		os.Remove(mnt)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	m, err := powerfs.Start(ctx, exe, powerfs.Config{Backing: backing, Mountpoint: mnt, Store: store, Params: p})
	if err != nil {
		_ = powerfs.Detach(mnt)
		os.Remove(mnt)
		os.RemoveAll(store)
		return nil, fmt.Errorf("power layer fs: mount: %w", err)
	}
	return &Trial{m: m, mnt: mnt, store: store, params: p}, nil
}

// Mount is the mount point the trial's processes open their files under.
func (t *Trial) Mount() string { return t.mnt }

// Cut is the power cut: it stops every process on the mount and the
// process groups pgids, has the server rebuild the backing folder under
// the models and unmount, and returns the record: the log read back from
// the store, and the outcome.
func (t *Trial) Cut(pgids ...int) (Record, error) {
	o, err := t.m.Cut(pgids...)
	if err != nil {
		return Record{}, fmt.Errorf("power layer fs: cut: %w", err)
	}
	log, err := powerfs.ReadLogFile(t.store)
	if err != nil {
		return Record{}, fmt.Errorf("power layer fs: read the op log: %w", err)
	}
	return Record{Params: t.params, Log: log, Outcome: o}, nil
}

// Close unmounts, if a cut has not already, and removes the mount point
// and the store; the backing folder stays. Call it on every path: after a
// cut, a failure or a cancelled run, nothing is left mounted.
func (t *Trial) Close() error {
	err := t.m.Close()
	if err == nil {
		err = os.Remove(t.mnt)
	}
	return errors.Join(err, os.RemoveAll(t.store))
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
func Check(r Record) (field, text string) {
	o, err := powerfs.Plan(r.Log, r.Params)
	if err != nil {
		return "log", err.Error()
	}
	if f := powerfs.FirstDiff(o, r.Outcome); f != "" {
		return "outcome" + f, "the log replayed (powerfs.Plan) gives another cut (-plan +recorded):\n" + cmp.Diff(o, r.Outcome, cmpopts.EquateEmpty())
	}
	return "", ""
}
