package review

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"idemlab/experiments/harness"
)

// SchemaJSON is the published JSON Schema of results.json. It ships in the
// repository so that anyone can validate a folder with any validator.
//
//go:embed schema/results.schema.json
var SchemaJSON []byte

// schemaBase resolves the schema's relative $id; nothing is fetched.
const schemaBase = "file:///"

var (
	schemaOnce sync.Once
	schema     *jsonschema.Resolved
	schemaErr  error
)

// compiledSchema resolves the schema once. The validator is Google's
// jsonschema-go: its package start-up is cheap, which matters because every
// worker process is this same binary and pays for every package's init.
func compiledSchema() (*jsonschema.Resolved, error) {
	schemaOnce.Do(func() {
		var s jsonschema.Schema
		if err := json.Unmarshal(SchemaJSON, &s); err != nil {
			schemaErr = fmt.Errorf("parse results schema: %w", err)
			return
		}
		schema, schemaErr = s.Resolve(&jsonschema.ResolveOptions{BaseURI: schemaBase})
		if schemaErr != nil {
			schemaErr = fmt.Errorf("resolve results schema: %w", schemaErr)
		}
	})
	return schema, schemaErr
}

// validateSchema checks the decoded results.json against the schema. The
// validator stops at the first failure; the finding names the field it
// derives from the failing schema path.
func validateSchema(doc any) []Finding {
	sch, err := compiledSchema()
	if err != nil {
		return []Finding{{File: harness.ResultsFile, Message: err.Error()}}
	}
	if err := sch.Validate(doc); err != nil {
		return []Finding{{File: harness.ResultsFile, Field: schemaField(err.Error()), Message: "schema: " + schemaReason(err.Error())}}
	}
	return nil
}

// schemaField turns the deepest "/properties/a/items/properties/b" schema
// path in a validation error into the instance field "/a/[]/b".
func schemaField(msg string) string {
	field := "/"
	for _, part := range strings.Split(msg, "validating ") {
		path, _, _ := strings.Cut(part, ":")
		if !strings.HasPrefix(path, "/properties/") {
			continue
		}
		segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
		var out []string
		for k := 0; k < len(segs); k++ {
			switch segs[k] {
			case "properties":
				if k+1 < len(segs) {
					out = append(out, segs[k+1])
					k++
				}
			case "items", "prefixItems":
				out = append(out, "[]")
			}
		}
		field = "/" + strings.Join(out, "/")
	}
	return field
}

// schemaReason is the last clause of a validation error: the rule that
// failed and the value it failed on.
func schemaReason(msg string) string {
	parts := strings.Split(msg, "validating ")
	if _, reason, ok := strings.Cut(parts[len(parts)-1], ": "); ok {
		return reason
	}
	return msg
}
