// Package durability is the power-loss durability matrix: every pattern
// crashed at every point its workers report, by a process kill and by a
// power cut modelled by worker/faultvfs, under every journal_mode and
// synchronous setting. After each cut the parent checks the recovered file
// (integrity_check, rows), lets the pattern go on (redelivery, resume and
// resolve) and classifies what happened: rows rolled back, acknowledged
// work lost, duplicates, missing work. The oracle is the set of outcomes
// the durability model admits; the check is membership.
//
// The scenario is opt-in: a full matrix is a few hundred processes, so it
// runs only with --scenario durability.
package durability

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/scenario"
	"idemlab/worker/sqlitedb"
)

// Name is the scenario's name on the command line.
const Name = "durability"

// Patterns: the two redelivery patterns of article 000, the batch journal
// of article 002 and the TTL claim of article 003 (PatternClaim).
const (
	PatternSeparate = "redelivery-separate"
	PatternSingle   = "redelivery-single"
	PatternBatch    = "batch-journal"
)

// AllPatterns in run order.
var AllPatterns = []string{PatternSeparate, PatternSingle, PatternBatch, PatternClaim}

// Crash kinds.
const (
	KindKill  = "kill"
	KindPower = "power"
)

// AllKinds in run order.
var AllKinds = []string{KindKill, KindPower}

// Flag names.
const (
	FlagPattern     = "pattern"
	FlagJournalMode = "journal-mode"
	FlagSynchronous = "synchronous"
	FlagKind        = "kind"
	FlagItems       = "items"
)

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

// Scenario is the durability matrix. Oracle, when set, replaces Allowed;
// tests use it to show that a wrong expectation fails.
type Scenario struct {
	Oracle func(c Condition, items int, point string) ([]string, error)
}

func (Scenario) Name() string { return Name }

func (Scenario) Summary() string {
	return "power loss: every pattern × crash point × journal_mode × synchronous, killed and power-cut (faultvfs)"
}

// OptIn keeps the matrix out of a run without --scenario.
func (Scenario) OptIn() bool { return true }

func (Scenario) Flags() []scenario.Flag {
	return []scenario.Flag{
		{Name: FlagPattern, Usage: "patterns, comma list: " + strings.Join(AllPatterns, ",")},
		{Name: FlagJournalMode, Usage: "journal modes, comma list: DELETE,WAL"},
		{Name: FlagSynchronous, Usage: "synchronous levels, comma list: OFF,NORMAL,FULL,EXTRA"},
		{Name: FlagKind, Usage: "crash kinds, comma list: kill,power"},
		{Name: FlagItems, Usage: "batch items (durability.items), 1 to 5"},
	}
}

// Plan decodes the optional section, applies the flags and validates.
func (Scenario) Plan(section json.RawMessage, overrides map[string]string) (scenario.Plan, error) {
	var in Input
	if len(section) > 0 && string(section) != "null" {
		if err := scenario.DecodeSection(Name, section, &in); err != nil {
			return nil, err
		}
	}
	lists := []struct {
		flag string
		dst  *[]string
	}{{FlagPattern, &in.Patterns}, {FlagJournalMode, &in.JournalModes}, {FlagSynchronous, &in.Synchronous}, {FlagKind, &in.Kinds}}
	for _, l := range lists {
		if v, ok := overrides[l.flag]; ok {
			*l.dst = splitList(v)
		}
	}
	if n, ok, err := scenario.IntFlag(overrides, FlagItems, 1, 5); err != nil {
		return nil, err
	} else if ok {
		in.Items = n
	}
	st, err := SettingsOf(in)
	if err != nil {
		return nil, err
	}
	return &plan{s: st}, nil
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

// SettingsOf fills the defaults and derives the conditions.
func SettingsOf(in Input) (Settings, error) {
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
	}{
		{"patterns", &in.Patterns, AllPatterns},
		{"journal_modes", &in.JournalModes, sqlitedb.JournalModes},
		{"synchronous", &in.Synchronous, sqlitedb.SyncLevels},
		{"kinds", &in.Kinds, AllKinds},
	}
	for _, l := range lists {
		if len(*l.v) == 0 {
			*l.v = l.known
		}
		for _, x := range *l.v {
			if !slices.Contains(l.known, x) {
				return Settings{}, fmt.Errorf("durability.%s: %q is not one of %s", l.field, x, strings.Join(l.known, ", "))
			}
		}
		if dup := firstDup(*l.v); dup != "" {
			return Settings{}, fmt.Errorf("durability.%s: %q is listed twice", l.field, dup)
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
