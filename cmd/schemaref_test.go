package cmd

import (
	"encoding/json"
	"strings"
	"testing"

	"idemlab/experiments/review/schema"
)

// TestResultsReference: every property results.schema.json names, at any
// depth, is a row of the results topic, with its description.
func TestResultsReference(t *testing.T) {
	topic, err := topicMarkdown("results")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(schema.Results, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(node map[string]any)
	n := 0
	walk = func(node map[string]any) {
		props, _ := node["properties"].(map[string]any)
		for name, v := range props {
			p, _ := v.(map[string]any)
			n++
			if !strings.Contains(topic, "."+name+"` |") && !strings.Contains(topic, "| `"+name+"` |") && !strings.Contains(topic, "[]."+name+"` |") {
				t.Errorf("the results topic has no row for %s", name)
			}
			if d, ok := p["description"].(string); ok && !strings.Contains(topic, d) {
				t.Errorf("the results topic lacks %s's description %q", name, d)
			}
			walk(p)
		}
		if items, ok := node["items"].(map[string]any); ok {
			walk(items)
		}
		if defs, ok := node["$defs"].(map[string]any); ok {
			for _, d := range defs {
				walk(d.(map[string]any))
			}
		}
	}
	walk(doc)
	if n < 20 {
		t.Errorf("the walk found %d properties in the schema; it reads it wrong", n)
	}
}
