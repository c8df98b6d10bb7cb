package backend

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPowerCells: the cells come in table order (fsync, then
// synchronous_commit as given, then full_page_writes, then model), the
// known lists' order whatever order the input lists name them in, and
// only where every input list holds the cell's value.
func TestPowerCells(t *testing.T) {
	name := func(cs []PowerCell) []string {
		var out []string
		for _, c := range cs {
			out = append(out, fmt.Sprintf("%s/%s/%s/%s", c.Fsync, c.SynchronousCommit, c.FullPageWrites, c.Model))
		}
		return out
	}
	tests := []struct {
		name                    string
		fsync, scs, fpw, models []string
		want                    []string
	}{
		{"one cell", []string{"off"}, []string{"local"}, []string{"on"}, []string{"torn"}, []string{"off/local/on/torn"}},
		{"known order", []string{"off", "on"}, []string{"off"}, []string{"on"}, []string{"torn", "drop"},
			[]string{"on/off/on/drop", "on/off/on/torn", "off/off/on/drop", "off/off/on/torn"}},
		{"synchronous_commit as given", []string{"on"}, []string{"off", "on"}, []string{"off", "on"}, []string{"drop"},
			[]string{"on/off/on/drop", "on/off/off/drop", "on/on/on/drop", "on/on/off/drop"}},
		{"a value outside the known lists", []string{"maybe"}, []string{"on"}, []string{"on"}, []string{"drop"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, name(PowerCells(tt.fsync, tt.scs, tt.fpw, tt.models))); d != "" {
				t.Errorf("PowerCells (-want +got):\n%s", d)
			}
		})
	}
}

// TestPowerCellName: a cell's name is its settings' name, which
// ParsePowerName reads back, and then its model.
func TestPowerCellName(t *testing.T) {
	for _, c := range PowerCells(OnOff, []string{"off", "local", "on"}, OnOff, PowerModels) {
		settings, model, ok := strings.Cut(c.Name(), ","+c.Model)
		if !ok || model != "" || ParsePowerName(settings) != c.PowerSettings {
			t.Errorf("%+v is named %q: want its settings' name, read back by ParsePowerName, then \",%s\"", c, c.Name(), c.Model)
		}
	}
}

// TestCrashKeeps: a server crash keeps every commit under
// synchronous_commit on and local, none under off.
func TestCrashKeeps(t *testing.T) {
	for _, sc := range []string{"on", "local", "off"} {
		want := 3
		if sc == "off" {
			want = 0
		}
		if got := CrashKeeps(sc, 3); got != want {
			t.Errorf("CrashKeeps(%q, 3) = %d, want %d", sc, got, want)
		}
	}
}
