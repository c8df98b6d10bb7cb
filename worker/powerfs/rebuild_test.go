package powerfs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/faultvfs"
	"idemlab/worker/powerfs"
)

// overwrite replaces f's 1000 durable bytes with 2000 new ones and ACKs,
// with no fsync.
const overwrite = `
import os, sys, time
with open(os.path.join(sys.argv[1], "f"), "r+b") as f:
    f.write(b"x" * 2000); f.flush()
print("ACK", flush=True)
time.sleep(600)
`

// TestTornCutMatchesTear: a torn cut leaves exactly what the fault VFS's
// Tear makes of the durable and the live bytes under the seeded
// decisions, at both unit sizes.
func TestTornCutMatchesTear(t *testing.T) {
	requireFUSE(t)
	requirePython(t)
	durable, live := bytes.Repeat([]byte("o"), 1000), bytes.Repeat([]byte("x"), 2000)
	for _, unit := range []int{faultvfs.UnitSector, faultvfs.UnitPage} {
		t.Run(strconv.Itoa(unit), func(t *testing.T) {
			// The first seed whose decisions garble a unit, and, where there
			// are several units, also keep or drop one, so every path of the
			// rebuild's tearing shows.
			spans := []powerfs.Span{{0, 2000}}
			var seed int64
			for seed = 1; ; seed++ {
				d := decide(seed, "f", spans, unit)
				if strings.ContainsRune(d, 'g') && (len(d) == 1 || strings.Trim(d, "g") != "") {
					break
				}
			}
			p := powerfs.Params{Model: powerfs.ModelTorn, DirModel: powerfs.DirPOSIX, Seed: seed, Unit: unit}
			cfg := trial(t, p)
			if err := os.WriteFile(filepath.Join(cfg.Backing, "f"), durable, 0o644); err != nil {
				t.Fatal(err)
			}
			m := start(t, cfg)
			s := python(t, overwrite, cfg.Mountpoint)
			waitAckOrCut(t, m, s)
			if _, err := m.Cut(s.cmd.Process.Pid); err != nil {
				t.Fatal(err)
			}
			want, err := faultvfs.Tear(durable, live, faultvfs.TornFile{Name: "f", Spans: spans, Decisions: decide(p.Seed, "f", spans, unit)}, p.Seed, unit)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(cfg.Backing, "f"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("torn cut left %d bytes that differ from Tear's %d (decisions %s)", len(got), len(want), decide(p.Seed, "f", spans, unit))
			}
		})
	}
}

// renames moves x over y, unlinks z and makes a directory, none of it
// synced, then ACKs.
const renames = `
import os, sys, time
m = sys.argv[1]
os.rename(os.path.join(m, "x"), os.path.join(m, "y"))
os.unlink(os.path.join(m, "z"))
os.mkdir(os.path.join(m, "new"))
open(os.path.join(m, "new", "n"), "w").write("N")
print("ACK", flush=True)
time.sleep(600)
`

// TestEntriesComeBack: names no directory sync covered go back to what
// the disk held, with their inodes' bytes; keep leaves them as the
// process did.
func TestEntriesComeBack(t *testing.T) {
	requireFUSE(t)
	requirePython(t)
	tests := []struct {
		model string
		want  map[string]string
	}{
		{powerfs.ModelDrop, map[string]string{"x": "X", "y": "Y", "z": "Z"}},
		{powerfs.ModelKeep, map[string]string{"y": "X", "new/n": "N"}},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			cfg := trial(t, powerfs.Params{Model: tt.model})
			for name, content := range map[string]string{"x": "X", "y": "Y", "z": "Z"} {
				if err := os.WriteFile(filepath.Join(cfg.Backing, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m := start(t, cfg)
			s := python(t, renames, cfg.Mountpoint)
			waitAckOrCut(t, m, s)
			if _, err := m.Cut(s.cmd.Process.Pid); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, files(t, cfg.Backing)); diff != "" {
				t.Errorf("backing folder after the cut (-want +got):\n%s", diff)
			}
		})
	}
}
