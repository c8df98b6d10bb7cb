package natsserver_test

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"idemlab/worker/natsserver"
	"idemlab/worker/natswire"
)

// TestReadyLine starts the server in the test process with each -sync
// and reads its ready line: the sync interval it says is the one it was
// given, and the server answers on its URL. Closing its stdin stops it.
func TestReadyLine(t *testing.T) {
	tests := []struct{ sync, want string }{
		{"", "default " + natsserver.DefaultSyncInterval.String()},
		{natsserver.SyncAlways, natsserver.SyncAlways},
		{"5s", "5s"},
	}
	for _, tt := range tests {
		t.Run(tt.sync, func(t *testing.T) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			var errb strings.Builder
			done := make(chan int, 1)
			argv := natsserver.Args{Store: t.TempDir(), Sync: tt.sync}.Argv()
			go func() { done <- natsserver.Main(argv, inR, outW, &errb) }()
			line, err := bufio.NewReader(outR).ReadBytes('\n')
			if err != nil {
				t.Fatalf("no ready line: %v; stderr %s", err, errb.String())
			}
			var r natswire.Ready
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			if r.SyncInterval != tt.want {
				t.Errorf("sync_interval %q, want %q", r.SyncInterval, tt.want)
			}
			c, err := natswire.Dial(r.URL, time.Second)
			if err != nil {
				t.Fatalf("dial %s: %v", r.URL, err)
			}
			c.Close()
			inW.Close()
			select {
			case code := <-done:
				if code != 0 {
					t.Errorf("exit %d after stdin closed; stderr %s", code, errb.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the server did not stop when its stdin closed")
			}
		})
	}
}

// TestRefusesBadArgs: no store, or a sync that is neither a duration nor
// always, is a usage error before any server starts.
func TestRefusesBadArgs(t *testing.T) {
	for _, argv := range [][]string{{}, {"-store", t.TempDir(), "-sync", "sometimes"}, {"-store", t.TempDir(), "-sync", "-1s"}} {
		var out, errb strings.Builder
		if code := natsserver.Main(argv, strings.NewReader(""), &out, &errb); code != 2 || out.Len() > 0 {
			t.Errorf("%q: exit %d, stdout %q; want 2 and no ready line", argv, code, out.String())
		}
	}
}
