package broker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"idemlab/experiments/backend"
	"idemlab/worker/natswire"
)

// EnvNATSServer names the idemlab-nats binary to run; without it the
// harness looks beside its own executable, then on PATH.
const EnvNATSServer = "IDEMLAB_NATS_SERVER"

// NATSBinary is the broker binary's name (cmd/idemlab-nats).
const NATSBinary = "idemlab-nats"

// ServeWorker is the broker process's worker name; it matches
// worker/natsserver.WorkerName, which this package must not import.
const ServeWorker = "nats.serve"

// StorePrefix starts every trial's store folder's name.
const StorePrefix = "idemlab-jetstream-"

// OwnerFile, in a store folder, records the process that made it.
const OwnerFile = "idemlab-owner"

// SweepStores removes the store folders under dir whose owner is gone: a
// harness killed by SIGKILL runs no cleanup, and its brokers die with it
// (Pdeathsig, and their standard input's end) but leave their stores. A
// folder without an owner record is left alone: it may be one being made
// this moment. It returns the folders it removed.
func SweepStores(dir string, self backend.Owner) []string {
	return SweepOwned(dir, StorePrefix, self)
}

// SweepOwned removes the folders prefix* under dir whose owner record
// (OwnerFile, WriteOwner) names a process that is gone, as SweepStores
// does for the stores.
func SweepOwned(dir, prefix string, self backend.Owner) []string {
	var removed []string
	dirs, _ := filepath.Glob(filepath.Join(dir, prefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, OwnerFile))
		if err != nil {
			continue
		}
		o, err := backend.ParseOwner(strings.TrimSpace(string(b)))
		if err != nil || !o.Gone(self) {
			continue
		}
		if os.RemoveAll(d) == nil {
			removed = append(removed, d)
		}
	}
	return removed
}

// WriteOwner records self as the owner of the folder dir, for
// SweepOwned.
func WriteOwner(dir string, self backend.Owner) error {
	return os.WriteFile(filepath.Join(dir, OwnerFile), []byte(self.String()+"\n"), 0o644)
}

// ReadyTimeout bounds the wait for the broker's ready line.
const ReadyTimeout = 15 * time.Second

// DefaultNATS are the settings of the redelivery scenario's --broker
// nats: a one-second AckWait, the server's default two-minute dedup
// window and sync interval, and a consumer that waits three AckWaits for
// a message.
func DefaultNATS() Settings {
	return Settings{
		Name: NATS, Stream: "EVENTS", Subject: "events.completed", Consumer: "deliver",
		AckWaitMS: 1000, MaxDeliver: 5, DuplicateWindowMS: 120_000, FetchWaitMS: 3000,
	}
}

type natsBroker struct{}

func (natsBroker) Name() string { return NATS }

func (natsBroker) Caps() Caps {
	return Caps{Redelivers: true, DeliveryCount: true, Dedup: true, Kill: true}
}

// natsTrial is one running broker process.
type natsTrial struct {
	s     Settings
	cmd   *exec.Cmd
	stdin io.WriteCloser
	errb  bytes.Buffer
	ready natswire.Ready
	exe   string
	store string
	// external is a trial on the user's server (Settings.URL).
	external bool
	mu       sync.Mutex
	conn     *natswire.Conn
	waited   chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// Start runs "idemlab-nats worker nats.serve" in a process group of its
// own, with a store folder of its own under dir, waits for its ready
// line, and creates the stream and the durable pull consumer.
func (natsBroker) Start(ctx context.Context, s Settings, dir string) (Trial, error) {
	if s.URL != "" {
		return attach(s)
	}
	exe := s.Binary
	if exe == "" {
		var err error
		if exe, err = FindNATSServer(); err != nil {
			return nil, err
		}
	}
	self, err := backend.Self()
	if err != nil {
		return nil, err
	}
	SweepStores(dir, self)
	store, err := os.MkdirTemp(dir, StorePrefix)
	if err != nil {
		return nil, err
	}
	if err := WriteOwner(store, self); err != nil {
		return nil, errors.Join(err, os.RemoveAll(store))
	}
	t := &natsTrial{s: s, exe: exe, store: store}
	if err := t.launch(ctx); err != nil {
		return nil, errors.Join(err, t.Close())
	}
	if err := t.create(); err != nil {
		return nil, errors.Join(err, t.Close())
	}
	return t, nil
}

// ExternalSync is the sync interval a trial on a user's server records:
// idemlab neither sets nor reads it.
const ExternalSync = "the server's own"

// ErrNotOwned is a kill or restart of a server idemlab did not start.
var ErrNotOwned = errors.New("--broker-url names a server idemlab does not own: it cannot kill or restart it")

// attach is a trial on the user's server at s.URL: a stream of its own,
// deleted first if an earlier run left it, and at the trial's end.
func attach(s Settings) (Trial, error) {
	t := &natsTrial{s: s, external: true}
	var err error
	if t.conn, err = natswire.Dial(s.URL, natswire.APITimeout); err != nil {
		return nil, err
	}
	t.ready = natswire.Ready{URL: s.URL, Version: t.conn.Version, SyncInterval: ExternalSync}
	if err := t.conn.DeleteStream(s.Stream); err != nil {
		return nil, errors.Join(err, t.Close())
	}
	if err := t.create(); err != nil {
		return nil, errors.Join(err, t.Close())
	}
	return t, nil
}

// create makes the trial's stream and durable pull consumer.
func (t *natsTrial) create() error {
	s := t.s
	if err := t.conn.CreateStream(natswire.StreamConfig{
		Name: s.Stream, Subjects: []string{s.Subject}, Storage: "file", Replicas: 1, Duplicates: s.DuplicateWindow(),
	}); err != nil {
		return err
	}
	return t.conn.CreateConsumer(s.Stream, natswire.ConsumerConfig{
		Durable: s.Consumer, AckPolicy: "explicit", DeliverPolicy: "all", AckWait: s.AckWait(), MaxDeliver: s.MaxDeliver,
	})
}

// launch starts the broker process on the trial's store, waits for its
// ready line and connects.
func (t *natsTrial) launch(ctx context.Context) error {
	argv := []string{"worker", ServeWorker, "-store", t.store}
	if t.s.SyncInterval != "" {
		argv = append(argv, "-sync", t.s.SyncInterval)
	}
	t.cmd = exec.Command(t.exe, argv...)
	t.waited = make(chan struct{})
	t.errb.Reset()
	// Its own group, so a kill reaches only it; and it dies with its
	// parent, so no broker outlives a killed run.
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	t.cmd.Stderr = &t.errb
	var err error
	if t.stdin, err = t.cmd.StdinPipe(); err != nil {
		return err
	}
	out, err := t.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := t.cmd.Start(); err != nil {
		t.cmd = nil
		return fmt.Errorf("start %s: %w", t.exe, err)
	}
	waited := t.waited
	go func() {
		t.waitErr = t.cmd.Wait()
		close(waited)
	}()
	line := make(chan []byte, 1)
	go func() {
		b, _ := bufio.NewReader(out).ReadBytes('\n')
		line <- b
		io.Copy(io.Discard, out)
	}()
	t.ready.URL = ""
	select {
	case b := <-line:
		if err := json.Unmarshal(b, &t.ready); err != nil || t.ready.URL == "" {
			<-waited
			return fmt.Errorf("the broker printed no ready line (%q): %v; stderr: %s", b, t.waitErr, t.errb.Bytes())
		}
	case <-time.After(ReadyTimeout):
		return fmt.Errorf("the broker was not ready after %s", ReadyTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	t.conn, err = natswire.Dial(t.ready.URL, natswire.APITimeout)
	return err
}

// Restart kills the broker and starts it again on the same store.
func (t *natsTrial) Restart(ctx context.Context) error {
	if t.external {
		return ErrNotOwned
	}
	if err := t.Kill(); err != nil {
		return err
	}
	return t.launch(ctx)
}

// Declare creates the stream and the consumer again; JetStream answers a
// create of what exists with the same settings with success and leaves
// it as it is.
func (t *natsTrial) Declare() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.create()
}

func (t *natsTrial) URL() string      { return t.ready.URL }
func (t *natsTrial) StoreDir() string { return t.store }

func (t *natsTrial) Server() Server {
	return Server{PID: t.ready.PID, Version: t.ready.Version, SyncInterval: t.ready.SyncInterval, ReadyMS: t.ready.ReadyMS,
		Binary: t.exe, BinarySHA256: t.s.BinarySHA256}
}

func (t *natsTrial) Publish(msgID string, data []byte) (Published, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ack, err := t.conn.PublishMsg(t.s.Subject, msgID, data)
	return Published{MsgID: msgID, Stream: ack.Stream, Seq: ack.Seq, Duplicate: ack.Duplicate}, err
}

func (t *natsTrial) State() (State, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ss, err := t.conn.StreamInfo(t.s.Stream)
	if err != nil {
		return State{}, err
	}
	cs, err := t.conn.ConsumerInfo(t.s.Stream, t.s.Consumer)
	if err != nil {
		return State{}, err
	}
	return State{
		Messages: ss.Msgs, LastSeq: ss.LastSeq, Delivered: cs.Delivered.Consumer, AckFloor: cs.AckFloor.Stream,
		NumAckPending: cs.NumAckPending, NumRedelivered: cs.NumRedelivered, NumPending: cs.NumPending,
	}, nil
}

// ConsumerArgv is the flags worker/redelivery's consumer takes.
func (t *natsTrial) ConsumerArgv() []string {
	return ConsumerArgv(t.s, t.ready.URL)
}

// ConsumerArgv renders a consumer process's broker flags; the fold renders
// them again from the settings and the recorded URL.
func ConsumerArgv(s Settings, url string) []string {
	return natswire.Sub{URL: url, Stream: s.Stream, Consumer: s.Consumer, FetchWait: s.FetchWait()}.Argv()
}

func (t *natsTrial) Kill() error {
	if t.external {
		return ErrNotOwned
	}
	if t.conn != nil {
		t.conn.Close()
		t.conn = nil
	}
	if t.cmd == nil || t.cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		err = nil
	}
	<-t.waited
	return err
}

// Close closes the broker's stdin, which stops it; a broker that is not
// gone within two seconds is killed. Then its store folder is removed.
func (t *natsTrial) Close() error {
	var err error
	t.stopOnce.Do(func() {
		if t.external {
			err = errors.Join(t.conn.DeleteStream(t.s.Stream), t.conn.Close())
			return
		}
		if t.conn != nil {
			t.conn.Close()
		}
		if t.cmd != nil && t.cmd.Process != nil {
			t.stdin.Close()
			select {
			case <-t.waited:
			case <-time.After(2 * time.Second):
				err = t.Kill()
			}
			// Whatever is left in the group goes too.
			syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		}
		err = errors.Join(err, os.RemoveAll(t.store))
	})
	return err
}
