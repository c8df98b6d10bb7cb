package merge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/results"
	"idemlab/experiments/review"
	"idemlab/experiments/shard"
)

// TestJoinRecords: the record files are copied through shard by shard,
// byte for byte, and each block counts its shard's lines, across the
// copy's buffer boundaries too (a shard of 100,000 lines is copied in
// many writes).
func TestJoinRecords(t *testing.T) {
	long := strings.Repeat(`{"scenario":"explore","condition":"c","trial":1}`+"\n", 5000)
	tests := []struct {
		name       string
		obs, procs []string
	}{
		{
			name: "two small shards", obs: []string{"a\nb\n", "c\n"}, procs: []string{"p1\n", "p2\np3\np4\n"},
		},
		{
			name: "a shard without processes", obs: []string{"a\n", "b\n", "c\n"}, procs: []string{"p\n", "", "q\n"},
		},
		{
			name: "lines over many copy buffers", obs: []string{long, "x\n" + long}, procs: []string{long + long, "y\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var parts []part
			for i := range tt.obs {
				dir := t.TempDir()
				write(t, filepath.Join(dir, results.ObservationsFile), tt.obs[i])
				write(t, filepath.Join(dir, results.ProcessesFile), tt.procs[i])
				r := &results.Results{Shard: &shard.Part{Index: i + 1, Count: len(tt.obs)}}
				parts = append(parts, part{dir: dir, r: r, o: &review.Outcome{Folder: &results.Folder{ResultsRaw: []byte("{}")}}})
			}
			staging := t.TempDir()
			blocks, err := joinRecords(parts, staging)
			if err != nil {
				t.Fatal(err)
			}
			var got, want [][2]int
			for i, b := range blocks {
				got = append(got, [2]int{b.Observations, b.Processes})
				want = append(want, [2]int{strings.Count(tt.obs[i], "\n"), strings.Count(tt.procs[i], "\n")})
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("blocks' line counts (-want +got):\n%s", d)
			}
			for name, parts := range map[string][]string{results.ObservationsFile: tt.obs, results.ProcessesFile: tt.procs} {
				b, err := os.ReadFile(filepath.Join(staging, name))
				if err != nil {
					t.Fatal(err)
				}
				if string(b) != strings.Join(parts, "") {
					t.Errorf("%s is not the shards' files joined in order (%d bytes)", name, len(b))
				}
			}
		})
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
