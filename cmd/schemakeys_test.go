package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"idemlab/experiments/review/schema"
)

// undescribed lists the keys of doc, a results.json, that the schema
// does not name, as paths (scenarios[].plan). A schema with no
// properties and no type (settings, expected, observed, extra: each
// scenario's own, derived again by verify) takes any value; one whose
// additionalProperties is a schema (a map) takes any key.
func undescribed(root map[string]any, doc any) []string {
	found := map[string]bool{}
	var walk func(s map[string]any, v any, path string)
	walk = func(s map[string]any, v any, path string) {
		if ref, ok := s["$ref"].(string); ok {
			name, _ := strings.CutPrefix(ref, "#/$defs/")
			s, _ = root["$defs"].(map[string]any)[name].(map[string]any)
		}
		switch v := v.(type) {
		case map[string]any:
			props, _ := s["properties"].(map[string]any)
			extra, anyKey := s["additionalProperties"].(map[string]any)
			if props == nil && !anyKey {
				return
			}
			for k, sub := range v {
				ps, ok := props[k].(map[string]any)
				switch {
				case ok:
					walk(ps, sub, join(path, k))
				case anyKey:
					walk(extra, sub, join(path, "*"))
				default:
					found[join(path, k)] = true
				}
			}
		case []any:
			if items, ok := s["items"].(map[string]any); ok {
				for _, e := range v {
					walk(items, e, path+"[]")
				}
			}
		}
	}
	walk(root, doc, "")
	var out []string
	for k := range found {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestUndescribed: the walk finds a key the schema lacks at each depth,
// through a $ref and an array, and none under a free-form value or a map.
func TestUndescribed(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal([]byte(`{"properties": {"a": {"type": "integer"}, "m": {"additionalProperties": {"type": "string"}},
		"free": {}, "list": {"items": {"$ref": "#/$defs/d"}}}, "$defs": {"d": {"properties": {"x": {}}}}}`), &root); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		doc  string
		want []string
	}{
		{`{"a": 1, "m": {"k": "v"}, "free": {"anything": 1}, "list": [{"x": 1}]}`, nil},
		{`{"b": 1}`, []string{"b"}},
		{`{"list": [{"x": 1}, {"y": 2}]}`, []string{"list[].y"}},
	}
	for _, tt := range tests {
		var doc any
		if err := json.Unmarshal([]byte(tt.doc), &doc); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, undescribed(root, doc)); diff != "" {
			t.Errorf("undescribed(%s) (-want +got):\n%s", tt.doc, diff)
		}
	}
}

// TestSchemaDescribesEveryKey: every key of results.json in the shipped
// golden folders, in a fresh run of the default scenarios, and in a
// shard's folder and a merged one is a property of results.schema.json,
// so the results reference ("idemlab help results", made from the schema)
// lists it; and each folder's results.json validates against the schema.
//
// The fresh run is the default scenarios at the small golden folder's
// settings (goldenRuns' "small"): its results.json has every key a run at
// the default settings writes, and its overrides besides (compared on
// 2026-12-02: 313 key paths against the default run's 307, none missing),
// in a tenth of the default run's time.
func TestSchemaDescribesEveryKey(t *testing.T) {
	t.Parallel()
	var root map[string]any
	if err := json.Unmarshal(schema.Results, &root); err != nil {
		t.Fatal(err)
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(schema.Results, &js); err != nil {
		t.Fatal(err)
	}
	validator, err := js.Resolve(&jsonschema.ResolveOptions{BaseURI: "file:///"})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../testdata/golden/*/results.json")
	files = append(files, "../testdata/golden/redelivery-results.json")
	if len(files) < 8 {
		t.Fatalf("found %d golden results files; the glob reads the tree wrong", len(files))
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	if r := execIn(t, Hooks{}, append([]string{"experiment", "--quiet", "--out", fresh}, smallRun(t)...)...); r.code != 0 && r.code != 1 {
		t.Fatalf("experiment: exit %d\n%s", r.code, r.stderr)
	}
	shards := twoShards.get(t)
	merged := filepath.Join(t.TempDir(), "merged")
	if r := execIn(t, Hooks{}, append([]string{"merge", "--out", merged}, shards...)...); r.code != 0 && r.code != 1 {
		t.Fatalf("merge: exit %d\n%s", r.code, r.stderr)
	}
	for _, dir := range []string{fresh, shards[0], merged} {
		files = append(files, filepath.Join(dir, "results.json"))
	}
	missing := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// redelivery-results.json is normalised for comparison (its code,
		// environment and times are placeholders): its keys alone count.
		if err := validator.Validate(doc); err != nil && filepath.Base(f) == "results.json" {
			t.Errorf("%s does not validate: %v", f, err)
		}
		for _, k := range undescribed(root, doc) {
			if !slices.Contains(missing[k], f) {
				missing[k] = append(missing[k], filepath.Base(filepath.Dir(f)))
			}
		}
	}
	for k, in := range missing {
		t.Errorf("results.schema.json does not describe %s (found in %s)", k, strings.Join(in, ", "))
	}
}

// smallRun is the flags of goldenRuns' "small": the default scenarios, each
// at small settings.
func smallRun(t testing.TB) []string {
	t.Helper()
	for _, g := range goldenRuns {
		if g.name == "small" {
			return g.args
		}
	}
	t.Fatal(`goldenRuns has no "small" run`)
	return nil
}
