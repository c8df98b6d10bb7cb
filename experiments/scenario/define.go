package scenario

import (
	"encoding/json"
	"fmt"

	"idemlab/experiments/backend"
	"idemlab/experiments/results"
)

// Typed is a scenario written against its own settings type S and its own
// extra table X. Define turns it into a Scenario, so the settings are
// decoded in one place and every method gets typed values.
type Typed[S, X any] interface {
	Name() string
	Summary() string
	Flags() []Flag
	Plan(section json.RawMessage, overrides map[string]string) (Plan, error)
	// Expect is the oracle over the recorded settings.
	Expect(st S) ([]Expected, error)
	// Fold derives the observed figures from the records alone.
	Fold(st S, rec results.Records) (Folded, []results.Finding)
	// Report arranges a derived result for people. extra is the derived
	// extra table, decoded; it is the zero X when the result has none.
	Report(st S, res results.ScenarioResult, extra X) (Section, error)
}

// Validator is implemented by settings whose recorded values have limits
// beyond their JSON shape. Define checks them right after decoding, so a
// hand-edited file cannot make a fold or an oracle allocate without bound.
type Validator interface {
	Validate() error
}

// Define adapts a typed scenario to the Scenario interface. It forwards
// OptIn, Check, Explainer and TypedComparer when the scenario has them.
func Define[S, X any](t Typed[S, X]) Scenario {
	return defined[S, X]{t: t}
}

type defined[S, X any] struct{ t Typed[S, X] }

func (d defined[S, X]) Name() string    { return d.t.Name() }
func (d defined[S, X]) Summary() string { return d.t.Summary() }
func (d defined[S, X]) Flags() []Flag   { return d.t.Flags() }

func (d defined[S, X]) Plan(section json.RawMessage, overrides map[string]string) (Plan, error) {
	return d.t.Plan(section, overrides)
}

// PlanFiles plans through the typed scenario's PlanFiles when it reads
// files, and through its Plan otherwise.
func (d defined[S, X]) PlanFiles(section json.RawMessage, overrides map[string]string, files Files) (Plan, error) {
	if fp, ok := d.t.(FilePlanner); ok {
		return fp.PlanFiles(section, overrides, files)
	}
	return d.t.Plan(section, overrides)
}

// PlanFilesOn plans through the typed scenario's PlanFilesOn, or refuses
// as PlanOn does when it has none.
func (d defined[S, X]) PlanFilesOn(b backend.Spec, section json.RawMessage, overrides map[string]string, files Files) (Plan, error) {
	if fp, ok := d.t.(FilePlannerOn); ok {
		return fp.PlanFilesOn(b, section, overrides, files)
	}
	return d.PlanOn(b, section, overrides)
}

// Settings decodes recorded settings strictly, so a field the scenario does
// not know is an error rather than silently dropped, and checks their
// limits when they have any.
func (d defined[S, X]) settings(raw json.RawMessage) (S, error) {
	var st S
	if err := DecodeStrict(raw, &st); err != nil {
		return st, fmt.Errorf("not %s settings: %w", d.t.Name(), err)
	}
	if v, ok := any(st).(Validator); ok {
		if err := v.Validate(); err != nil {
			return st, fmt.Errorf("not %s settings: %w", d.t.Name(), err)
		}
	}
	return st, nil
}

func (d defined[S, X]) Expect(raw json.RawMessage) ([]Expected, error) {
	st, err := d.settings(raw)
	if err != nil {
		return nil, err
	}
	return d.t.Expect(st)
}

func (d defined[S, X]) Fold(raw json.RawMessage, rec results.Records) (Folded, []results.Finding) {
	st, err := d.settings(raw)
	if err != nil {
		return Folded{Observed: map[string]any{}}, []results.Finding{{
			File: results.ResultsFile, Field: results.Field("scenarios", results.Key(d.t.Name()), "settings"), Message: err.Error(),
		}}
	}
	return d.t.Fold(st, rec)
}

func (d defined[S, X]) Report(res results.ScenarioResult) (Section, error) {
	st, x, err := d.decode(res)
	if err != nil {
		return Section{}, err
	}
	return d.t.Report(st, res, x)
}

// decode decodes a derived result's settings and extra table; the extra
// is the zero X when the result has none.
func (d defined[S, X]) decode(res results.ScenarioResult) (S, X, error) {
	var x X
	st, err := d.settings(res.Settings)
	if err != nil {
		return st, x, err
	}
	if len(res.Extra) > 0 && string(res.Extra) != "null" {
		if err := DecodeStrict(res.Extra, &x); err != nil {
			return st, x, fmt.Errorf("%s extra: %w", d.t.Name(), err)
		}
	}
	return st, x, nil
}

// Compare uses the typed scenario's TypedComparer; without one it says
// nothing.
func (d defined[S, X]) Compare(res results.ScenarioResult) (Compared, error) {
	c, ok := d.t.(TypedComparer[S, X])
	if !ok {
		return Compared{}, nil
	}
	st, x, err := d.decode(res)
	if err != nil {
		return Compared{}, err
	}
	return c.Compare(st, res, x), nil
}

// PlanOn forwards to the typed scenario's PlanOn, or refuses and says why
// when it runs on SQLite only.
func (d defined[S, X]) PlanOn(b backend.Spec, section json.RawMessage, overrides map[string]string) (Plan, error) {
	if b.IsSQLite() {
		return d.t.Plan(section, overrides)
	}
	if o, ok := d.t.(OnBackend); ok {
		return o.PlanOn(b, section, overrides)
	}
	return nil, refuse(d.t, d.t, b)
}

func (d defined[S, X]) OptIn() bool {
	o, ok := d.t.(OptIn)
	return ok && o.OptIn()
}

func (d defined[S, X]) Scheduled(condition string) bool {
	sc, ok := d.t.(Scheduled)
	return ok && sc.Scheduled(condition)
}

// Check uses the typed scenario's rule (Checker), or equality of the two
// JSON values when it has none, which is what Evaluate does for a plain
// Scenario.
func (d defined[S, X]) Check(condition string, expected, observed json.RawMessage) (bool, []results.Difference, error) {
	if c, ok := d.t.(Checker); ok {
		return c.Check(condition, expected, observed)
	}
	diffs := Differences(expected, observed)
	return len(diffs) == 0, diffs, nil
}

// Explain uses the typed scenario's Explainer; without one it names
// nothing, and Explain keeps the paths.
func (d defined[S, X]) Explain(c results.ConditionResult) []Explained {
	if e, ok := d.t.(Explainer); ok {
		return e.Explain(c)
	}
	return nil
}
