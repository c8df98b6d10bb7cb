package cmd

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/all"
)

// inputRefFile is the input reference the input topic prints: made from
// the input types' fields, json tags and doc comments by this test (the
// binary carries no source to read them from), and checked here.
const inputRefFile = "help/generated/input.md"

// TestInputReference: the committed input reference is what the input
// types say now; -update rewrites it. Every field of every section has a
// doc comment, which is its one description.
func TestInputReference(t *testing.T) {
	got := inputReference(t)
	if *update {
		if err := os.WriteFile(inputRefFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(inputRefFile)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s is stale; run go test ./cmd -run TestInputReference -update (-committed +from the code):\n%s", inputRefFile, diff)
	}
	for _, f := range fieldsWithoutDefault(got) {
		t.Errorf("%s: input.json gives no value and its doc comment names no default (say \"default …\", \"absent …\", \"empty means …\" or \"required\")", f)
	}
}

// fieldsWithoutDefault are the reference's fields that input.json gives
// no value and whose meaning names no default: the input topic must say
// what a field left out does.
func fieldsWithoutDefault(ref string) []string {
	says := regexp.MustCompile(`(?i)default|absent|empty means|required`)
	rows := 0
	var out []string
	for _, row := range strings.Split(ref, "\n") {
		cells := strings.Split(row, " | ")
		if !strings.HasPrefix(row, "| `") || len(cells) < 4 {
			continue
		}
		rows++
		if cells[2] == "—" && !says.MatchString(cells[3]) {
			out = append(out, strings.TrimPrefix(cells[0], "| "))
		}
	}
	if rows == 0 {
		out = append(out, "(no field rows in the reference)")
	}
	return out
}

// inputReference reads each input section's type from its package's
// source: a scenario's Input, the backend's Section.
func inputReference(t *testing.T) string {
	t.Helper()
	var example map[string]json.RawMessage
	b, err := os.ReadFile("../input.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &example); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	out.WriteString("<!-- Made by go test ./cmd -run TestInputReference -update from the input types' doc comments; edit those. -->\n")
	sections := append(all.Scenarios(sourcePatterns).Names(), "backend")
	for _, name := range sections {
		typ := "Input"
		if name == "backend" {
			typ = "Section"
		}
		p, err := loadPkg(filepath.Join("..", "experiments", name))
		if err != nil {
			t.Fatal(err)
		}
		st := p.structType(typ)
		if st == nil {
			t.Fatalf("experiments/%s has no struct type %s", name, typ)
		}
		var values map[string]any
		if raw, ok := example[name]; ok {
			json.Unmarshal(raw, &values)
		}
		fmt.Fprintf(&out, "\n### `%s`\n\n| field | type | input.json | meaning |\n|---|---|---|---|\n", name)
		p.fields(t, &out, name, st, values)
	}
	return out.String()
}

type srcPkg struct {
	dir    string
	types  map[string]*ast.TypeSpec
	consts map[string]string
}

// loadPkg parses a package's non-test files: its types and its constants
// of literal value, which doc links such as [MaxItems] name.
func loadPkg(dir string) (*srcPkg, error) {
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	p := &srcPkg{dir: dir, types: map[string]*ast.TypeSpec{}, consts: map[string]string{}}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					p.types[s.Name.Name] = s
				case *ast.ValueSpec:
					if g.Tok != token.CONST {
						continue
					}
					for i, id := range s.Names {
						if i < len(s.Values) {
							if lit, ok := s.Values[i].(*ast.BasicLit); ok {
								p.consts[id.Name] = strings.ReplaceAll(lit.Value, "_", "")
							}
						}
					}
				}
			}
		}
	}
	return p, nil
}

func (p *srcPkg) structType(name string) *ast.StructType {
	if ts, ok := p.types[name]; ok {
		st, _ := ts.Type.(*ast.StructType)
		return st
	}
	return nil
}

// fields writes a row per exported field, a nested struct's fields under
// its name.
func (p *srcPkg) fields(t *testing.T, out *strings.Builder, prefix string, st *ast.StructType, values map[string]any) {
	for _, f := range st.Fields.List {
		if len(f.Names) != 1 || !f.Names[0].IsExported() {
			continue
		}
		tag := ""
		if f.Tag != nil {
			tag = regexp.MustCompile(`json:"([^",]*)`).FindStringSubmatch(f.Tag.Value)[1]
		}
		if tag == "-" || tag == "" {
			continue
		}
		path := prefix + "." + tag
		if id, ok := f.Type.(*ast.Ident); ok {
			if nested := p.structType(id.Name); nested != nil {
				sub, _ := values[tag].(map[string]any)
				p.fields(t, out, path, nested, sub)
				continue
			}
		}
		doc := p.docOf(f)
		if doc == "" {
			t.Errorf("%s (%s): no doc comment; the input reference takes its meaning from it", path, f.Names[0].Name)
		}
		example := "—"
		if v, ok := values[tag]; ok {
			b, _ := json.Marshal(v)
			example = "`" + string(b) + "`"
		}
		fmt.Fprintf(out, "| `%s` | %s | %s | %s |\n", path, jsonType(f.Type), example, strings.ReplaceAll(doc, "|", `\|`))
	}
}

var docLink = regexp.MustCompile(`\[([A-Za-z]+\.)?([A-Z][A-Za-z0-9]*)\]`)

// docOf is a field's doc comment in one line, without the field's name
// leading it, its doc links replaced by the constants' values.
func (p *srcPkg) docOf(f *ast.Field) string {
	if f.Doc == nil {
		return ""
	}
	doc := strings.Join(strings.Fields(f.Doc.Text()), " ")
	name := f.Names[0].Name
	for _, lead := range []string{name + " is ", name + " are ", name + ", when true, ", name + " is, ", name + " "} {
		if rest, ok := strings.CutPrefix(doc, lead); ok {
			doc = rest
			break
		}
	}
	return docLink.ReplaceAllStringFunc(doc, func(m string) string {
		sm := docLink.FindStringSubmatch(m)
		other := p
		if sm[1] != "" {
			other, _ = loadPkg(filepath.Join(filepath.Dir(p.dir), strings.TrimSuffix(sm[1], ".")))
		}
		if other != nil {
			if v, ok := other.consts[sm[2]]; ok {
				return v
			}
		}
		return sm[1] + sm[2]
	})
}

func jsonType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return jsonType(e.X)
	case *ast.ArrayType:
		return "list of " + jsonType(e.Elt) + "s"
	case *ast.Ident:
		switch e.Name {
		case "string":
			return "string"
		case "bool":
			return "boolean"
		case "float64", "float32":
			return "number"
		default:
			return "integer"
		}
	}
	return "value"
}
