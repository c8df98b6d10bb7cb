package powerfs

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FirstDiff names the first field where a cut's recorded outcome, got,
// differs from what its log derives, want (Plan), by its JSON path
// (".files[0].decisions"; a list one side has more of is named whole,
// ".entries"), or "" when they agree. An empty list equals a missing one.
// Every fold that derives a cut again names a tampered field with it.
func FirstDiff(want, got Outcome) string {
	var r pathReporter
	cmp.Equal(want, got, cmpopts.EquateEmpty(), cmp.Reporter(&r))
	return r.first
}

type pathReporter struct {
	path  cmp.Path
	first string
}

func (r *pathReporter) PushStep(s cmp.PathStep) { r.path = append(r.path, s) }
func (r *pathReporter) PopStep()                { r.path = r.path[:len(r.path)-1] }
func (r *pathReporter) Report(res cmp.Result) {
	if res.Equal() || r.first != "" {
		return
	}
	var b strings.Builder
	for i := 1; i < len(r.path); i++ {
		switch s := r.path[i].(type) {
		case cmp.StructField:
			b.WriteString("." + jsonName(r.path[i-1].Type(), s))
		case cmp.SliceIndex:
			k := s.Key()
			if k < 0 { // an element one side lacks: the list differs
				i = len(r.path)
				continue
			}
			b.WriteString(fmt.Sprintf("[%d]", k))
		}
	}
	r.first = b.String()
	if r.first == "" {
		r.first = "."
	}
}

// jsonName is a struct field's JSON name in its struct (or a pointer to
// it).
func jsonName(parent reflect.Type, s cmp.StructField) string {
	for parent.Kind() == reflect.Pointer {
		parent = parent.Elem()
	}
	if parent.Kind() == reflect.Struct {
		if name, _, _ := strings.Cut(parent.Field(s.Index()).Tag.Get("json"), ","); name != "" {
			return name
		}
	}
	return s.Name()
}
