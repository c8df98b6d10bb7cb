package scenario

import (
	"context"
	"encoding/json"
	"errors"
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
	Caps() Caps
	Flags() []Flag
	// Plan gets a request whose backend the scenario declares (Define
	// refuses any other) and whose Files is never nil.
	Plan(ctx context.Context, req PlanRequest) (Plan, error)
	// Validate checks the limits recorded settings have beyond their
	// JSON shape. Define calls it right after decoding, so a hand-edited
	// file cannot make a fold or an oracle allocate without bound; nil
	// where there are none.
	Validate(st S) error
	// Expect is the oracle over the recorded settings.
	Expect(st S) ([]Expected, error)
	// Fold derives the observed figures from the records alone.
	Fold(st S, rec results.Records) (Folded, []results.Finding)
	// Check is Scenario.Check; Equal for a scenario whose conditions
	// pass by equality.
	Check(condition string, expected, observed json.RawMessage) (bool, []results.Difference, error)
	// Report arranges a derived result for people. extra is the derived
	// extra table, decoded; it is the zero X when the result has none.
	Report(st S, res results.ScenarioResult, extra X) (Section, error)
	// Explain is Scenario.Explain.
	Explain(c results.ConditionResult) []Explained
	// Compare says the derived result in a few words per condition; it
	// must be a pure function of its arguments (see Compared).
	Compare(st S, res results.ScenarioResult, extra X) Compared
}

// Define adapts a typed scenario to the Scenario interface.
func Define[S, X any](t Typed[S, X]) Scenario {
	return defined[S, X]{t: t}
}

type defined[S, X any] struct{ t Typed[S, X] }

func (d defined[S, X]) Name() string    { return d.t.Name() }
func (d defined[S, X]) Summary() string { return d.t.Summary() }
func (d defined[S, X]) Caps() Caps      { return d.t.Caps() }
func (d defined[S, X]) Flags() []Flag   { return d.t.Flags() }

// Plan refuses a backend the scenario does not declare, saying why, and
// otherwise plans with the zero backend read as SQLite and nil files as
// none. A plan whose context a signal cancelled is an error that keeps the
// cause (cancelled), whatever the scenario's Plan made of it.
func (d defined[S, X]) Plan(ctx context.Context, req PlanRequest) (Plan, error) {
	if req.Backend.Name == "" {
		req.Backend = backend.SQLite
	}
	if req.Files == nil {
		req.Files = noFiles{}
	}
	if c := d.t.Caps(); !c.RunsOn(req.Backend) {
		return nil, Refusal(d.t.Name(), c, req.Backend)
	}
	p, err := d.t.Plan(ctx, req)
	if err := cancelled(ctx, d.t.Name(), err); err != nil {
		return nil, err
	}
	return p, err
}

// cancelled is the error of scenario name's planning, which ended with
// err, when a signal cancelled ctx meanwhile: one that wraps the
// context's cause, so the edge classes it as an interruption, whether
// planning saw the cancellation (err wraps it already and is kept) or not
// (a plan made anyway, or an error that lost the cause, kept as text). It
// is nil while ctx is live.
func cancelled(ctx context.Context, name string, err error) error {
	cause := context.Cause(ctx)
	switch {
	case cause == nil:
		return nil
	case errors.Is(err, cause):
		return err
	case err != nil:
		return fmt.Errorf("%s: planning stopped by %w (it ended with: %v)", name, cause, err)
	}
	return fmt.Errorf("%s: planning stopped by %w", name, cause)
}

// Equal is the check of a condition that passes when its observed figures
// equal the expected ones.
func Equal(expected, observed json.RawMessage) (bool, []results.Difference, error) {
	diffs := Differences(expected, observed)
	return len(diffs) == 0, diffs, nil
}

// Settings decodes recorded settings strictly, so a field the scenario does
// not know is an error rather than silently dropped, and checks their
// limits when they have any.
func (d defined[S, X]) settings(raw json.RawMessage) (S, error) {
	var st S
	if err := DecodeStrict(raw, &st); err != nil {
		return st, fmt.Errorf("not %s settings: %w", d.t.Name(), err)
	}
	if err := d.t.Validate(st); err != nil {
		return st, fmt.Errorf("not %s settings: %w", d.t.Name(), err)
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

// Compare says the derived result as the typed scenario's Compare does.
func (d defined[S, X]) Compare(res results.ScenarioResult) (Compared, error) {
	st, x, err := d.decode(res)
	if err != nil {
		return Compared{}, err
	}
	return d.t.Compare(st, res, x), nil
}

func (d defined[S, X]) Check(condition string, expected, observed json.RawMessage) (bool, []results.Difference, error) {
	return d.t.Check(condition, expected, observed)
}

func (d defined[S, X]) Explain(c results.ConditionResult) []Explained { return d.t.Explain(c) }
