package review

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestGoldenMatchesSchema validates the golden results.json files against
// the published schema. The schema is a document for reviewers with other
// tools; verify itself decodes strictly and derives every figure again, so
// the validator is linked into tests only, not into every worker.
func TestGoldenMatchesSchema(t *testing.T) {
	var s jsonschema.Schema
	b, err := os.ReadFile("schema/results.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	res, err := s.Resolve(&jsonschema.ResolveOptions{BaseURI: "file:///"})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../testdata/golden/*/results.json")
	if len(files) == 0 {
		t.Fatal("no golden folders under testdata/golden")
	}
	for _, f := range files {
		var doc any
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if err := res.Validate(doc); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		bad := doc.(map[string]any)
		bad["surprise"] = true
		if res.Validate(bad) == nil {
			t.Errorf("%s: the schema accepts an unknown top-level field", f)
		}
	}
}
