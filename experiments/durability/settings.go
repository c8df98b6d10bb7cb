package durability

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"idemlab/worker/sqlitedb"
)

// busyTimeoutMS is every worker's default busy timeout; the matrix does not
// vary it.
const busyTimeoutMS = 5000

// Input is the durability section of input.json. Every field may be left
// out; the defaults are the full matrix.
type Input struct {
	EventID      string   `json:"event_id,omitempty"`
	JobKey       string   `json:"job_key,omitempty"`
	JobID        string   `json:"job_id,omitempty"`
	Items        int      `json:"items,omitempty"`
	Patterns     []string `json:"patterns,omitempty"`
	JournalModes []string `json:"journal_modes,omitempty"`
	Synchronous  []string `json:"synchronous,omitempty"`
	Kinds        []string `json:"kinds,omitempty"`
}

// Condition is one pattern under one setting; its trials are a normal run
// and one crash at each point that run reported.
type Condition struct {
	Name        string `json:"name"`
	Pattern     string `json:"pattern"`
	JournalMode string `json:"journal_mode"`
	Synchronous string `json:"synchronous"`
	Kind        string `json:"kind"`
}

// Setting returns the durability model's view of the condition.
func (c Condition) Setting() Setting {
	return Setting{JournalMode: c.JournalMode, Synchronous: c.Synchronous, Kind: c.Kind, Exclusive: c.Pattern == PatternBatch}
}

// Settings are recorded with the scenario; verify derives them again.
type Settings struct {
	EventID    string      `json:"event_id"`
	JobKey     string      `json:"job_key"`
	JobID      string      `json:"job_id"`
	Items      int         `json:"items"`
	Conditions []Condition `json:"conditions"`
	// BusyTimeoutMS is what every worker reads back; the journal mode and
	// synchronous level come from the condition.
	BusyTimeoutMS int `json:"busy_timeout_ms"`
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// settingsOf fills the defaults and derives the conditions. from maps an
// input field to the flag that set it, so an error names what the user
// typed: the input file has no durability section by default.
func settingsOf(in Input, from map[string]string) (Settings, error) {
	def := func(v *string, d string) {
		if strings.TrimSpace(*v) == "" {
			*v = d
		}
	}
	def(&in.EventID, "agent-run-042:completed")
	def(&in.JobKey, "review-agent-run-042")
	def(&in.JobID, "job-d")
	if in.Items == 0 {
		in.Items = 2
	}
	if in.Items < 1 || in.Items > 5 {
		return Settings{}, fmt.Errorf("durability.items %d: want 1 to 5", in.Items)
	}
	lists := []struct {
		field string
		v     *[]string
		known []string
		// anyCase: SQLite reads these pragmas in any case; the settings
		// record them as the known list spells them.
		anyCase bool
	}{
		{"patterns", &in.Patterns, AllPatterns, false},
		{"journal_modes", &in.JournalModes, sqlitedb.JournalModes, true},
		{"synchronous", &in.Synchronous, sqlitedb.SyncLevels, true},
		{"kinds", &in.Kinds, AllKinds, false},
	}
	for _, l := range lists {
		name := "durability." + l.field
		if f, ok := from[l.field]; ok {
			name = f
		}
		if len(*l.v) == 0 {
			*l.v = slices.Clone(l.known)
		}
		for i, x := range *l.v {
			k := slices.IndexFunc(l.known, func(k string) bool { return k == x || l.anyCase && strings.EqualFold(k, x) })
			if k < 0 {
				return Settings{}, fmt.Errorf("%s: %q is not one of %s", name, x, strings.Join(l.known, ", "))
			}
			(*l.v)[i] = l.known[k]
		}
		if dup := firstDup(*l.v); dup != "" {
			return Settings{}, fmt.Errorf("%s: %q is listed twice", name, dup)
		}
	}
	st := Settings{EventID: in.EventID, JobKey: in.JobKey, JobID: in.JobID, Items: in.Items, BusyTimeoutMS: busyTimeoutMS}
	// Run order follows the known lists, not the order given, so one set
	// of flags always gives one matrix.
	for _, p := range AllPatterns {
		for _, m := range sqlitedb.JournalModes {
			for _, sy := range sqlitedb.SyncLevels {
				for _, k := range AllKinds {
					if slices.Contains(in.Patterns, p) && slices.Contains(in.JournalModes, m) && slices.Contains(in.Synchronous, sy) && slices.Contains(in.Kinds, k) {
						st.Conditions = append(st.Conditions, Condition{Name: ConditionName(p, m, sy, k), Pattern: p, JournalMode: m, Synchronous: sy, Kind: k})
					}
				}
			}
		}
	}
	if len(st.Conditions) == 0 {
		return Settings{}, errors.New("durability: the chosen lists give no condition")
	}
	return st, nil
}

func firstDup(xs []string) string {
	seen := map[string]bool{}
	for _, x := range xs {
		if seen[x] {
			return x
		}
		seen[x] = true
	}
	return ""
}

// ConditionName is "pattern/MODE/SYNC/kind".
func ConditionName(pattern, mode, sync, kind string) string {
	return pattern + "/" + mode + "/" + sync + "/" + kind
}
