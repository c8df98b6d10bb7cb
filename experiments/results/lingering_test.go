package results

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLingering: a process line that names processes outliving it is a
// finding on it, naming each by pid and command; a group that is not the
// one the harness made for the process (led by it) is one too.
func TestLingering(t *testing.T) {
	proc := func(l *Lingered) Process {
		return Process{N: 3, ProcessRecord: ProcessRecord{ID: 2, PID: 100, Condition: "c", Lingered: l}}
	}
	tests := []struct {
		name string
		l    *Lingered
		want []string
	}{
		{"nothing lingered", nil, nil},
		{"a double fork", &Lingered{Group: 100, Processes: []LingeringProcess{{PID: 104, Comm: "sleep"}}},
			[]string{"line 3 (process 2): lingered: 1 process(es) of its group 100 were still running after it exited: pid 104 (sleep); the harness killed them"}},
		{"another group", &Lingered{Group: 7, Processes: []LingeringProcess{{PID: 104, Comm: "sleep"}}},
			[]string{"line 3 (process 2): lingered.group: is 7, but the group the harness made for this process is led by it, pid 100",
				"line 3 (process 2): lingered: 1 process(es) of its group 7 were still running after it exited: pid 104 (sleep); the harness killed them"}},
		{"no processes named", &Lingered{Group: 100, Processes: []LingeringProcess{}},
			[]string{"line 3 (process 2): lingered.processes: is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range Lingering(NewRecords(nil, []Process{proc(tt.l)})) {
				if f.Condition != "c" || f.File != ProcessesFile {
					t.Errorf("finding %+v: want it on condition c in %s", f, ProcessesFile)
				}
				got = append(got, f.Field+": "+f.Message)
			}
			// Each finding starts as wanted; the rest is wording.
			if len(got) == len(tt.want) {
				for i := range got {
					if strings.HasPrefix(got[i], tt.want[i]) {
						got[i] = tt.want[i]
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}
