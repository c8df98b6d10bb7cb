package review

import (
	"fmt"
	"sort"

	"idemlab/experiments/harness"
	"idemlab/experiments/suite"
)

// plugin is what one scenario adds to the generic checks and renderings.
// Each scenario has its own file (plugin_NAME.go) that registers one in
// init; a scenario without one still gets the generic checks and a plain
// rendering, and verify says which checks it could not make.
type plugin struct {
	// article is the published data file under testdata/published, empty
	// when the scenario has none.
	article string
	// check compares the scenario's conditions with the oracle, the
	// observations and the processes.
	check func(f *Folder, s harness.ScenarioResult) []Finding
	// deterministic is what a rerun must reproduce exactly; times, pids,
	// paths and timings are left out.
	deterministic func(f *Folder, s harness.ScenarioResult) (any, error)
	// overrides puts the recorded settings back as the experiment's
	// flags, so a rerun of a folder made with overrides runs the same.
	overrides func(s harness.ScenarioResult, o *suite.Options) error
	// articleTable sets the published figures beside the reproduced ones.
	articleTable func(pub []byte, s harness.ScenarioResult) (*ArticleSection, error)
	// cell renders one condition's expected or observed value compactly.
	cell func(v any) string
	// charts draws the scenario's figures.
	charts func(f *Folder, s harness.ScenarioResult) ([]Chart, error)
}

var plugins = map[string]plugin{}

func register(name string, p plugin) {
	if _, dup := plugins[name]; dup {
		panic(fmt.Sprintf("review: plug-in %q registered twice", name))
	}
	plugins[name] = p
}

// PluginNames lists the scenarios with a plug-in.
func PluginNames() []string {
	var out []string
	for n := range plugins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ProcessView is the deterministic part of a process record: who ran, in
// which condition, and how it ended.
type ProcessView struct {
	Condition string   `json:"condition"`
	Label     string   `json:"label"`
	Worker    string   `json:"worker"`
	ExitCode  int      `json:"exit_code"`
	Signal    string   `json:"signal,omitempty"`
	KilledBy  string   `json:"killed_by,omitempty"`
	CrashedAt string   `json:"crashed_at,omitempty"`
	Points    []string `json:"points,omitempty"`
}

// processViews projects a scenario's processes in recorded order. Racing
// scenarios record processes in finishing order, so callers that race sort
// the views.
func processViews(f *Folder, scenario string) []ProcessView {
	var out []ProcessView
	for _, p := range f.Processes {
		if p.Scenario != scenario {
			continue
		}
		v := ProcessView{Condition: p.Condition, Label: p.Label, Worker: p.Worker, ExitCode: p.ExitCode, Signal: p.Signal, KilledBy: p.KilledBy}
		if rep, err := harness.ParseReport(p.Stdout); err == nil {
			v.CrashedAt, v.Points = rep.CrashedAt, rep.Points
		}
		out = append(out, v)
	}
	return out
}
