package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"

	"idemlab/experiments/harness"
	"idemlab/experiments/results"
)

// Evaluate is the one derivation of a scenario's verdict: the oracle over
// the recorded settings, the fold over the records, and the check of one
// against the other. The experiment calls it on the files it has just
// written; verify calls it on the folder it is given.
func Evaluate(s Scenario, overrides map[string]string, settings json.RawMessage, rec results.Records) (harness.ScenarioResult, []results.Finding) {
	res := harness.ScenarioResult{Name: s.Name(), Overrides: overrides, Settings: settings, Conditions: []harness.ConditionResult{}, Pass: true}
	var findings []results.Finding
	base := results.Field("scenarios", results.Key(s.Name()))
	exp, err := s.Expect(settings)
	if err != nil {
		findings = append(findings, results.Finding{File: harness.ResultsFile, Field: base + ".settings", Message: fmt.Sprintf("the oracle cannot read them: %v", err)})
		res.Pass = false
		return res, findings
	}
	folded, ff := s.Fold(settings, rec)
	findings = append(findings, ff...)
	known := map[string]bool{}
	for _, e := range exp {
		known[e.Condition] = true
		cr := harness.ConditionResult{Name: e.Condition, Expected: Marshal(e.Value)}
		obs, ok := folded.Observed[e.Condition]
		if !ok {
			findings = append(findings, results.Finding{File: harness.ObservationsFile, Field: "condition " + e.Condition, Message: "no observation of this condition; every run observes all of them"})
			cr.Observed = json.RawMessage("null")
			res.Conditions = append(res.Conditions, cr)
			res.Pass = false
			continue
		}
		cr.Observed = Marshal(obs)
		if c, ok := s.(Checker); ok {
			pass, diffs, err := c.Check(e.Condition, cr.Expected, cr.Observed)
			if err != nil {
				findings = append(findings, results.Finding{File: harness.ResultsFile, Field: base + ".conditions[" + e.Condition + "]", Message: err.Error()})
			}
			cr.Pass, cr.Differences = pass, diffs
		} else {
			cr.Differences = Differences(e.Value, obs)
			cr.Pass = len(cr.Differences) == 0
		}
		res.Conditions = append(res.Conditions, cr)
		res.Pass = res.Pass && cr.Pass
	}
	for name := range folded.Observed {
		if !known[name] {
			findings = append(findings, results.Finding{File: harness.ObservationsFile, Field: "condition " + name, Message: fmt.Sprintf("observed, but the settings give no such condition of scenario %s", s.Name())})
		}
	}
	if folded.Extra != nil {
		res.Extra = Marshal(folded.Extra)
	}
	return res, findings
}

// Differences lists the leaves where observed differs from expected.
func Differences(expected, observed any) []harness.Difference {
	var out []harness.Difference
	for _, d := range results.DiffPaths("", expected, observed) {
		path := d.Path
		if path == "" {
			path = "."
		}
		out = append(out, harness.Difference{Path: path, Expected: d.A, Observed: d.B})
	}
	return out
}

// Marshal encodes a derived value as compact JSON, without HTML escapes,
// so results.json reads "<" as "<".
func Marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Derived values are plain structs, maps and slices.
		panic(fmt.Sprintf("scenario: encode derived value: %v", err))
	}
	return json.RawMessage(bytes.TrimRight(b.Bytes(), "\n"))
}

// Registry is the ordered list of scenarios; the suite and verify take it
// from the caller, so neither imports any scenario.
type Registry []Scenario

// Lookup finds a scenario by name.
func (r Registry) Lookup(name string) (Scenario, bool) {
	for _, s := range r {
		if s.Name() == name {
			return s, true
		}
	}
	return nil, false
}

// Names lists the scenario names in order.
func (r Registry) Names() []string {
	out := make([]string, len(r))
	for i, s := range r {
		out[i] = s.Name()
	}
	return out
}
