package backend

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/powerfs"
)

// TestPowerName: a condition's name of its server settings reads back as
// the same settings, for every cell of the matrix.
func TestPowerName(t *testing.T) {
	for _, fs := range []string{"on", "off"} {
		for _, sc := range []string{"on", "local", "off"} {
			for _, fpw := range []string{"on", "off"} {
				s := PowerSettings{Fsync: fs, SynchronousCommit: sc, FullPageWrites: fpw}
				if d := cmp.Diff(s, ParsePowerName(s.Name())); d != "" {
					t.Errorf("%s read back (-want +got):\n%s", s.Name(), d)
				}
			}
		}
	}
}

// TestPowerDamage: what a recorded cut says of the recovered server, one
// line for each kind of damage, and none for a clean one.
func TestPowerDamage(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    PowerOutcome
		want []string
	}{
		{"clean", PowerOutcome{Started: true}, nil},
		{"no start, first FATAL", PowerOutcome{StartLog: []string{"LOG: a", "FATAL: b", "PANIC: c", "LOG: d"}},
			[]string{"the server did not start on the rebuilt folder: FATAL: b"}},
		{"no start, last line", PowerOutcome{StartLog: []string{"LOG: a", "LOG: d"}},
			[]string{"the server did not start on the rebuilt folder: LOG: d"}},
		{"amcheck, checksums, pages", PowerOutcome{Started: true, Amcheck: []string{"i: bad"}, ChecksumFailures: 2, Rejected: []string{"page verification failed"}},
			[]string{"amcheck: i: bad", "checksum failures: 2", "page verification failed"}},
	} {
		if d := cmp.Diff(tt.want, tt.o.Damage()); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}

// TestCheckChecksums: a recovered server without data checksums is named,
// as is one whose setting a folder of format 9 or newer does not record;
// a server that did not start, or an older folder, is not asked.
func TestCheckChecksums(t *testing.T) {
	for _, tt := range []struct {
		name      string
		o         PowerOutcome
		recorded  bool
		wantField string
	}{
		{"on", PowerOutcome{Started: true, DataChecksums: "on"}, true, ""},
		{"off", PowerOutcome{Started: true, DataChecksums: "off"}, true, "data_checksums"},
		{"off in an older folder too", PowerOutcome{Started: true, DataChecksums: "off"}, false, "data_checksums"},
		{"missing", PowerOutcome{Started: true}, true, "data_checksums"},
		{"missing in an older folder", PowerOutcome{Started: true}, false, ""},
		{"no server to ask", PowerOutcome{}, true, ""},
	} {
		field, text := CheckChecksums(tt.o, tt.recorded)
		if field != tt.wantField {
			t.Errorf("%s: field %q (%s), want %q", tt.name, field, text, tt.wantField)
		}
	}
}

// TestCutParams: the seed and the unit go with torn only, and no unit
// (a folder made before fault_unit) is the sector.
func TestCutParams(t *testing.T) {
	for _, tt := range []struct {
		model string
		unit  int
		want  powerfs.Params
	}{
		{powerfs.ModelDrop, 0, powerfs.Params{Model: powerfs.ModelDrop, DirModel: powerfs.DirPOSIX, Unit: 512}},
		{powerfs.ModelDrop, 4096, powerfs.Params{Model: powerfs.ModelDrop, DirModel: powerfs.DirPOSIX, Unit: 512}},
		{powerfs.ModelTorn, 0, powerfs.Params{Model: powerfs.ModelTorn, DirModel: powerfs.DirPOSIX, Unit: 512, Seed: 7}},
		{powerfs.ModelTorn, 512, powerfs.Params{Model: powerfs.ModelTorn, DirModel: powerfs.DirPOSIX, Unit: 512, Seed: 7}},
		{powerfs.ModelTorn, 4096, powerfs.Params{Model: powerfs.ModelTorn, DirModel: powerfs.DirPOSIX, Unit: 4096, Seed: 7}},
	} {
		if d := cmp.Diff(tt.want, CutParams(tt.model, 7, tt.unit)); d != "" {
			t.Errorf("%s, unit %d (-want +got):\n%s", tt.model, tt.unit, d)
		}
	}
}
