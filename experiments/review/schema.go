package review

import (
	"bytes"
	_ "embed"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"idemlab/experiments/harness"
)

// SchemaJSON is the published JSON Schema of results.json. It ships in the
// repository so that anyone can validate a folder with any validator.
//
//go:embed schema/results.schema.json
var SchemaJSON []byte

const schemaURL = "idemlab/results.schema.json"

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

func compiledSchema() (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
		if err != nil {
			schemaErr = fmt.Errorf("parse results schema: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		if err := c.AddResource(schemaURL, doc); err != nil {
			schemaErr = fmt.Errorf("load results schema: %w", err)
			return
		}
		schema, schemaErr = c.Compile(schemaURL)
	})
	return schema, schemaErr
}

// validateSchema checks the decoded results.json against the schema and
// turns each failing leaf into a finding that names the JSON pointer.
func validateSchema(doc any) []Finding {
	sch, err := compiledSchema()
	if err != nil {
		return []Finding{{File: harness.ResultsFile, Message: err.Error()}}
	}
	err = sch.Validate(doc)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []Finding{{File: harness.ResultsFile, Message: "schema: " + err.Error()}}
	}
	p := message.NewPrinter(language.English)
	var out []Finding
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			out = append(out, Finding{File: harness.ResultsFile, Field: loc, Message: "schema: " + e.ErrorKind.LocalizedString(p)})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}
