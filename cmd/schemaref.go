package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/review/schema"
)

// jsonSchema is the part of a JSON Schema the results reference reads.
type jsonSchema struct {
	Ref                  string                 `json:"$ref"`
	Type                 any                    `json:"type"`
	Description          string                 `json:"description"`
	Const                any                    `json:"const"`
	Enum                 []any                  `json:"enum"`
	Required             []string               `json:"required"`
	Properties           properties             `json:"properties"`
	Items                *jsonSchema            `json:"items"`
	AdditionalProperties any                    `json:"additionalProperties"`
	Defs                 map[string]*jsonSchema `json:"$defs"`
}

// resultsReference is the results topic's generated part: every field of
// results.json the schema names, its type, whether it is required, and
// the schema's description, in the schema's own order.
func resultsReference() (string, error) {
	var root jsonSchema
	if err := json.Unmarshal(schema.Results, &root); err != nil {
		return "", fmt.Errorf("results.schema.json: %w", err)
	}
	var b strings.Builder
	if root.Description != "" {
		b.WriteString(root.Description + "\n\n")
	}
	b.WriteString("| field | type | required | meaning |\n|---|---|---|---|\n")
	var walk func(s *jsonSchema, path string, required bool, seen []string)
	walk = func(s *jsonSchema, path string, required bool, seen []string) {
		if name, ok := strings.CutPrefix(s.Ref, "#/$defs/"); ok {
			if slices.Contains(seen, name) || root.Defs[name] == nil {
				return
			}
			def := *root.Defs[name]
			if s.Description != "" {
				def.Description = s.Description
			}
			s, seen = &def, append(seen, name)
		}
		if path != "" {
			req := ""
			if required {
				req = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", path, schemaType(s), req, strings.ReplaceAll(s.Description, "|", `\|`))
		}
		for i, name := range s.Properties.names {
			walk(s.Properties.schemas[i], join(path, name), slices.Contains(s.Required, name), seen)
		}
		if ap, ok := s.AdditionalProperties.(map[string]any); ok && len(ap) > 0 {
			fmt.Fprintf(&b, "| `%s` | %v | | any key |\n", join(path, "*"), ap["type"])
		}
		if s.Items != nil {
			walk(s.Items, path+"[]", false, seen)
		}
	}
	walk(&root, "", true, nil)
	return b.String(), nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// schemaType names a schema's type in a few words.
func schemaType(s *jsonSchema) string {
	switch {
	case s.Const != nil:
		b, _ := json.Marshal(s.Const)
		return "`" + string(b) + "`"
	case len(s.Enum) > 0:
		b, _ := json.Marshal(s.Enum)
		return "one of `" + string(b) + "`"
	}
	switch t := s.Type.(type) {
	case string:
		if t == "array" && s.Items != nil {
			return "array"
		}
		return t
	case []any:
		var names []string
		for _, n := range t {
			names = append(names, fmt.Sprint(n))
		}
		return strings.Join(names, " or ")
	}
	return "any (the scenario's own)"
}

// properties are an object's properties in the schema's order.
type properties struct {
	names   []string
	schemas []*jsonSchema
}

func (p *properties) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		var s jsonSchema
		if err := dec.Decode(&s); err != nil {
			return err
		}
		p.names = append(p.names, fmt.Sprint(key))
		p.schemas = append(p.schemas, &s)
	}
	return nil
}
