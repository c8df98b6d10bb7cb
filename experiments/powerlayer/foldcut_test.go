package powerlayer

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/faultvfs"
	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
)

// TestParamsOf: the fs layer cuts under the VFS cut's fault, with its seed
// and unit only when torn, on POSIX directories unless another is named.
func TestParamsOf(t *testing.T) {
	tests := []struct {
		name string
		o    faultvfs.Options
		dir  string
		want powerfs.Params
	}{
		{"drop", faultvfs.Options{Fault: faultvfs.FaultDrop, Seed: 4}, "", powerfs.Params{Model: powerfs.ModelDrop, DirModel: powerfs.DirPOSIX}},
		{"keep on ext4", faultvfs.Options{Fault: faultvfs.FaultKeep}, powerfs.DirExt4, powerfs.Params{Model: powerfs.ModelKeep, DirModel: powerfs.DirExt4}},
		{"torn", faultvfs.Options{Fault: faultvfs.FaultTorn, Seed: 9, Unit: faultvfs.UnitPage}, "",
			powerfs.Params{Model: powerfs.ModelTorn, DirModel: powerfs.DirPOSIX, Seed: 9, Unit: faultvfs.UnitPage}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, ParamsOf(tt.o, tt.dir)); d != "" {
				t.Errorf("ParamsOf (-want +got):\n%s", d)
			}
		})
	}
}

// TestCheckSyncCut: a cut op at the sync point's fsync and side passes;
// another fsync, the other side, another op or none is named.
func TestCheckSyncCut(t *testing.T) {
	cut := protocol.SyncCut{N: 2, After: true}
	tests := []struct {
		name string
		op   *powerfs.Op
		bad  bool
	}{
		{"at the point", &powerfs.Op{Kind: powerfs.OpCut, Sync: 2, At: "after"}, false},
		{"other fsync", &powerfs.Op{Kind: powerfs.OpCut, Sync: 1, At: "after"}, true},
		{"other side", &powerfs.Op{Kind: powerfs.OpCut, Sync: 2, At: "before"}, true},
		{"not a cut", &powerfs.Op{Kind: "write", Sync: 2, At: "after"}, true},
		{"none", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			field, text := CheckSyncCut(Record{Outcome: powerfs.Outcome{Cut: tt.op}}, cut)
			if (field != "") != tt.bad || (tt.bad && field != "outcome.cut") {
				t.Errorf("CheckSyncCut = %q %q, want a finding: %v", field, text, tt.bad)
			}
		})
	}
}
