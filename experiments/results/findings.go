package results

import (
	"fmt"
	"strings"
)

// Finding is one contradiction in the records. File and Field say where
// to look, so a reviewer can open the file at the right place. Condition,
// when set, is the condition whose records hold it: a run stores such a
// finding as that condition's failure, since a worker that misbehaves is a
// result, not a fault of the harness.
type Finding struct {
	File      string `json:"file"`
	Field     string `json:"field,omitempty"`
	Condition string `json:"condition,omitempty"`
	Message   string `json:"message"`
}

func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(f.File)
	if f.Field != "" {
		b.WriteString(": ")
		b.WriteString(f.Field)
	}
	b.WriteString(": ")
	b.WriteString(f.Message)
	return b.String()
}

// Field builds a field path such as scenarios[redelivery].conditions[x].pass.
// An int becomes [i], a Key becomes [name], anything else .name.
func Field(parts ...any) string {
	var b strings.Builder
	for i, p := range parts {
		switch v := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		case Key:
			fmt.Fprintf(&b, "[%s]", string(v))
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
}

// Key is a named index in a field path, like a scenario or condition name.
type Key string
