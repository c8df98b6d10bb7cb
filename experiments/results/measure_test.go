package results

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type timedRun struct {
	Run   int     `json:"run"`
	MS    float64 `json:"ms" idemlab:"measure"`
	Floor float64 `json:"floor_ms"`
}

type lent struct {
	Lent float64 `json:"lent" idemlab:"measure"`
	Kept int     `json:"kept"`
}

type lentWhole struct {
	A int `json:"a"`
	B int `json:"b"`
}

type writesOwn struct {
	Inner float64 `json:"inner" idemlab:"measure"`
}

func (w writesOwn) MarshalJSON() ([]byte, error) { return []byte(`{"inner":1}`), nil }

type derived struct {
	lent
	*lentWhole `idemlab:"measure"`
	Runs       []timedRun          `json:"runs"`
	ByName     map[string]timedRun `json:"by_name"`
	ByNumber   map[int]*timedRun   `json:"by_number"`
	Any        any                 `json:"any"`
	Block      timedRun            `json:"block" idemlab:"measure"`
	Hidden     float64             `json:"-" idemlab:"measure"`
	Plain      float64             `json:"plain"`
	Own        writesOwn           `json:"own"`
	Nil        *timedRun           `json:"nil"`
	Other      float64             `idemlab:"other,measure"`
}

// TestMeasuresMarkStrip: Mark finds every tagged field where encoding/json
// writes it, and Strip leaves exactly those out of the written JSON, so an
// untagged float64 beside a tagged one is kept for comparison.
func TestMeasuresMarkStrip(t *testing.T) {
	v := derived{
		lent:      lent{Lent: 1.5, Kept: 2},
		lentWhole: &lentWhole{A: 1, B: 2},
		Runs:      []timedRun{{Run: 1, MS: 10.25, Floor: 7}, {Run: 2, MS: 11, Floor: 8}},
		ByName:    map[string]timedRun{"a": {Run: 3, MS: 9, Floor: 1}},
		ByNumber:  map[int]*timedRun{7: {Run: 4, MS: 9, Floor: 2}},
		Any:       []any{timedRun{Run: 5, MS: 1}, "text"},
		Block:     timedRun{Run: 6},
		Plain:     3.25,
		Own:       writesOwn{Inner: 1},
		Other:     4,
	}
	var m Measures
	m.Mark(v, "extra")
	wantPaths := []string{
		"extra.Other", "extra.a", "extra.any[*].ms", "extra.b", "extra.block", "extra.by_name.a.ms",
		"extra.by_number.7.ms", "extra.lent", "extra.runs[*].ms",
	}
	if d := cmp.Diff(wantPaths, m.Paths()); d != "" {
		t.Errorf("Paths (-want +got):\n%s", d)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Canon(m.Strip(raw, "extra"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"kept": 2.0, "runs": []any{map[string]any{"run": 1.0, "floor_ms": 7.0}, map[string]any{"run": 2.0, "floor_ms": 8.0}},
		"by_name":   map[string]any{"a": map[string]any{"run": 3.0, "floor_ms": 1.0}},
		"by_number": map[string]any{"7": map[string]any{"run": 4.0, "floor_ms": 2.0}},
		"any":       []any{map[string]any{"run": 5.0, "floor_ms": 0.0}, "text"},
		"plain":     3.25, "own": map[string]any{"inner": 1.0}, "nil": nil,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Strip (-want +got):\n%s", d)
	}
}

// TestMeasureTagSpelling: the tag as documented is the tag Mark reads.
func TestMeasureTagSpelling(t *testing.T) {
	if !isMeasure(reflect.StructTag(MeasureTag)) {
		t.Errorf("isMeasure(%s) = false, want true", MeasureTag)
	}
	if isMeasure(reflect.StructTag(`idemlab:"measured"`)) {
		t.Errorf(`isMeasure(idemlab:"measured") = true, want false`)
	}
}

// TestMeasuresOnlyUnderPath: Strip applies the marks made under its own
// path, and JSON below another path, or with no marks, is kept whole.
func TestMeasuresOnlyUnderPath(t *testing.T) {
	var m Measures
	m.Mark(timedRun{Run: 1, MS: 2}, "observed", "a")
	raw := json.RawMessage(`{"run":1,"ms":2,"floor_ms":3}`)
	for _, tt := range []struct {
		path []string
		want any
	}{
		{[]string{"observed", "a"}, map[string]any{"run": 1.0, "floor_ms": 3.0}},
		{[]string{"observed", "b"}, map[string]any{"run": 1.0, "ms": 2.0, "floor_ms": 3.0}},
		{[]string{"extra"}, map[string]any{"run": 1.0, "ms": 2.0, "floor_ms": 3.0}},
	} {
		got, err := Canon(m.Strip(raw, tt.path...))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("Strip at %v (-want +got):\n%s", tt.path, d)
		}
	}
}

// TestMeasuresUnion: a field one run omitted (omitempty, an empty list) is
// still left out of the other run's JSON once the two sets are joined.
func TestMeasuresUnion(t *testing.T) {
	var a, b Measures
	a.Mark([]timedRun{}, "extra")
	b.Mark([]timedRun{{MS: 1}}, "extra")
	if len(a.Paths()) != 0 {
		t.Fatalf("an empty list marks %v, want nothing", a.Paths())
	}
	a.Union(&b)
	if d := cmp.Diff([]string{"extra[*].ms"}, a.Paths()); d != "" {
		t.Errorf("Union (-want +got):\n%s", d)
	}
}

// TestMeasuresStripKeepsNumbers: numbers come out of Strip with every
// digit, so a comparison of two stripped values sees a change in the last
// digit of a large integer.
func TestMeasuresStripKeepsNumbers(t *testing.T) {
	var m Measures
	raw := json.RawMessage(`{"seed":18446744073709551615,"x":0.1}`)
	b, err := json.Marshal(m.Strip(raw))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(raw) {
		t.Errorf("Strip gave %s, want %s", b, raw)
	}
	if got := m.Strip(json.RawMessage(`{"x":`)); string(got.(json.RawMessage)) != `{"x":` {
		t.Errorf("JSON that does not decode came back as %v, want it unchanged", got)
	}
}
