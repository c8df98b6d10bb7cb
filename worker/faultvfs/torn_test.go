package faultvfs

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUnits(t *testing.T) {
	tests := []struct {
		name  string
		spans []Span
		unit  int
		want  []Span
	}{
		{"inside one sector", []Span{{10, 20}}, 512, []Span{{10, 20}}},
		{"cut at sector boundaries, never wider than the write", []Span{{500, 1100}}, 512, []Span{{500, 512}, {512, 1024}, {1024, 1100}}},
		{"page units", []Span{{4000, 8200}}, 4096, []Span{{4000, 4096}, {4096, 8192}, {8192, 8200}}},
		{"a truncation is one unit", []Span{{0, 4}, {4096, ToEnd}}, 512, []Span{{0, 4}, {4096, ToEnd}}},
		{"nothing written", nil, 512, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Units(tt.spans, tt.unit)); diff != "" {
				t.Errorf("Units (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecide checks that a decision depends on the seed, the name and the
// offset, nothing else, and that all three choices occur.
func TestDecide(t *testing.T) {
	units := Units([]Span{{0, 64 * 512}}, 512)
	decide := func(seed int64, name string) string {
		var b strings.Builder
		for _, u := range units {
			b.WriteByte(Decide(seed, name, u))
		}
		return b.String()
	}
	a := decide(1, "db")
	if again := decide(1, "db"); again != a {
		t.Fatalf("the same seed decided %q, then %q", a, again)
	}
	if other := decide(2, "db"); other == a {
		t.Errorf("seeds 1 and 2 decided alike: %q", a)
	}
	if other := decide(1, "db-wal"); other == a {
		t.Errorf("two files decided alike: %q", a)
	}
	for _, c := range []string{"k", "d", "g"} {
		if !strings.Contains(a, c) {
			t.Errorf("64 units never decided %s: %q", c, a)
		}
	}
}

func TestTear(t *testing.T) {
	durable := []byte("AAAAAAAA")
	live := []byte("BBBBBBBBCCCC")
	tests := []struct {
		name      string
		spans     []Span
		decisions string
		want      string
	}{
		{"keep all", []Span{{0, 12}}, "k", "BBBBBBBBCCCC"},
		{"drop all", []Span{{0, 12}}, "d", "AAAAAAAA"},
		{"an append kept past a dropped overwrite", []Span{{2, 4}, {8, 12}}, "dk", "AAAAAAAACCCC"},
		{"an overwrite kept, the append dropped", []Span{{2, 4}, {8, 12}}, "kd", "AABBAAAA"},
		{"a later append kept past a dropped one leaves zeros", []Span{{8, 10}, {10, 12}}, "dk", "AAAAAAAA\x00\x00CC"},
		{"a truncation kept cuts first", []Span{{4, ToEnd}}, "k", "AAAABBBBCCCC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// 4-byte units would split these spans; a unit of 512 keeps
			// each span whole, so the decisions map one to one.
			got, err := Tear(durable, live, TornFile{Name: "f", Spans: tt.spans, Decisions: tt.decisions}, 1, 512)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Tear = %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := Tear(durable, live, TornFile{Name: "f", Spans: []Span{{0, 4}}, Decisions: "kk"}, 1, 512); err == nil {
		t.Error("Tear accepted two decisions for one unit")
	}
}

// TestTornCutKeepsPowersafeOverwrite cuts one sequence under many seeds and
// checks every unit against its decision: kept units hold the live bytes,
// dropped ones the synced bytes, garbled ones differ from both, and no byte
// outside what was written since the sync ever changes.
func TestTornCutKeepsPowersafeOverwrite(t *testing.T) {
	synced := bytes.Repeat([]byte{'s'}, 4096)
	s := NewSim()
	s.Adopt("db", synced)
	if err := s.Write("db", 100, bytes.Repeat([]byte{'w'}, 1500)); err != nil {
		t.Fatal(err)
	}
	if err := s.Write("db", 3000, bytes.Repeat([]byte{'x'}, 600)); err != nil {
		t.Fatal(err)
	}
	live := s.Files()["db"]
	written := func(i int) bool { return i >= 100 && i < 1600 || i >= 3000 && i < 3600 }
	seen := map[byte]bool{}
	for seed := int64(0); seed < 16; seed++ {
		o := Options{Fault: FaultTorn, Seed: seed}
		cut, err := s.CutWith(o)
		if err != nil {
			t.Fatal(err)
		}
		got := cut["db"]
		if len(got) != len(live) {
			t.Fatalf("seed %d: %d bytes, want %d", seed, len(got), len(live))
		}
		for i := range got {
			if !written(i) && got[i] != synced[i] {
				t.Fatalf("seed %d: byte %d outside every write changed", seed, i)
			}
		}
		torn := s.Torn(o)
		if len(torn) != 1 {
			t.Fatalf("seed %d: torn plan %+v, want one file", seed, torn)
		}
		for k, u := range Units(torn[0].Spans, UnitSector) {
			d := torn[0].Decisions[k]
			seen[d] = true
			part, l, sy := got[u[0]:u[1]], live[u[0]:u[1]], synced[u[0]:u[1]]
			switch {
			case d == DecideKeep && !bytes.Equal(part, l),
				d == DecideDrop && !bytes.Equal(part, sy),
				d == DecideGarble && (bytes.Equal(part, l) || bytes.Equal(part, sy)):
				t.Errorf("seed %d: unit %v decided %c holds %q…", seed, u, d, part[:min(8, len(part))])
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("16 seeds took only the decisions %v", seen)
	}
}

// TestTornOnlyTouchesTheLiveInode: a journal deleted and created again
// comes back as the old inode, onto which the new inode's writes cannot
// land, so the torn mode leaves it alone.
func TestTornOnlyTouchesTheLiveInode(t *testing.T) {
	s := NewSim()
	s.Adopt("db", []byte("x"))
	s.Create("j")
	must(t, s.Write("j", 0, []byte("first")))
	must(t, s.Sync("j", true))
	must(t, s.Delete("j", false))
	s.Create("j")
	must(t, s.Write("j", 0, []byte("second")))
	o := Options{Fault: FaultTorn, Seed: 3}
	if torn := s.Torn(o); len(torn) != 0 {
		t.Errorf("torn plan %+v, want none", torn)
	}
	cut, err := s.CutWith(o)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(files("db", "x", "j", "first"), cut, cmp.Comparer(sameBytes)); diff != "" {
		t.Errorf("cut (-want +got):\n%s", diff)
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, o := range []Options{{Fault: "tear"}, {Fault: FaultTorn, Unit: 1000}} {
		if _, err := NewSim().CutWith(o); err == nil {
			t.Errorf("CutWith(%+v) accepted", o)
		}
	}
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// ExampleUnits shows how a WAL frame that straddles sectors is decided.
func ExampleUnits() {
	fmt.Println(Units([]Span{{32, 1100}}, UnitSector))
	// Output: [[32 512] [512 1024] [1024 1100]]
}
