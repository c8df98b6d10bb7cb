package broker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/broker"
	"idemlab/experiments/broker/brokertest"
	"idemlab/worker/natswire"
)

func TestMain(m *testing.M) {
	os.Exit(brokertest.Main(m))
}

// start starts a trial with a short AckWait and registers its Close.
func start(t *testing.T, mod func(*broker.Settings)) (broker.Trial, broker.Settings) {
	t.Helper()
	brokertest.Need(t)
	s := broker.DefaultNATS()
	s.AckWaitMS = 300
	if mod != nil {
		mod(&s)
	}
	b, err := broker.Lookup(broker.NATS)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := b.Start(context.Background(), s, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr, s
}

func dial(t *testing.T, tr broker.Trial) *natswire.Conn {
	t.Helper()
	c, err := natswire.Dial(tr.URL(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRedeliveryByTheBroker: an unacked message comes back after AckWait
// with its delivery count raised; an acked one is answered and never
// comes back; the state says so.
func TestRedeliveryByTheBroker(t *testing.T) {
	tr, s := start(t, nil)
	if _, err := tr.Publish("e1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	c := dial(t, tr)
	var metas []natswire.Meta
	var last *natswire.Msg
	t0 := time.Now()
	for range 2 {
		m, err := c.Next(s.Stream, s.Consumer, 3*s.AckWait())
		if err != nil || m == nil {
			t.Fatalf("next: %v, %v", m, err)
		}
		meta, err := natswire.ParseMeta(m.Reply)
		if err != nil {
			t.Fatal(err)
		}
		meta.NumPending = 0
		metas = append(metas, meta)
		last = m
	}
	if took := time.Since(t0); took < s.AckWait() {
		t.Errorf("redelivered after %s, before the AckWait of %s", took, s.AckWait())
	}
	want := []natswire.Meta{
		{Stream: s.Stream, Consumer: s.Consumer, NumDelivered: 1, StreamSeq: 1, ConsumerSeq: 1},
		{Stream: s.Stream, Consumer: s.Consumer, NumDelivered: 2, StreamSeq: 1, ConsumerSeq: 2},
	}
	if diff := cmp.Diff(want, metas); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
	ans, err := c.AckSync(last, time.Second)
	if err != nil || !ans.Answered || ans.Status != 0 {
		t.Errorf("ack answered %+v, %v; want an empty answer", ans, err)
	}
	if m, err := c.Next(s.Stream, s.Consumer, 2*s.AckWait()); m != nil || err != nil {
		t.Errorf("after the ack the broker delivered %+v, %v; want nothing", m, err)
	}
	st, err := tr.State()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(broker.State{Messages: 1, LastSeq: 1, Delivered: 2, AckFloor: 1, NumRedelivered: 0}, st); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// TestDedupWindow: a republish with the same Nats-Msg-Id inside the window
// is a duplicate; after the window it is a second message.
func TestDedupWindow(t *testing.T) {
	tr, s := start(t, func(s *broker.Settings) { s.DuplicateWindowMS = 400 })
	var got []broker.Published
	for _, wait := range []time.Duration{0, 0, s.DuplicateWindow() + 300*time.Millisecond} {
		time.Sleep(wait)
		p, err := tr.Publish("e1", nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	want := []broker.Published{
		{MsgID: "e1", Stream: s.Stream, Seq: 1},
		{MsgID: "e1", Stream: s.Stream, Seq: 1, Duplicate: true},
		{MsgID: "e1", Stream: s.Stream, Seq: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("publish acks (-want +got):\n%s", diff)
	}
}

// TestCloseLeavesNothing: after Close the broker's process is reaped and
// its store folder gone; after Kill too.
func TestCloseLeavesNothing(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(fmt.Sprintf("kill=%v", kill), func(t *testing.T) {
			tr, _ := start(t, nil)
			pid := tr.Server().PID
			if kill {
				if err := tr.Kill(); err != nil {
					t.Fatal(err)
				}
			}
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("broker pid %d after Close: kill -0 says %v; want no such process", pid, err)
			}
			if _, err := os.Stat(tr.StoreDir()); !os.IsNotExist(err) {
				t.Errorf("store %s after Close: %v; want it gone", tr.StoreDir(), err)
			}
		})
	}
}

// TestNotLinkedIntoIdemlab: the idemlab binary links neither nats-server
// nor nats.go, so no worker pays their init.
func TestNotLinkedIntoIdemlab(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "idemlab").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/nats-io/") {
			t.Errorf("idemlab links %s", dep)
		}
	}
	if filepath.Base(broker.NATSBinary) != "idemlab-nats" {
		t.Errorf("binary name %q", broker.NATSBinary)
	}
}
