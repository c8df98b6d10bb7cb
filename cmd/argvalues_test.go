package cmd

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/worker/protocol"
)

// TestValuesThatBecomeArguments puts a NUL byte, and a value one byte
// over protocol.MaxArgValue, into each input value that reaches a child
// as an argument or an environment variable (the scenarios' ids, keys and
// messages, a pattern file's command, --dsn), and asserts exit 2
// with one line naming the field and what is wrong, and no --out folder;
// a value exactly MaxArgValue long is accepted as far as the same check.
func TestValuesThatBecomeArguments(t *testing.T) {
	t.Parallel()
	base := readSections(t, "../input.json")
	var pattern map[string]any
	if err := json.Unmarshal(readFile(t, "../testdata/patterns/separate-commit.json"), &pattern); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", protocol.MaxArgValue+1)
	type tc struct {
		scenario, section, field string
		// pattern says the value goes into the pattern file, not the
		// input file; flag, that it goes into a flag.
		pattern bool
		flag    string
	}
	var cases []tc
	for _, f := range []string{"event_id", "job_key"} {
		cases = append(cases, tc{scenario: "redelivery", section: "redelivery", field: f}, tc{scenario: "explore", section: "explore", field: f}, tc{scenario: "durability", section: "durability", field: f})
	}
	for _, f := range []string{"fingerprint", "source", "level", "message", "classification"} {
		cases = append(cases, tc{scenario: "claim", section: "claim", field: f})
	}
	cases = append(cases,
		tc{scenario: "batch", section: "batch", field: "job_id"},
		tc{scenario: "durability", section: "durability", field: "job_id"},
		tc{scenario: "pattern", section: "pattern", field: "event_id"},
		tc{scenario: "pattern", field: "command[1]", pattern: true},
		tc{scenario: "redelivery", field: "--dsn", flag: "--dsn"},
		tc{scenario: "claim", field: "--claim-sql", flag: "--claim-sql"},
	)
	for _, c := range cases {
		for _, bad := range []struct{ name, value, says string }{
			{"nul", "a\x00b", "contains a NUL byte"},
			{"long", long, "is 4097 bytes, more than 4096"},
		} {
			t.Run(c.scenario+"/"+c.field+"/"+bad.name, func(t *testing.T) {
				dir, says := t.TempDir(), bad.says
				in := map[string]map[string]any{}
				if c.section != "" {
					in[c.section] = maps.Clone(base[c.section])
					if in[c.section] == nil {
						in[c.section] = map[string]any{}
					}
					in[c.section][c.field] = bad.value
				} else if s, ok := base[c.scenario]; ok {
					in[c.scenario] = s
				}
				args := []string{"experiment", "--quiet", "--scenario", c.scenario, "--out", filepath.Join(dir, "out"), "--input", writeJSON(t, dir, "input.json", in)}
				if c.scenario == "pattern" {
					p := maps.Clone(pattern)
					if c.pattern {
						delete(p, "handler")
						p["command"] = []string{"true", bad.value}
					}
					args = append(args, "--pattern-file", writeJSON(t, dir, "pattern.json", p))
				}
				switch c.flag {
				case "--dsn":
					args = append(args, "--backend", "postgres", c.flag, bad.value)
				case "--claim-sql":
					// The statement file has a check of its own,
					// which allows 32 KiB.
					v := "SELECT 1\x00"
					says = "without NUL bytes"
					if bad.name == "long" {
						v, says = strings.Repeat("x", 64<<10), "is 65536 bytes, at most 32768"
					}
					args = append(args, c.flag, writeFile(t, dir, "claim.sql", v))
				}
				r := execIn(t, Hooks{}, args...)
				if r.code != 2 || !strings.Contains(r.stderr, c.field) || !strings.Contains(r.stderr, says) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
					t.Errorf("exit %d, stderr %.300q; want exit 2 and one line naming %s: %s", r.code, r.stderr, c.field, says)
				}
				if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
					t.Error("a refused run wrote its --out folder")
				}
			})
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readSections reads an input file's sections as objects.
func readSections(t *testing.T, path string) map[string]map[string]any {
	t.Helper()
	var out map[string]map[string]any
	if err := json.Unmarshal(readFile(t, path), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func writeJSON(t *testing.T, dir, name string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, string(b))
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
