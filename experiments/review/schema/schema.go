// Package schema holds the JSON Schema of results.json, for reviewers
// with other tools; the tests validate the golden folders against it, and
// the manual's results reference is made from it.
package schema

import _ "embed"

// Results is results.schema.json.
//
//go:embed results.schema.json
var Results []byte
