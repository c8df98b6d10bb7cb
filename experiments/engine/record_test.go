package engine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
)

// obs is a hand-made observation type, as a scenario's.
type obs struct {
	Scenario  string `json:"scenario"`
	Condition string `json:"condition"`
	Trial     int    `json:"trial"`
}

// read is one line as each sees it.
type read struct {
	N     int
	O     obs
	Cond  string
	Shard int
}

func line(n, sh int, condition, raw string) results.Line {
	return results.Line{N: n, Scenario: "s", Condition: condition, Raw: []byte(raw), Shard: sh}
}

// TestEach: every line that decodes into the scenario's type and names a
// condition of the settings reaches the fold, in order, with its
// condition; any other is a finding on its line, and is passed over.
func TestEach(t *testing.T) {
	conds := map[string]string{"a/none": "A", "a/points": "B"}
	tests := []struct {
		name     string
		lines    []results.Line
		want     []read
		findings []results.Finding
	}{
		{
			name: "every line reaches the fold, in order",
			lines: []results.Line{
				line(1, 0, "a/points", `{"scenario":"s","condition":"a/points","trial":3}`),
				line(2, 1, "a/none", `{"scenario":"s","condition":"a/none","trial":0}`),
			},
			want: []read{{1, obs{"s", "a/points", 3}, "B", 0}, {2, obs{"s", "a/none", 0}, "A", 1}},
		},
		{
			name: "a field the type lacks",
			lines: []results.Line{
				line(1, 0, "a/none", `{"scenario":"s","condition":"a/none","trial":0,"extra":1}`),
				line(2, 0, "a/points", `{"scenario":"s","condition":"a/points","trial":1}`),
			},
			want:     []read{{2, obs{"s", "a/points", 1}, "B", 0}},
			findings: []results.Finding{{File: results.ObservationsFile, Field: "line 1", Condition: "a/none", Message: `not a test observation: json: unknown field "extra"`}},
		},
		{
			name:     "a field of the wrong type",
			lines:    []results.Line{line(4, 0, "a/none", `{"scenario":"s","condition":"a/none","trial":"x"}`)},
			findings: []results.Finding{{File: results.ObservationsFile, Field: "line 4", Condition: "a/none", Message: "not a test observation: json: cannot unmarshal string into Go struct field obs.trial of type int"}},
		},
		{
			name:     "a condition the settings lack",
			lines:    []results.Line{line(2, 0, "a/random", `{"scenario":"s","condition":"a/random","trial":0}`)},
			findings: []results.Finding{{File: results.ObservationsFile, Field: "line 2: condition", Condition: "a/random", Message: `"a/random" is not a condition in the settings`}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c results.Checker
			var got []read
			Each(&c, results.NewRecords(tc.lines, nil), "a test observation", conds, func(l results.Line, o obs, cond string) {
				got = append(got, read{l.N, o, cond, l.Shard})
			})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lines folded (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.findings, c.Findings); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRecord: a trial's payload is one line of observations.jsonl, and
// a payload the recorder cannot write is the harness's error.
func TestRecord(t *testing.T) {
	tests := []struct {
		name    string
		payload any
		want    string
		err     error
	}{
		{"a trial", obs{"s", "a/points", 2}, `{"scenario":"s","condition":"a/points","trial":2}` + "\n", nil},
		{"a payload JSON cannot hold", map[string]any{"c": make(chan int)}, "", errclass.ErrHarness},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r, err := results.NewRecorder(dir)
			if err != nil {
				t.Fatal(err)
			}
			err = Record(r, tc.payload)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Errorf("Record = %v, want %v", err, tc.err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, results.ObservationsFile))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(b)); diff != "" {
				t.Errorf("observations.jsonl (-want +got):\n%s", diff)
			}
		})
	}
}
