package cmd

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/backend"
	"idemlab/experiments/pattern"
	"idemlab/worker/powerfs"
)

// pgSyncObs is what the PostgreSQL sync sweep's test reads of a pattern
// observation.
type pgSyncObs struct {
	Condition, Kind, Point, Model string
	Values                        map[string]struct{ Text string }
	SyncWindow                    *backend.SyncWindow   `json:"sync_window"`
	PGPower                       *backend.PowerOutcome `json:"pg_power"`
}

// TestProgramSyncPointCutsOnPostgres runs the shipped psql handler's
// power class on PostgreSQL with --sync-points: the sync discovery, a
// power trial cut after its ACK, records its window of the cluster's
// mount's fsyncs, and each model (drop, keep, torn) cuts just before and
// just after each N of it. The sweep must be exactly that, each cut's
// logged op at its N, and the invariants must hold after the redeliveries
// (every such cut comes before the ACK, and with everything on the
// server keeps what it ACKed). The folder verifies; an edited window or N
// fails verify naming the field.
func TestProgramSyncPointCutsOnPostgres(t *testing.T) {
	needPostgres(t)
	needFUSE(t)
	ownTmp(t)
	r, out := runPattern(t, "../testdata/handlers/single-transaction-psql.json", "--backend", "postgres", "--synchronous-commit", "on", "--faults", "power", "--sync-points")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0:\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(out, "observations.jsonl")))), "\n")
	var want, got []string
	discovery, cut := -1, -1
	for i, l := range lines {
		var o pgSyncObs
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("observations.jsonl line %d: %v", i+1, err)
		}
		switch {
		case o.Kind == pattern.KindSyncDiscovery:
			discovery = i
			w := o.SyncWindow
			if w == nil || w.To <= w.From {
				t.Fatalf("the sync discovery's window is %+v: no fsync in the delivery, the sweep is empty", w)
			}
			for _, m := range []string{powerfs.ModelDrop, powerfs.ModelKeep, powerfs.ModelTorn} {
				for _, c := range w.Cuts() {
					want = append(want, c.Point()+" "+m)
				}
			}
		case strings.HasPrefix(o.Point, "sync-"):
			cut = i
			got = append(got, o.Point+" "+o.Model)
			if c := o.PGPower.Cut.Cut; c == nil || fmt.Sprintf("sync-%d-%s", c.Sync, c.At) != o.Point {
				t.Errorf("%s %s: the mount's cut is %+v", o.Point, o.Model, c)
			}
			for _, name := range []string{"one job", "processed"} {
				if v := o.Values[name].Text; v != "1" {
					t.Errorf("%s %s: invariant %q reads %s after the redeliveries, want 1", o.Point, o.Model, name, v)
				}
			}
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if d := cmp.Diff(want, got); d != "" || len(got) == 0 {
		t.Fatalf("the sync-point cuts, those the window calls for (-) and those run (+):\n%s", d)
	}
	t.Logf("%d sync-point cuts: %v", len(got), got)
	if v := execIn(t, Hooks{}, "verify", out); v.code != 0 {
		t.Fatalf("verify exit %d:\n%s%s", v.code, v.stdout, v.stderr)
	}
	edit := func(line int, change func(m map[string]any)) []string {
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(lines[line]))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		change(m)
		b, _ := json.Marshal(m)
		edited := slices.Clone(lines)
		edited[line] = string(b)
		return edited
	}
	for _, tt := range []struct {
		name  string
		lines []string
		finds string
	}{
		{"the window's end", edit(discovery, func(m map[string]any) {
			w := m["sync_window"].(map[string]any)
			n, _ := w["to"].(json.Number).Int64()
			w["to"] = n + 1
		}), "sync_window.to"},
		{"the window dropped", edit(discovery, func(m map[string]any) { delete(m, "sync_window") }), "sync_window"},
		{"a cut's N", edit(cut, func(m map[string]any) {
			c := m["pg_power"].(map[string]any)["cut"].(map[string]any)["cut"].(map[string]any)
			n, _ := c["sync"].(json.Number).Int64()
			c["sync"] = n + 1
		}), "pg_power.cut"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := verifyObservations(t, out, tt.lines)
			if v.code == 0 || !strings.Contains(v.stdout, tt.finds) {
				t.Errorf("verify exit %d, want a finding on %s:\n%s%s", v.code, tt.finds, v.stdout, v.stderr)
			}
		})
	}
}
