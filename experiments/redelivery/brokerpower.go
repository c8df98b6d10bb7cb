package redelivery

// The broker's power cut (issues 30 and 29): the broker's store folder on
// a power-loss filesystem (worker/powerfs), one mount per condition,
// served by a re-executed idemlab; the broker is the idemlab-nats process
// that uses the mount. A cut SIGKILLs every process on the mount (the
// broker's group), rebuilds the backing folder under the condition's data
// model (drop, keep or torn) and directory model, and the broker is started again on a
// fresh mount of the rebuilt folder, where the parent reads its word on
// the stream and the consumer before it declares them again, as a
// service does when it starts.
//
// The oracle predicts from the condition's settings alone: under the
// default sync_interval (two minutes) nats-server syncs nothing within a
// trial, so everything since the mount's start is lost, the stream's
// definition too, and the publish it acknowledged with it (the shape of
// Jepsen's NATS 2.12.1 finding, on one node); under sync_interval always
// it syncs each message before its publish ack and the consumer's state
// file before it replaces it, so nothing acknowledged is lost, where an
// fsync of a file also makes its name durable (ext4's data=ordered). Under
// strict POSIX directories it is lost all the same: nats-server syncs the
// stream's own folder, never the folders above it that it made.
// The fold derives from the op log whether the publish and the ack were
// durable at the cut, and the broker's word after the restart must agree
// with both.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/broker"
	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/powerlayer"
	"idemlab/experiments/scenario"
	"idemlab/experiments/seed"
	"idemlab/worker/faultvfs"
	"idemlab/worker/natswire"
	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
	wr "idemlab/worker/redelivery"
)

// FlagBrokerPower adds BrokerPowerConditions to a --broker nats run.
const FlagBrokerPower = "broker-power"

// The broker's power cuts.
const (
	// FaultPowerAfterPublish cuts the broker's power once it has acked
	// the publish; both deliveries run on the restarted broker.
	FaultPowerAfterPublish = "power-cut-after-publish"
	// FaultPowerAfterAck cuts it once delivery 1 has done the work and
	// its ack has been answered, and the broker has gone quiet on its
	// store (it has written its consumer's state after the ack); delivery
	// 2 runs on the restarted broker.
	FaultPowerAfterAck = "power-cut-after-ack"
	// FaultPowerBeforeStateSync arms the mount, once the publish ack has
	// come, to freeze before its next sync, which under sync_interval
	// always is the broker's write of its consumer's state after
	// delivery 1; delivery 1 does the work and its ack is answered; then
	// the cut. The message survives and the consumer's record of its
	// delivery and ack does not: the restarted broker delivers finished
	// work again, and the processed check must absorb it.
	FaultPowerBeforeStateSync = "power-cut-before-state-sync"
)

// powerCut says whether a fault is a power cut of the broker.
func powerCut(fault string) bool {
	return fault == FaultPowerAfterPublish || fault == FaultPowerAfterAck || fault == FaultPowerBeforeStateSync
}

// cutAfterWork says whether a power condition's delivery 1 runs before
// the cut.
func cutAfterWork(fault string) bool {
	return fault == FaultPowerAfterAck || fault == FaultPowerBeforeStateSync
}

// BrokerPowerConditions are the conditions --broker-power adds, on the
// separate commits: each cut under the default sync_interval and under
// always, with ext4-ordered directories, and the cut after the publish
// under always with strict POSIX directories.
func BrokerPowerConditions() []Condition {
	var out []Condition
	for _, sync := range []string{"", natswire.SyncAlways} {
		name := "sync-default"
		if sync != "" {
			name = "sync-" + sync
		}
		for _, fault := range []string{FaultPowerAfterPublish, FaultPowerAfterAck} {
			out = append(out, Condition{Name: "separate-commit/" + fault + "/" + name, Pattern: wr.SeparateCommit, BrokerFault: fault,
				SyncInterval: sync, DirModel: powerfs.DirExt4})
		}
	}
	out = append(out,
		Condition{Name: "separate-commit/" + FaultPowerBeforeStateSync + "/sync-always", Pattern: wr.SeparateCommit,
			BrokerFault: FaultPowerBeforeStateSync, SyncInterval: natswire.SyncAlways, DirModel: powerfs.DirExt4},
		Condition{Name: "separate-commit/" + FaultPowerAfterPublish + "/sync-always/posix-dirs", Pattern: wr.SeparateCommit,
			BrokerFault: FaultPowerAfterPublish, SyncInterval: natswire.SyncAlways, DirModel: powerfs.DirPOSIX})
	return append(out, modelConditions()...)
}

// modelConditions are the cuts under the keep and torn models, after the
// drop model's (whose places in a folder they leave as they were): keep,
// the upper bound, under the default sync_interval, where drop loses
// everything; torn under the default and under always.
func modelConditions() []Condition {
	var out []Condition
	for _, m := range []struct{ model, sync string }{
		{powerfs.ModelKeep, ""}, {powerfs.ModelTorn, ""}, {powerfs.ModelTorn, natswire.SyncAlways},
	} {
		name := "sync-default"
		if m.sync != "" {
			name = "sync-" + m.sync
		}
		for _, fault := range []string{FaultPowerAfterPublish, FaultPowerAfterAck} {
			if m.model == powerfs.ModelTorn && (m.sync == "") != (fault == FaultPowerAfterPublish) {
				continue // torn: after the publish under the default, after the ack under always
			}
			out = append(out, Condition{Name: "separate-commit/" + fault + "/" + name + "/" + m.model, Pattern: wr.SeparateCommit,
				BrokerFault: fault, SyncInterval: m.sync, DirModel: powerfs.DirExt4, PowerModel: m.model})
		}
	}
	return out
}

// powerParams are the models of condition c's cut: its data model (drop
// when it names none) and its directory model; a torn cut's decisions are
// seeded by the condition's name alone (the redelivery scenario has no
// seed of its own), so verify and a rerun tear the same units.
func powerParams(c Condition) powerfs.Params {
	p := powerfs.Params{Model: powerfs.ModelDrop, DirModel: c.DirModel, Unit: 512}
	if c.PowerModel != "" {
		p.Model = c.PowerModel
	}
	if p.Model == powerfs.ModelTorn {
		p.Seed = seed.TornSeed(0, c.Name, 0)
	}
	return p
}

// BrokerPower is the record of a broker's power cut, on delivery 1's
// line: the models, the mount's op log up to the cut (no data) and the
// outcome the server rebuilt the folder to; where in the log the publish
// ack and delivery 1's ack came; and the broker's word after its restart,
// read before the stream and the consumer were declared again.
type BrokerPower struct {
	Params  powerfs.Params  `json:"params"`
	Log     []powerfs.Op    `json:"log"`
	Outcome powerfs.Outcome `json:"outcome"`
	// Mount is the mount point; Store the broker's store folder,
	// relative to it.
	Mount string `json:"mount"`
	Store string `json:"store"`
	// PublishedAt is how many ops the log held when the publish ack
	// came; AckedAt when delivery 1, which acks synchronously, had ended
	// (a cut after the ack only).
	PublishedAt int `json:"published_at_op"`
	AckedAt     int `json:"acked_at_op,omitempty"`
	// CutBeforeSync is the sync the mount was armed to freeze before, the
	// first after the publish (a cut before the state's sync only).
	CutBeforeSync int `json:"cut_before_sync,omitempty"`
	// StreamLost says the restarted broker had no stream; AfterRestart is
	// its state otherwise.
	StreamLost   bool          `json:"stream_lost"`
	AfterRestart *broker.State `json:"after_restart,omitempty"`
	// ServerProcessIDs are the lines of raw-processes.jsonl of the
	// mounts' servers: the one that cut, then the restart's.
	ServerProcessIDs []int `json:"server_process_ids"`
	// CutMS is from the cut's start to the restarted broker's word.
	CutMS float64 `json:"cut_ms"`
}

// PowerFacts are what a broker's power cut left, on delivery 1: whether
// the publish and the ack were durable at the cut (derived from the op
// log) and the restarted broker's word.
type PowerFacts struct {
	PublishDurable bool `json:"publish_durable"`
	AckDurable     bool `json:"ack_durable"`
	StreamFound    bool `json:"stream_found"`
	// Messages and AckFloor are the restarted broker's, before anything
	// was delivered again.
	Messages uint64 `json:"messages_after_restart"`
	AckFloor uint64 `json:"ack_floor_after_restart"`
}

// expectPower is the oracle of a power condition: from the sync policy,
// the directory model and the cut point, what is durable at the cut, and
// then what each delivery does on the restarted broker. A message whose
// delivery and ack the cut lost is delivered again as a first delivery
// (the broker lost its count too), and the processed check makes it a
// no-op.
//
// The data model changes only what no sync covered: keep leaves every
// write and every name as a process kill does, so nothing is lost under
// any policy; torn keeps a seeded part of the unsynced bytes and, as drop,
// only the names a sync made durable, so what was acknowledged survives
// exactly where it does under drop.
func expectPower(s Settings, c Condition) []Delivery {
	msg := c.SyncInterval == natswire.SyncAlways && c.DirModel == powerfs.DirExt4 || c.PowerModel == powerfs.ModelKeep
	ack := msg && c.BrokerFault == FaultPowerAfterAck
	pf := &PowerFacts{PublishDurable: msg, AckDurable: ack, StreamFound: msg}
	if msg {
		pf.Messages = 1
	}
	if ack {
		pf.AckFloor = 1
	}
	// fetch[i] says whether delivery i+1 gets the message.
	fetch := []bool{msg, false}
	if cutAfterWork(c.BrokerFault) {
		fetch = []bool{true, msg && !ack}
	}
	var model wr.Model
	var rows wr.Counts
	out := make([]Delivery, 0, s.Deliveries)
	for i := range s.Deliveries {
		b := &BrokerDelivery{Consumer: &ConsumerFacts{}}
		d := Delivery{Delivery: i + 1, ExitCode: protocol.ExitACK, Points: []string{}, Broker: b}
		if i == 0 {
			b.Published, b.Restarted, b.Power = &PublishFacts{Seq: 1}, true, pf
		}
		if i < len(fetch) && fetch[i] {
			m := model.Deliver(c.Pattern, "")
			rows, d.Points = m.After, m.Points
			b.Consumer = &ConsumerFacts{Fetched: true, NumDelivered: 1, Acked: true}
		}
		d.FollowUpJobs, d.ProcessedEvents = rows.Jobs, rows.Processed
		// The stream holds the message, delivered and acked, after any
		// delivery that fetched it, and after the cut where it survived.
		if rows.Processed > 0 && (msg || !cutAfterWork(c.BrokerFault) || i == 0) {
			b.State = broker.State{Messages: 1, LastSeq: 1, Delivered: 1, AckFloor: 1}
		}
		out = append(out, d)
	}
	return out
}

// powerTrial is one power condition's folders, mount and broker.
type powerTrial struct {
	dir, backing, mnt string
	m                 *powerfs.Mount
	rec               powerlayer.Recording
	pw                *BrokerPower
}

// mount mounts the trial's backing folder on its mount point with the
// models p; n numbers the mount's store, as a trial mounts twice.
func (t *powerTrial) mount(ctx context.Context, exe string, p powerfs.Params, n int) error {
	m, err := powerfs.Start(ctx, exe, powerfs.Config{Backing: t.backing, Mountpoint: t.mnt,
		Store: filepath.Join(t.dir, fmt.Sprintf("store-%d", n)), Params: p})
	if err != nil {
		return fmt.Errorf("%w: mount the broker's folder: %w", errclass.ErrHarness, err)
	}
	t.m = m
	return nil
}

// ops is the op log of the mount up to now, as the server wrote it.
func (t *powerTrial) ops() (int, error) {
	ops, err := powerfs.ReadLogFile(t.m.Store)
	return len(ops), err
}

// unmount unmounts without a cut, if a mount is up, and records its
// server.
func (t *powerTrial) unmount() error {
	if t.m == nil {
		return nil
	}
	m := t.m
	t.m = nil
	return errors.Join(m.Close(), t.recordServer(m))
}

func (t *powerTrial) recordServer(m *powerfs.Mount) error {
	id, err := powerlayer.RecordServer(m, t.rec)
	if err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	if id != 0 && t.pw != nil {
		t.pw.ServerProcessIDs = append(t.pw.ServerProcessIDs, id)
	}
	return nil
}

// QuietWait bounds the wait, before a cut after the ack, for the broker
// to go quiet on its store, and QuietFor is how long no op must come: the
// consumer's state file it writes after an ack is then its last.
const (
	QuietWait = 3 * time.Second
	QuietFor  = 250 * time.Millisecond
)

// waitQuiet waits until the mount's op log has not grown for QuietFor,
// or QuietWait has passed.
func (t *powerTrial) waitQuiet(ctx context.Context) {
	n, last := -1, time.Now()
	for end := time.Now().Add(QuietWait); time.Now().Before(end); {
		if m, err := t.ops(); err == nil && m != n {
			n, last = m, time.Now()
		} else if time.Since(last) >= QuietFor {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// armNextSync arms the mount to freeze before its next sync: the one
// after the last the log holds.
func (t *powerTrial) armNextSync() error {
	ops, err := powerfs.ReadLogFile(t.m.Store)
	if err != nil {
		return fmt.Errorf("%w: read the op log: %w", errclass.ErrHarness, err)
	}
	t.pw.CutBeforeSync = syncsIn(ops) + 1
	if err := t.m.Arm(t.pw.CutBeforeSync); err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	return nil
}

// syncsIn is how many syncs ops hold.
func syncsIn(ops []powerfs.Op) int {
	n := 0
	for _, op := range ops {
		n = max(n, op.Sync)
	}
	return n
}

// waitFrozen waits until the armed sync has frozen the mount, or
// QuietWait has passed (the cut then comes by command, and the fold
// finds it was not where the condition puts it).
func (t *powerTrial) waitFrozen(ctx context.Context) {
	select {
	case <-t.m.Cuts():
	case <-time.After(QuietWait):
	case <-ctx.Done():
	}
}

// consumerStateFile is the file nats-server keeps a consumer's state in,
// in the consumer's folder; a message block's name ends in blockSuffix.
const (
	consumerStateFile = "o.dat"
	blockSuffix       = ".blk"
)

// runBrokerPower runs a power condition: its broker's store on a mount
// of its own, the publish, delivery 1 before the cut after the ack, the
// cut, the restart on a fresh mount of the rebuilt folder, and the rest
// of the deliveries.
func (p *plan) runBrokerPower(ctx context.Context, env scenario.Env, c Condition) (err error) {
	fresh, err := env.Fresh(ctx, "idemlab-redelivery-", DBName)
	if err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	defer fresh.Drop()
	// The service's tables are there before its first delivery, as a
	// deployed service's are: a condition whose event the cut loses runs
	// no delivery that would make them.
	if err := makeTables(ctx, fresh); err != nil {
		return fmt.Errorf("%w: %s: %w", errclass.ErrHarness, c.Name, err)
	}
	dir, err := powerTrialDir(env.TempDir)
	if err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	defer os.RemoveAll(dir)
	t := &powerTrial{dir: dir, backing: filepath.Join(dir, "backing"), mnt: filepath.Join(dir, "mnt"),
		rec: powerlayer.Recording{Recorder: env.Recorder, Scenario: Name, Condition: c.Name, Label: "broker"}}
	defer func() { err = errors.Join(err, t.unmount()) }()
	params := powerParams(c)
	if err := t.mount(ctx, env.Runner.Executable, params, 1); err != nil {
		return err
	}
	b, err := broker.Lookup(p.s.Broker.Name)
	if err != nil {
		return err
	}
	tr, err := b.Start(ctx, p.s.trialSettings(c), t.mnt)
	if err != nil {
		return fmt.Errorf("%w: %s: start the broker: %w", errclass.ErrHarness, c.Name, err)
	}
	defer tr.Close()
	db := fresh.Target
	first := &BrokerObservation{}
	if err := p.publish(ctx, tr, c, first); err != nil {
		return fmt.Errorf("%w: %s: %w", errclass.ErrHarness, c.Name, err)
	}
	t.pw = &BrokerPower{Params: params, Mount: t.mnt, ServerProcessIDs: []int{}}
	if t.pw.Store, err = filepath.Rel(t.mnt, tr.StoreDir()); err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	if t.pw.PublishedAt, err = t.ops(); err != nil {
		return fmt.Errorf("%w: read the op log: %w", errclass.ErrHarness, err)
	}
	first.Power = t.pw
	spec := func(d int) harness.Spec {
		return harness.Spec{Scenario: Name, Condition: c.Name, Label: fmt.Sprintf("delivery %d", d),
			Worker: wr.ConsumerName, Args: p.s.consumeArgs(c, d, db, tr.URL()).Argv()}
	}
	var pending []Observation
	d := 1
	if c.BrokerFault == FaultPowerBeforeStateSync {
		if err := t.armNextSync(); err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	if cutAfterWork(c.BrokerFault) {
		o, err := p.brokerDelivery(ctx, env, tr, fresh, c, spec(d), d)
		if err != nil {
			return err
		}
		if t.pw.AckedAt, err = t.ops(); err != nil {
			return fmt.Errorf("%w: read the op log: %w", errclass.ErrHarness, err)
		}
		if c.BrokerFault == FaultPowerAfterAck {
			t.waitQuiet(ctx)
		} else {
			t.waitFrozen(ctx)
		}
		pending, d = append(pending, o), d+1
	}
	if err := t.cutAndRestart(ctx, env, tr); err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	again := tr.Server()
	first.Restarted = &again
	for ; d <= p.s.Deliveries; d++ {
		o, err := p.brokerDelivery(ctx, env, tr, fresh, c, spec(d), d)
		if err != nil {
			return err
		}
		pending = append(pending, o)
	}
	pending[0].Broker.Published, pending[0].Broker.Server, pending[0].Broker.Restarted = first.Published, first.Server, first.Restarted
	pending[0].Broker.Power = t.pw
	if err := t.unmount(); err != nil {
		return err
	}
	for _, o := range pending {
		if err := env.Recorder.Observe(o); err != nil {
			return fmt.Errorf("%w: record observation: %w", errclass.ErrHarness, err)
		}
	}
	return nil
}

// PowerTrialPrefix starts a power condition's folder's name: the mount's
// backing folder, its mount point and its servers' stores.
const PowerTrialPrefix = "idemlab-broker-power-"

// powerTrialDir makes a power condition's folder under tmp with its
// owner's record, after removing the folders of runs that are gone (a
// harness killed by SIGKILL leaves them; its mounts' servers unmount
// when their standard input ends, and powerfs.Sweep clears a mount whose
// server died).
func powerTrialDir(tmp string) (string, error) {
	if tmp == "" {
		tmp = os.TempDir()
	}
	self, err := backend.Self()
	if err != nil {
		return "", err
	}
	if _, err := powerfs.Sweep(os.Stderr); err != nil {
		return "", err
	}
	for _, d := range broker.SweepOwned(tmp, PowerTrialPrefix, self) {
		fmt.Fprintf(os.Stderr, "idemlab: removed %s, a broker power trial's folder left by a run that is gone\n", d)
	}
	dir, err := os.MkdirTemp(tmp, PowerTrialPrefix)
	if err != nil {
		return "", err
	}
	if err := broker.WriteOwner(dir, self); err != nil {
		return "", errors.Join(err, os.RemoveAll(dir))
	}
	return dir, nil
}

// makeTables creates the events file's tables.
func makeTables(ctx context.Context, db backend.Database) error {
	st, err := db.Open(ctx, wr.Options(""))
	if err != nil {
		return err
	}
	return errors.Join(wr.EnsureSchema(ctx, st.DB), st.Close())
}

// brokerDelivery runs delivery d's consumer process and reads the rows
// and the broker's state after it.
func (p *plan) brokerDelivery(ctx context.Context, env scenario.Env, tr broker.Trial, db backend.Database, c Condition, spec harness.Spec, d int) (Observation, error) {
	proc, err := env.Runner.Run(ctx, spec)
	if err != nil {
		return Observation{}, fmt.Errorf("%s delivery %d: %w", c.Name, d, err)
	}
	rows, err := readState(ctx, db)
	if err != nil {
		return Observation{}, fmt.Errorf("%w: %s delivery %d: %w", errclass.ErrHarness, c.Name, d, err)
	}
	st, err := tr.State()
	if err != nil {
		return Observation{}, fmt.Errorf("%w: %s delivery %d: the broker's state: %w", errclass.ErrHarness, c.Name, d, err)
	}
	return Observation{Scenario: Name, Condition: c.Name, Delivery: d, ProcessID: proc.Record.ID, DB: db.Target, Rows: rows,
		Broker: &BrokerObservation{URL: tr.URL(), State: st}}, nil
}

// cutAndRestart cuts the mount (the broker dies with everything else on
// it), records the cut, mounts the rebuilt folder again and restarts the
// broker on it, reads its word on the stream and the consumer, and
// declares both again.
func (t *powerTrial) cutAndRestart(ctx context.Context, env scenario.Env, tr broker.Trial) error {
	t0 := time.Now()
	m := t.m
	t.m = nil
	out, err := m.Cut()
	if rerr := t.recordServer(m); rerr != nil {
		return rerr
	}
	if err != nil {
		return fmt.Errorf("%w: the broker's power cut: %w", errclass.ErrHarness, err)
	}
	if t.pw.Log, err = powerfs.ReadLogFile(m.Store); err != nil {
		return fmt.Errorf("%w: read the op log: %w", errclass.ErrHarness, err)
	}
	t.pw.Outcome = out
	if err := t.mount(ctx, env.Runner.Executable, powerfs.Params{}, 2); err != nil {
		return err
	}
	if err := tr.Restart(ctx); err != nil {
		return fmt.Errorf("%w: restart the broker after the cut: %w", errclass.ErrHarness, err)
	}
	st, err := tr.State()
	var api *natswire.APIError
	switch {
	case errors.As(err, &api) && api.Code == 404:
		t.pw.StreamLost = true
	case err != nil:
		return fmt.Errorf("%w: the restarted broker's state: %w", errclass.ErrHarness, err)
	default:
		t.pw.AfterRestart = &st
	}
	t.pw.CutMS = float64(time.Since(t0).Microseconds()) / 1000
	if err := tr.Declare(); err != nil {
		return fmt.Errorf("%w: declare the stream and the consumer after the cut: %w", errclass.ErrHarness, err)
	}
	return nil
}

// foldPower derives a power condition's facts from delivery 1's record
// of the cut: the outcome again from the log (powerfs.Plan), whether the
// publish and the ack were durable at the cut, and the restarted
// broker's word. It checks the mounts' server lines.
func (f *folder) foldPower(ln line, o *BrokerObservation, b *BrokerDelivery) {
	pw := o.Power
	if !powerCut(ln.cond.BrokerFault) || ln.o.Delivery != 1 {
		if pw != nil {
			f.c.Obs(ln.l, "broker.power", "recorded, but only delivery 1 of a power condition records a cut")
		}
		return
	}
	if pw == nil {
		f.c.Obs(ln.l, "broker.power", "missing: delivery 1 of a power condition records the broker's cut")
		return
	}
	f.powerServers(ln, pw)
	if want := powerParams(ln.cond); pw.Params != want {
		f.c.Obs(ln.l, "broker.power.params", "the cut was made under %+v, but the condition's models are %+v", pw.Params, want)
		return
	}
	want, err := powerfs.Plan(pw.Log, pw.Params)
	if err != nil {
		f.c.Obs(ln.l, "broker.power.log", "%v", err)
		return
	}
	if field, text := powerlayer.FirstDiff(want, pw.Outcome); field != "" {
		f.c.Obs(ln.l, "broker.power.outcome"+field, "differs from what powerfs.Plan derives from the op log and the models (%s)", text)
	}
	f.checkArmed(ln, pw)
	// The cut is the log's last op; an armed cut may come before the
	// ack's answer, a cut by command only after it.
	n, last := len(pw.Log), len(pw.Log)-1
	if ln.cond.BrokerFault == FaultPowerBeforeStateSync {
		last = n
	}
	if pw.PublishedAt < 1 || pw.PublishedAt >= n || pw.AckedAt > last || (pw.AckedAt != 0) != cutAfterWork(ln.cond.BrokerFault) || (pw.AckedAt != 0 && pw.AckedAt < pw.PublishedAt) {
		f.c.Obs(ln.l, "broker.power.acked_at_op", "the publish at op %d and the ack at op %d do not fit a log of %d ops and a %s", pw.PublishedAt, pw.AckedAt, n, ln.cond.BrokerFault)
	}
	ts := f.st.trialSettings(ln.cond)
	stream := path.Join(filepath.ToSlash(pw.Store), "jetstream", "$G", "streams", ts.Stream)
	pf := &PowerFacts{
		PublishDurable: publishDurable(pw, want, stream),
		AckDurable:     ackDurable(pw, want, path.Join(stream, "obs", ts.Consumer, consumerStateFile)),
		StreamFound:    !pw.StreamLost,
	}
	switch a := pw.AfterRestart; {
	case pw.StreamLost && a != nil:
		f.c.Obs(ln.l, "broker.power.after_restart", "recorded, but the stream was lost")
	case a != nil:
		pf.Messages, pf.AckFloor = a.Messages, a.AckFloor
	case !pw.StreamLost:
		f.c.Obs(ln.l, "broker.power.after_restart", "missing: the restarted broker's state, or stream_lost")
	}
	b.Power = pf
}

// checkArmed checks a cut before the state's sync: armed at the first
// sync after the publish, and the log's cut is before that sync.
func (f *folder) checkArmed(ln line, pw *BrokerPower) {
	if ln.cond.BrokerFault != FaultPowerBeforeStateSync {
		if pw.CutBeforeSync != 0 {
			f.c.Obs(ln.l, "broker.power.cut_before_sync", "is %d, but only a cut before the state's sync is armed", pw.CutBeforeSync)
		}
		return
	}
	if pw.PublishedAt > 0 && pw.PublishedAt <= len(pw.Log) {
		if want := syncsIn(pw.Log[:pw.PublishedAt]) + 1; pw.CutBeforeSync != want {
			f.c.Obs(ln.l, "broker.power.cut_before_sync", "is %d, but the first sync after the publish is %d", pw.CutBeforeSync, want)
		}
	}
	if n := len(pw.Log); n == 0 || pw.Log[n-1].Kind != powerfs.OpCut || pw.Log[n-1].At != "before" || pw.Log[n-1].Sync != pw.CutBeforeSync {
		f.c.Obs(ln.l, "broker.power.log", "does not end in the cut before sync %d the mount was armed for", pw.CutBeforeSync)
	}
}

// powerServers checks the process lines of a power condition's mounts'
// servers: the first cut under the condition's models, the second served
// the restart.
func (f *folder) powerServers(ln line, pw *BrokerPower) {
	if len(pw.ServerProcessIDs) != 2 {
		f.c.Obs(ln.l, "broker.power.server_process_ids", "names %d servers; a power condition mounts twice, to cut and to restart", len(pw.ServerProcessIDs))
	}
	for i, id := range pw.ServerProcessIDs {
		params := pw.Params
		if i > 0 {
			params = powerfs.Params{} // the restart's mount cuts nothing
		}
		powerlayer.FoldServerLine(&f.c, f.rec, ln.l, id, pw.Mount, params)
	}
}

// entry finds the surviving entry at path p in a cut's outcome.
func entry(o powerfs.Outcome, p string) (powerfs.Entry, bool) {
	for _, e := range o.Entries {
		if e.Path == p {
			return e, true
		}
	}
	return powerfs.Entry{}, false
}

// intact says whether a cut left an inode's first end bytes as they were
// written: the outcome lists no unsynced change of it, or under drop its
// durable size reaches end (as before keep and torn ran), or every unit
// of its unsynced changes that begins below end was kept (all of them
// under keep, the seed's choice under torn).
func intact(o powerfs.Outcome, ino uint64, end int64) bool {
	for _, f := range o.Files {
		if f.Ino != ino {
			continue
		}
		if o.Model == powerfs.ModelDrop {
			return f.Size >= end
		}
		for i, u := range faultvfs.Units(f.Spans, o.Unit) {
			if u[0] < end && (i >= len(f.Decisions) || f.Decisions[i] != faultvfs.DecideKeep) {
				return false
			}
		}
		return true
	}
	return true
}

// publishDurable says whether the message the publish ack answered was
// durable at the cut: the stream's definition survives, and a message
// block survives that held, to its last durable byte, all the bytes
// written to it before the ack.
func publishDurable(pw *BrokerPower, o powerfs.Outcome, stream string) bool {
	if _, ok := entry(o, path.Join(stream, "meta.inf")); !ok {
		return false
	}
	for _, e := range o.Entries {
		if path.Dir(e.Path) != path.Join(stream, "msgs") || path.Ext(e.Path) != blockSuffix {
			continue
		}
		var end int64
		for _, op := range pw.Log[:pw.PublishedAt] {
			if op.Kind == powerfs.OpWrite && op.Ino == e.Ino {
				end = max(end, op.Off+op.Len)
			}
		}
		if end > 0 && intact(o, e.Ino, end) {
			return true
		}
	}
	return false
}

// ackDurable says whether delivery 1's ack was durable at the cut: the
// consumer's state file that survives is the last the broker wrote (it
// writes the whole state anew and renames it into place; the cut came
// once it had gone quiet after the ack), written after the publish, so
// after the delivery began, and all of it survives.
func ackDurable(pw *BrokerPower, o powerfs.Outcome, state string) bool {
	e, ok := entry(o, state)
	if !ok || pw.AckedAt == 0 {
		return false
	}
	var end int64
	made, last := 0, 0
	for _, op := range pw.Log {
		switch {
		case op.Kind == powerfs.OpRename && path.Base(state) == op.Name2:
			last = op.Seq
		case op.Ino != e.Ino:
		case op.Kind == powerfs.OpCreate:
			made = op.Seq
		case op.Kind == powerfs.OpWrite:
			end = max(end, op.Off+op.Len)
		}
	}
	renamed := 0
	for _, op := range pw.Log {
		if op.Kind == powerfs.OpRename && op.Ino == e.Ino {
			renamed = op.Seq
		}
	}
	return made > pw.PublishedAt && renamed == last && intact(o, e.Ino, end)
}
