package cmd

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"idemlab/experiments/pattern"
	"idemlab/worker/powerfs"
)

// syncObs is a program power trial's or sync discovery's line as this
// test reads it.
type syncObs struct {
	Condition, Kind, Point, Model string
	Trial                         int
	Values                        map[string]struct{ Text string }
	PowerFS                       *pattern.PowerFS
}

// TestProgramSyncPointCuts runs the shipped Python handler's power class
// with --sync-points under DELETE/FULL and DELETE/EXTRA: each condition's
// sync discovery counts the fsyncs on its mount, and the condition cuts
// under each model (drop, keep, torn) just before and just after each of
// them. The sweep must be complete, exactly every N from 1 to the count
// its discovery's op log holds, before and after, under each model; each
// cut's record must fall at its fsync; and
// the pattern's invariants must hold after the redeliveries (every such
// cut comes before the ACK, so the event is delivered again). The folder
// verifies; an edited N or logged sync fails verify naming the field.
func TestProgramSyncPointCuts(t *testing.T) {
	t.Parallel()
	needPython(t)
	needFUSE(t)
	r, out := runPattern(t, "../testdata/handlers/single-transaction.json", "--faults", "power", "--power", "DELETE/FULL,DELETE/EXTRA", "--sync-points")
	noPowerMounts(t, "a run with sync points")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 (known_unsafe lists DELETE/FULL):\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(out, "observations.jsonl")))), "\n")
	var all []syncObs
	for i, l := range lines {
		var o syncObs
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("observations.jsonl line %d: %v", i+1, err)
		}
		all = append(all, o)
	}
	// The oracle of the sweep: the fsyncs in each sync discovery's op
	// log, counted here from its ops, not from its recorded outcome.
	want, got := map[string][]string{}, map[string][]string{}
	table := []string{"condition  point  model  one job  processed"}
	for _, o := range all {
		switch {
		case o.Kind == pattern.KindSyncDiscovery:
			n := 0
			for _, op := range o.PowerFS.Log {
				if op.Kind == powerfs.OpFsync || op.Kind == powerfs.OpFsyncDir {
					n++
				}
			}
			if n == 0 {
				t.Errorf("%s: the sync discovery's mount saw no fsync", o.Condition)
			}
			for _, m := range []string{powerfs.ModelDrop, powerfs.ModelKeep, powerfs.ModelTorn} {
				for k := 1; k <= n; k++ {
					want[o.Condition] = append(want[o.Condition], fmt.Sprintf("sync-%d-before %s", k, m), fmt.Sprintf("sync-%d-after %s", k, m))
				}
			}
		case strings.HasPrefix(o.Point, "sync-"):
			got[o.Condition] = append(got[o.Condition], o.Point+" "+o.Model)
			table = append(table, fmt.Sprintf("%s  %s  %s  %s  %s", o.Condition, o.Point, o.Model, o.Values["one job"].Text, o.Values["processed"].Text))
			if o.PowerFS.Params.Model != o.Model {
				t.Errorf("%s %s: cut under %q, but the trial's model is %q", o.Condition, o.Point, o.PowerFS.Params.Model, o.Model)
			}
			if c := o.PowerFS.Outcome.Cut; c == nil || fmt.Sprintf("sync-%d-%s", c.Sync, c.At) != o.Point {
				t.Errorf("%s %s: the mount's cut is %+v", o.Condition, o.Point, c)
			}
			for _, name := range []string{"one job", "processed"} {
				if v := o.Values[name].Text; v != "1" {
					t.Errorf("%s %s: invariant %q reads %s after the redeliveries, want 1", o.Condition, o.Point, name, v)
				}
			}
		}
	}
	t.Logf("the sync-point cuts, the invariants after the redeliveries:\n%s", strings.Join(table, "\n"))
	if len(want) != 2 {
		t.Fatalf("sync discoveries of %d conditions, want 2: %v", len(want), want)
	}
	// The trials run side by side, so their lines come in the order they
	// ended: compare the cuts as sets.
	if d := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); d != "" {
		t.Errorf("the sync-point cuts, those the discoveries' op logs call for (-) and those run (+):\n%s", d)
	}
	if v := execIn(t, Hooks{}, "verify", out); v.code != 0 {
		t.Fatalf("verify exit %d:\n%s%s", v.code, v.stdout, v.stderr)
	}

	// Edits: each must fail verify naming the field.
	edit := func(kind string, change func(m map[string]any) bool) []string {
		for i, l := range lines {
			var o syncObs
			_ = json.Unmarshal([]byte(l), &o)
			if kind == pattern.KindSyncDiscovery && o.Kind != kind || kind != pattern.KindSyncDiscovery && !strings.HasPrefix(o.Point, "sync-") {
				continue
			}
			var m map[string]any
			dec := json.NewDecoder(strings.NewReader(l))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			if !change(m) {
				continue
			}
			b, _ := json.Marshal(m)
			edited := append([]string{}, lines...)
			edited[i] = string(b)
			return edited
		}
		t.Fatal("no observation to edit")
		return nil
	}
	moveSync := func(rehashed bool) func(m map[string]any) bool {
		return func(m map[string]any) bool {
			p := m["powerfs"].(map[string]any)
			for _, op := range p["log"].([]any) {
				if o := op.(map[string]any); o["op"] == powerfs.OpFsync {
					n, _ := o["sync"].(json.Number).Int64()
					o["sync"] = n + 1
					return !rehashed || rehash(t, p)
				}
			}
			return false
		}
	}
	for _, tt := range []struct {
		name  string
		lines []string
		finds string
	}{
		{"a cut's N", edit("power", func(m map[string]any) bool {
			m["point"] = strings.Replace(m["point"].(string), "sync-1-", "sync-2-", 1)
			return strings.HasPrefix(m["point"].(string), "sync-2-")
		}), "powerfs.outcome.cut"},
		{"before made after", edit("power", func(m map[string]any) bool {
			pt := m["point"].(string)
			m["point"] = strings.Replace(pt, "-before", "-after", 1)
			return pt != m["point"]
		}), "powerfs.outcome.cut"},
		{"a keep cut's model", edit("power", func(m map[string]any) bool {
			if m["model"] != powerfs.ModelKeep {
				return false
			}
			m["model"] = powerfs.ModelDrop
			return true
		}), "powerfs.params"},
		{"a torn cut's seed", edit("power", func(m map[string]any) bool {
			if m["model"] != powerfs.ModelTorn {
				return false
			}
			p := m["powerfs"].(map[string]any)["params"].(map[string]any)
			n, _ := p["seed"].(json.Number).Int64()
			p["seed"] = n + 1
			return true
		}), "powerfs.params"},
		{"a torn cut missing", edit("power", func(m map[string]any) bool {
			if m["model"] != powerfs.ModelTorn || !strings.HasPrefix(m["point"].(string), "sync-1-before") {
				return false
			}
			m["point"] = "sync-99-before"
			return true
		}), "sync-1-before/torn"},
		{"a logged sync of a cut", edit("power", moveSync(false)), "powerfs.log_sha256"},
		{"a logged sync of a cut, hash rewritten", edit("power", moveSync(true)), "powerfs.log"},
		{"a logged sync of the discovery, hash rewritten", edit(pattern.KindSyncDiscovery, moveSync(true)), "powerfs.log"},
		{"the discovery's count", edit(pattern.KindSyncDiscovery, func(m map[string]any) bool {
			o := m["powerfs"].(map[string]any)["outcome"].(map[string]any)
			n, _ := o["syncs"].(json.Number).Int64()
			o["syncs"] = n - 1
			return true
		}), "powerfs.outcome.syncs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := verifyObservations(t, out, tt.lines)
			if v.code == 0 || !strings.Contains(v.stdout, tt.finds) {
				t.Errorf("verify exit %d, want a finding on %s:\n%s%s", v.code, tt.finds, v.stdout, v.stderr)
			}
		})
	}
}
