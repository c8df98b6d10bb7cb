package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/experiments/backend"
	"idemlab/experiments/pattern"
	"idemlab/worker/powerfs"
)

// pgPowerObs is a pattern power trial on PostgreSQL as the test reads it.
type pgPowerObs struct {
	Point, Model string
	Values       map[string]struct{ Text string }
	PGPower      json.RawMessage `json:"pg_power"`
}

// TestPatternPowerOnPostgres runs the article's single transaction with
// --faults power on PostgreSQL under synchronous_commit=off, each trial on
// a cluster of its own on a power-loss mount. Under drop the cuts after
// the ACK, with the connection closed or open, must take the ACKed job
// back, as durability's oracle says of synchronous_commit=off under drop
// (every commit after the setup lost), while a cut at a crash point loses
// only what the redelivery then does again. The file does not list power
// as known unsafe, so the run fails (exit 1); the folder verifies as
// consistent, nothing is left mounted, and an edited setting fails verify
// naming it. About 60 s.
//
// The shipped psql handler (a program of the user's, which connects with
// the IDEMLAB_DSN it is given, here the trial's cluster's) runs the same
// class and must show the same.
func TestPatternPowerOnPostgres(t *testing.T) {
	needPostgres(t)
	needFUSE(t)
	for _, file := range []string{"../testdata/patterns/single-transaction.json", "../testdata/handlers/single-transaction-psql.json"} {
		t.Run(filepath.Base(file), func(t *testing.T) { patternPowerOnPostgres(t, file) })
	}
}

func patternPowerOnPostgres(t *testing.T, file string) {
	ownTmp(t)
	r, out := runPattern(t, file, "--backend", "postgres", "--synchronous-commit", "off", "--faults", "power")
	ms, err := powerfs.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.HasPrefix(m.Mountpoint, os.TempDir()+"/") && strings.Contains(m.Mountpoint, "idemlab-pg-") {
			t.Errorf("after the run, still mounted: %+v", m)
		}
	}
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (power breaks and the file does not list it):\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Other packages' tests mount clusters beside this one: the check
	// above looked under the test's own $TMPDIR, where its trials' clusters were (their
	// postmasters' lines name their folders).
	if raw := string(readFile(t, filepath.Join(out, "raw-processes.jsonl"))); !strings.Contains(raw, os.TempDir()+"/") {
		t.Fatalf("no process of the run worked under the test's $TMPDIR %s", os.TempDir())
	}
	lines := strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(out, "observations.jsonl")))), "\n")
	drops, at := 0, -1
	for i, l := range lines {
		var o pgPowerObs
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatal(err)
		}
		if o.PGPower == nil {
			continue
		}
		at = i
		if o.Model != powerfs.ModelDrop {
			continue
		}
		drops++
		want := "1"
		if o.Point == pattern.PointACK || o.Point == pattern.PointACKOpen {
			want = "0"
		}
		if got := o.Values["one job"].Text; got != want {
			t.Errorf("drop cut at %s: %s jobs, want %s", o.Point, got, want)
		}
	}
	if drops == 0 {
		t.Fatal("no drop power trial on PostgreSQL recorded")
	}
	// Each trial names the postmaster its cut SIGKILLed on the mount, a
	// process line of its own.
	workers := map[int]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(out, "raw-processes.jsonl")))), "\n") {
		var p struct {
			ID     int    `json:"id"`
			Worker string `json:"worker"`
		}
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatal(err)
		}
		workers[p.ID] = p.Worker
	}
	for i, l := range lines {
		var o struct {
			PGPower *struct {
				ID int `json:"server_process_id"`
			} `json:"pg_power"`
		}
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatal(err)
		}
		if o.PGPower != nil && workers[o.PGPower.ID] != backend.PostmasterWorker {
			t.Errorf("line %d: server_process_id %d names worker %q, want the postmaster's line", i, o.PGPower.ID, workers[o.PGPower.ID])
		}
	}
	if v := execIn(t, Hooks{}, "verify", out); v.code != 4 || strings.Contains(v.stdout, "✗") {
		t.Fatalf("verify exit %d, want 4 (consistent, the run failed) with no finding:\n%s%s", v.code, v.stdout, v.stderr)
	}
	for _, tt := range []struct{ field, value string }{{"synchronous_commit", "on"}, {"fsync", "off"}} {
		t.Run("edited "+tt.field, func(t *testing.T) {
			var m map[string]any
			dec := json.NewDecoder(strings.NewReader(lines[at]))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			m["pg_power"].(map[string]any)["settings"].(map[string]any)[tt.field] = tt.value
			b, _ := json.Marshal(m)
			edited := append([]string{}, lines...)
			edited[at] = string(b)
			if v := verifyObservations(t, out, edited); !strings.Contains(v.stdout, "pg_power.settings."+tt.field) {
				t.Errorf("verify exit %d, want a finding on pg_power.settings.%s:\n%s%s", v.code, tt.field, v.stdout, v.stderr)
			}
		})
	}
}
