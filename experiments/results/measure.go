package results

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// MeasureTag is the struct tag that declares a derived field a
// measurement: a value the machine decides rather than the inputs, such as
// a time, a ratio of times, or a count of retries under contention. The
// tag changes nothing in results.json; it tells verify --rerun (and any
// other comparison of two runs) to leave the field out, with everything
// below it. A field without the tag is compared exactly, so a new timing
// field declared without it makes a rerun fail rather than pass unseen.
//
//	MS float64 `json:"ms" idemlab:"measure"`
const MeasureTag = `idemlab:"measure"`

// measureKey and measureOption spell MeasureTag for reflect.StructTag.
const (
	measureKey    = "idemlab"
	measureOption = "measure"
)

// Measures is the set of JSON paths, in derived values, of the fields
// declared measurements. Mark finds them in the Go values a fold derived;
// Strip leaves them out of the JSON those values were written as.
type Measures struct {
	root measureNode
}

// measureNode is one JSON path segment. An object's members are in keys,
// an array's elements in items; whole marks a measurement, which covers
// everything below it.
type measureNode struct {
	whole bool
	keys  map[string]*measureNode
	items map[int]*measureNode
}

func (n *measureNode) key(k string) *measureNode { return child(&n.keys, k) }

func (n *measureNode) item(i int) *measureNode { return child(&n.items, i) }

// child finds or makes the node under k in *m.
func child[K comparable](m *map[K]*measureNode, k K) *measureNode {
	if *m == nil {
		*m = map[K]*measureNode{}
	}
	c, ok := (*m)[k]
	if !ok {
		c = &measureNode{}
		(*m)[k] = c
	}
	return c
}

func (n *measureNode) empty() bool {
	return !n.whole && len(n.keys) == 0 && len(n.items) == 0
}

// at walks to the node of the path under the root, making it as needed.
func (m *Measures) at(path []string) *measureNode {
	n := &m.root
	for _, p := range path {
		n = n.key(p)
	}
	return n
}

// Mark records every field of v declared with MeasureTag, at its JSON
// path below path (object keys from the root, such as "extra"). It reads
// v as encoding/json writes it: json tag names, omitted "-" and
// unexported fields, promoted embedded structs, map keys as strings. A
// value that writes its own JSON (json.Marshaler) is a leaf: tag the field
// that holds it, since its insides have no path Mark can know.
func (m *Measures) Mark(v any, path ...string) {
	n := m.at(path)
	markValue(n, reflect.ValueOf(v))
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// markValue marks the measurements under v at n and reports whether it
// found any, so that branches without one are not kept.
func markValue(n *measureNode, v reflect.Value) bool {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return false
		}
		v = v.Elem()
	}
	if !v.IsValid() || writesItself(v) {
		return false
	}
	found := false
	switch v.Kind() {
	case reflect.Struct:
		found = markStruct(n, v)
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k, ok := mapKey(iter.Key())
			if !ok {
				continue
			}
			found = markChild(n, n.key(k), k, -1, iter.Value()) || found
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return false // []byte is written as base64
		}
		for i := range v.Len() {
			found = markChild(n, n.item(i), "", i, v.Index(i)) || found
		}
	}
	return found
}

// writesItself says v writes its own JSON, whose shape Mark cannot know.
func writesItself(v reflect.Value) bool {
	for _, t := range []reflect.Type{marshalerType, textMarshalerType} {
		if v.Type().Implements(t) || v.CanAddr() && reflect.PointerTo(v.Type()).Implements(t) {
			return true
		}
	}
	return false
}

// markChild marks under child and drops it from n again when it holds no
// measurement.
func markChild(n, child *measureNode, key string, index int, v reflect.Value) bool {
	if markValue(child, v) || !child.empty() {
		return true
	}
	if index < 0 {
		delete(n.keys, key)
	} else {
		delete(n.items, index)
	}
	return false
}

func markStruct(n *measureNode, v reflect.Value) bool {
	found := false
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := jsonName(f)
		if !ok {
			continue
		}
		if name == "" && isMeasure(f.Tag) {
			// A measured embedded struct: every field it lends.
			markPromoted(n, f.Type)
			found = true
			continue
		}
		if name == "" {
			// An embedded struct without a JSON name: its fields are
			// written as the outer struct's own.
			found = markValue(n, v.Field(i)) || found
			continue
		}
		if isMeasure(f.Tag) {
			n.key(name).whole = true
			found = true
			continue
		}
		found = markChild(n, n.key(name), name, -1, v.Field(i)) || found
	}
	return found
}

// markPromoted marks whole every member an embedded struct type t lends
// to the struct that embeds it.
func markPromoted(n *measureNode, t reflect.Type) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		switch name, ok := jsonName(f); {
		case !ok:
		case name == "":
			markPromoted(n, f.Type)
		default:
			n.key(name).whole = true
		}
	}
}

// jsonName is the member name encoding/json writes f under; "" for an
// embedded struct whose fields are promoted, and false for a field it
// does not write.
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if f.Anonymous && name == "" {
		t := f.Type
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Struct {
			return "", true
		}
	}
	if !f.IsExported() {
		return "", false
	}
	if name == "" {
		name = f.Name
	}
	return name, true
}

func isMeasure(tag reflect.StructTag) bool {
	for _, o := range strings.Split(tag.Get(measureKey), ",") {
		if o == measureOption {
			return true
		}
	}
	return false
}

// mapKey is a map key as encoding/json writes it.
func mapKey(k reflect.Value) (string, bool) {
	if k.Kind() == reflect.String {
		return k.String(), true
	}
	if k.Type().Implements(textMarshalerType) {
		b, err := k.Interface().(encoding.TextMarshaler).MarshalText()
		return string(b), err == nil
	}
	switch k.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(k.Uint(), 10), true
	}
	return "", false
}

// Union adds every measurement of o to m, so two runs of one scenario
// leave out the same fields even where one run omitted a field.
func (m *Measures) Union(o *Measures) {
	if o != nil {
		unionNode(&m.root, &o.root)
	}
}

func unionNode(dst, src *measureNode) {
	dst.whole = dst.whole || src.whole
	for k, c := range src.keys {
		unionNode(dst.key(k), c)
	}
	for i, c := range src.items {
		unionNode(dst.item(i), c)
	}
}

// Strip returns raw, written below path, without its measurements, as
// the generic form encoding/json decodes to (numbers kept exact as
// json.Number). JSON that does not decode is returned as it is, so a
// comparison still sees it.
func (m *Measures) Strip(raw json.RawMessage, path ...string) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	n := &m.root
	for _, p := range path {
		c, ok := n.keys[p]
		if !ok {
			return v
		}
		n = c
	}
	return stripNode(n, v)
}

func stripNode(n *measureNode, v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			c, ok := n.keys[k]
			switch {
			case !ok:
				out[k] = x
			case !c.whole:
				out[k] = stripNode(c, x)
			}
		}
		return out
	case []any:
		out := make([]any, 0, len(t))
		for i, x := range t {
			// Only struct fields are tagged, so an element is never
			// measured whole and keeps its place.
			if c, ok := n.items[i]; ok {
				x = stripNode(c, x)
			}
			out = append(out, x)
		}
		return out
	}
	return v
}

// Paths lists the measurements as JSON paths, array indices as [*], each
// once and in order: what a comparison leaves out, in words a reader can
// check against results.json.
func (m *Measures) Paths() []string {
	seen := map[string]bool{}
	var walk func(n *measureNode, p string)
	walk = func(n *measureNode, p string) {
		if n.whole {
			seen[p] = true
			return
		}
		for k, c := range n.keys {
			if p == "" {
				walk(c, k)
			} else {
				walk(c, p+"."+k)
			}
		}
		for _, c := range n.items {
			walk(c, p+"[*]")
		}
	}
	walk(&m.root, "")
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
