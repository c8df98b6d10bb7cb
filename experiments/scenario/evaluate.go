package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"

	"idemlab/experiments/results"
)

// Evaluate is the one derivation of a scenario's verdict: the oracle over
// the recorded settings, the fold over the records, and the check of one
// against the other. The experiment calls it on the files it has just
// written; verify calls it on the folder it is given.
//
// The fold's findings are part of the verdict. A finding about one
// condition's records fails that condition; any other fails the scenario.
// So a worker that lies, crashes or breaks the protocol gives a failed
// run with its folder written, and verify, deriving the same findings,
// agrees with the stored ones; an edited record gives findings the stored
// result does not hold, which verify reports as a disagreement.
func Evaluate(s Scenario, overrides map[string]string, settings json.RawMessage, rec results.Records) results.ScenarioResult {
	res := results.ScenarioResult{Name: s.Name(), Overrides: overrides, Settings: settings, Conditions: []results.ConditionResult{}, Pass: true}
	base := results.Field("scenarios", results.Key(s.Name()))
	exp, err := s.Expect(settings)
	if err != nil {
		res.Findings = append(res.Findings, results.Finding{File: results.ResultsFile, Field: base + ".settings", Message: fmt.Sprintf("the oracle cannot read them: %v", err)})
		res.Pass = false
		return res
	}
	folded, findings := s.Fold(settings, rec)
	// Every process's times, and what outlived it of its group, are
	// checked alike, whatever the scenario.
	findings = append(append(results.Windows(rec), results.Lingering(rec)...), findings...)
	byCond := map[string][]results.Finding{}
	known := map[string]bool{}
	for _, e := range exp {
		known[e.Condition] = true
	}
	for _, f := range findings {
		if known[f.Condition] {
			byCond[f.Condition] = append(byCond[f.Condition], f)
		} else {
			res.Findings = append(res.Findings, f)
		}
	}
	for _, e := range exp {
		cr := results.ConditionResult{Name: e.Condition, Scheduled: e.Scheduled, Expected: Marshal(e.Value), Findings: byCond[e.Condition]}
		obs, ok := folded.Observed[e.Condition]
		if !ok {
			cr.Findings = append(cr.Findings, results.Finding{File: results.ObservationsFile, Field: "condition " + e.Condition, Condition: e.Condition, Message: "no observation of this condition; every run observes all of them"})
			cr.Observed = json.RawMessage("null")
			res.Conditions = append(res.Conditions, cr)
			res.Pass = false
			continue
		}
		cr.Observed = Marshal(obs)
		pass, diffs, err := s.Check(e.Condition, cr.Expected, cr.Observed)
		if err != nil {
			cr.Findings = append(cr.Findings, results.Finding{File: results.ResultsFile, Field: base + ".conditions[" + e.Condition + "]", Condition: e.Condition, Message: err.Error()})
		}
		cr.Pass, cr.Differences = pass, diffs
		cr.Pass = cr.Pass && len(cr.Findings) == 0
		res.Conditions = append(res.Conditions, cr)
		res.Pass = res.Pass && cr.Pass
	}
	plan, planFindings := JudgePlan(settings, rec, folded)
	res.Plan = plan
	for _, f := range planFindings {
		placed := false
		for i := range res.Conditions {
			if res.Conditions[i].Name == f.Condition {
				res.Conditions[i].Findings = append(res.Conditions[i].Findings, f)
				res.Conditions[i].Pass = false
				placed = true
			}
		}
		if !placed {
			res.Findings = append(res.Findings, f)
		}
		res.Pass = false
	}
	for name := range folded.Observed {
		if !known[name] {
			res.Findings = append(res.Findings, results.Finding{File: results.ObservationsFile, Field: "condition " + name, Message: fmt.Sprintf("observed, but the settings give no such condition of scenario %s", s.Name())})
		}
	}
	res.Pass = res.Pass && len(res.Findings) == 0
	if folded.Extra != nil {
		res.Extra = Marshal(folded.Extra)
	}
	return res
}

// Differences lists the leaves where observed differs from expected.
func Differences(expected, observed any) []results.Difference {
	var out []results.Difference
	for _, d := range results.DiffPaths("", expected, observed) {
		path := d.Path
		if path == "" {
			path = "."
		}
		out = append(out, results.Difference{Path: path, Expected: d.A, Observed: d.B})
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
