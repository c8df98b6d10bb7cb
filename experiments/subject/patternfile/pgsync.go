package patternfile

// Sync-point cuts of a handler program's power class on PostgreSQL
// (--sync-points with --backend postgres --faults power): the sweep of
// issue 29 as durability runs it (backend.SyncWindow). The condition's
// sync discovery, a power trial on a cluster of its own cut after its ACK
// under keep, records its window (sync_window: the mount's fsyncs once
// Setup had returned, and once the first delivery had ended); each model
// then cuts just before and just after each N of it, on a cluster whose
// mount freezes at its N-th fsync: the parent kills the first delivery
// (harness.Program.KillOn), cuts, and redelivers on the recovered server.
// The oracle is the pattern's invariants, as for every power cut, and the
// server's guarantee (checkPGPower); the fold plans the sweep again from
// the recorded window and checks each cut's logged op at its N.

import (
	"fmt"

	"idemlab/experiments/backend"
	"idemlab/experiments/errclass"
)

// windowFrom starts a PostgreSQL sync discovery's window: the mount's
// fsyncs once Setup has returned.
func (t *trial) windowFrom() error {
	if t.o.Kind != KindSyncDiscovery {
		return nil
	}
	from, err := t.pc.Cluster.Syncs()
	if err != nil {
		return fmt.Errorf("%w: %s: count the mount's fsyncs after Setup: %w", errclass.ErrHarness, t.c.Name, err)
	}
	t.o.SyncWindow = &backend.SyncWindow{From: from}
	return nil
}

// windowTo ends a PostgreSQL sync discovery's window: the mount's fsyncs
// once the first delivery has ended, before the cut.
func (t *trial) windowTo() error {
	w := t.o.SyncWindow
	if w == nil {
		return nil
	}
	var err error
	if w.To, err = t.pc.Cluster.Syncs(); err != nil {
		return fmt.Errorf("%w: %s: count the mount's fsyncs after the first delivery: %w", errclass.ErrHarness, t.c.Name, err)
	}
	return nil
}

// killAtClusterSync has the first delivery of a sync-point cut on a
// PostgreSQL power trial killed as soon as the cluster's mount freezes at
// its fsync, and returns what to call once the delivery has ended; for
// any other trial it does nothing. The program waits on the server, not
// on the mount, so the kill ends it at once; the cut follows
// (cutCluster).
func (t *trial) killAtClusterSync() (ended func()) {
	if _, ok := syncCutOf(*t.o); !ok || t.pc == nil {
		return func() {}
	}
	kill, done := make(chan struct{}), make(chan struct{})
	t.killOn = kill
	go func() {
		select {
		case <-t.pc.Cluster.Frozen():
			close(kill)
		case <-done:
		}
	}()
	return func() {
		close(done)
		t.killOn = nil
	}
}
