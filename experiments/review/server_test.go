package review

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// TestCheckRerunServer: a rerun of PostgreSQL scenarios needs a --dsn or
// the server's binaries; with neither it is a usage error naming the
// scenarios, the package and the flag. SQLite needs neither, and refuses
// --dsn.
func TestCheckRerunServer(t *testing.T) {
	found := func() (string, error) { return "/bin", nil }
	missing := func() (string, error) { return "", errors.New("not installed") }
	for _, tt := range []struct {
		name  string
		pg    []string
		dsn   string
		find  func() (string, error)
		usage bool
		says  []string
	}{
		{name: "sqlite", find: missing},
		{name: "sqlite with dsn", dsn: "host=/x", find: found, usage: true, says: []string{"made on SQLite", "leave --dsn out"}},
		{name: "postgres with binaries", pg: []string{"claim"}, find: found},
		{name: "postgres with dsn", pg: []string{"claim"}, dsn: "host=/x", find: missing},
		{name: "postgres with neither", pg: []string{"redelivery", "claim"}, find: missing, usage: true,
			says: []string{"ran redelivery, claim on PostgreSQL", "install the package postgresql", "pass --dsn"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckRerunServer("DIR", tt.pg, tt.dsn, tt.find)
			if errors.Is(err, errclass.ErrUsage) != tt.usage || (err != nil) != tt.usage {
				t.Fatalf("CheckRerunServer = %v, want a usage error: %v", err, tt.usage)
			}
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q lacks %q", err, s)
				}
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("the error is more than one line: %q", err)
			}
		})
	}
}

// TestOnPostgres: a scenario ran on PostgreSQL when its recorded flags
// say so, or, without them, when the folder's input copy has a backend
// section that does; the flags win, as in the run.
func TestOnPostgres(t *testing.T) {
	reg := scenario.Registry{named("redelivery"), named("claim")}
	sqliteFlag := map[string]string{"backend": "sqlite"}
	pgFlag := map[string]string{"backend": "postgres", "isolation": "serializable"}
	for _, tt := range []struct {
		name  string
		input string
		ov    []map[string]string
		want  []string
	}{
		{name: "sqlite", input: `{}`, ov: []map[string]string{nil, nil}},
		{name: "flags", input: `{}`, ov: []map[string]string{nil, pgFlag}, want: []string{"claim"}},
		{name: "input section", input: `{"backend": {"name": "postgres"}}`, ov: []map[string]string{nil, nil}, want: []string{"redelivery", "claim"}},
		{name: "flag over section", input: `{"backend": {"name": "postgres"}}`, ov: []map[string]string{sqliteFlag, nil}, want: []string{"claim"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &results.Folder{Input: []byte(tt.input), Results: &results.Results{Scenarios: []results.ScenarioResult{
				{Name: "redelivery", Overrides: tt.ov[0]}, {Name: "claim", Overrides: tt.ov[1]},
			}}}
			got, err := OnPostgres(f, reg)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("OnPostgres = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// named is a scenario that has only a name, for a registry the input
// parser accepts.
type named string

func (n named) Name() string         { return string(n) }
func (named) Summary() string        { return "" }
func (named) Flags() []scenario.Flag { return nil }
func (named) Expect(json.RawMessage) ([]scenario.Expected, error) {
	return nil, nil
}
func (named) Caps() scenario.Caps { return scenario.Caps{} }
func (named) Plan(context.Context, scenario.PlanRequest) (scenario.Plan, error) {
	return nil, nil
}
func (named) Check(_ string, e, o json.RawMessage) (bool, []results.Difference, error) {
	return scenario.Equal(e, o)
}
func (named) Explain(results.ConditionResult) []scenario.Explained { return nil }
func (named) Compare(results.ScenarioResult) (scenario.Compared, error) {
	return scenario.Compared{}, nil
}
func (named) Fold(json.RawMessage, results.Records) (scenario.Folded, []results.Finding) {
	return scenario.Folded{}, nil
}
func (named) Report(results.ScenarioResult) (scenario.Section, error) {
	return scenario.Section{}, nil
}
