package cmd

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/pattern"
	wp "idemlab/worker/pattern"
)

// patterns are the shipped pattern files: the article patterns explore
// runs (the binary embeds them) and the examples.
const patterns = "../testdata/patterns/"

// patternFile writes a copy of a shipped pattern with edits, for a test.
func patternFile(t *testing.T, name string, edit func(m map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(patterns + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(m)
	}
	b, _ = json.MarshalIndent(m, "", "  ")
	p := filepath.Join(t.TempDir(), name+".json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runPattern(t *testing.T, file string, args ...string) (run, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "results")
	argv := append([]string{"experiment", "--scenario", "pattern", "--input", goodInput, "--pattern-file", file, "--out", out}, args...)
	return execIn(t, Hooks{}, argv...), out
}

func TestPatternRefusesABadFile(t *testing.T) {
	file := patternFile(t, "single-transaction", func(m map[string]any) {
		m["handler"].([]any)[0] = map[string]any{"exec": "SELECT 1"}
	})
	r, out := runPattern(t, file)
	if r.code != 2 || !strings.Contains(r.stderr, "handler[3].commit: no transaction is open") {
		t.Errorf("exit %d, stderr %q; want 2 naming handler[3].commit", r.code, r.stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s was written for a refused pattern", out)
	}
}

// TestPatternKnownUnsafe: a pattern with a known bug fails the run; the
// same pattern with the class in known_unsafe passes; a safe pattern that
// lists a class fails, since the expected violation never showed.
func TestPatternKnownUnsafe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, pattern string
		unsafe        []any
		code          int
		text          string
	}{
		{"a known bug fails", "separate-commit", []any{}, 1, "one job want 1 got 2"},
		{"a listed bug passes", "separate-commit", []any{"points"}, 0, "broke, as listed"},
		{"a safe pattern that lists a class fails", "single-transaction", []any{"points"}, 1, "held, but known_unsafe lists it: the run fails ✗"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := patternFile(t, tt.pattern, func(m map[string]any) { m["known_unsafe"] = tt.unsafe })
			r, out := runPattern(t, file, "--faults", "points")
			// A cell may wrap onto continuation lines.
			if r.code != tt.code || !strings.Contains(strings.Join(strings.Fields(r.stdout+r.stderr), " "), tt.text) {
				t.Fatalf("exit %d, want %d, with %q in the output:\n%s%s", r.code, tt.code, tt.text, r.stdout, r.stderr)
			}
			want := map[int]int{0: 0, 1: 4}[tt.code]
			if v := execIn(t, Hooks{}, "verify", out); v.code != want {
				t.Errorf("verify: exit %d, want %d:\n%s%s", v.code, want, v.stdout, v.stderr)
			}
		})
	}
}

// TestPatternFaultClasses runs each fault class on the single-transaction
// pattern at small settings; it holds under each but the cut after the
// ACK under DELETE/FULL, which the file lists.
func TestPatternFaultClasses(t *testing.T) {
	t.Parallel()
	file := patternFile(t, "single-transaction", func(m map[string]any) { m["power"] = []any{"DELETE/FULL", "WAL/FULL"} })
	for _, tt := range []struct {
		faults string
		args   []string
		row    string
	}{
		{"points", nil, "points "},
		{"random", []string{"--trials", "6"}, "random "},
		{"concurrent", []string{"--rounds", "1"}, "concurrent "},
		{"power", nil, "power WAL/FULL"},
	} {
		t.Run(tt.faults, func(t *testing.T) {
			r, out := runPattern(t, file, append([]string{"--faults", tt.faults}, tt.args...)...)
			if r.code != 0 || !strings.Contains(r.stdout, tt.row) {
				t.Fatalf("exit %d, want 0 with a %q row:\n%s%s", r.code, tt.row, r.stdout, r.stderr)
			}
			// The class ran: each of its conditions holds trials, and
			// random as many as --trials asked for.
			per := observationsPer(t, out)
			ran := 0
			for cond, n := range per {
				if strings.HasPrefix(cond, "single-transaction/"+tt.faults) {
					ran += n
				}
			}
			if ran == 0 || (tt.faults == "random" && ran != 6) {
				t.Errorf("%d trials of %s recorded (%v)", ran, tt.faults, per)
			}
			if v := execIn(t, Hooks{}, "verify", out); v.code != 0 {
				t.Errorf("verify: exit %d:\n%s%s", v.code, v.stdout, v.stderr)
			}
		})
	}
}

// TestPatternVerifyCatchesEdits: the folder carries the pattern file, so
// an edited copy, or an edited invariant value, fails verify.
func TestPatternVerifyCatchesEdits(t *testing.T) {
	t.Parallel()
	file := patternFile(t, "separate-commit", func(m map[string]any) { m["known_unsafe"] = []any{"points"} })
	r, out := runPattern(t, file, "--faults", "points")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, tt := range []struct {
		name, file, old, new, text string
	}{
		{"the pattern's copy", "attachments/1-separate-commit.json", `"equals": 1`, `"equals": 2`, "attachments/1-separate-commit.json hashes to"},
		{"an invariant value", "observations.jsonl", `"values":{"one job":{"rows":1,"columns":1,"type":"integer","text":"2"}`, `"values":{"one job":{"rows":1,"columns":1,"type":"integer","text":"1"}`, ".violating: is "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyFolder(t, out)
			p := filepath.Join(dir, tt.file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.old) {
				t.Fatalf("%s has no %q to edit", tt.file, tt.old)
			}
			os.WriteFile(p, []byte(strings.Replace(string(b), tt.old, tt.new, 1)), 0o644)
			v := execIn(t, Hooks{}, "verify", dir)
			if v.code != 1 || !strings.Contains(v.stdout+v.stderr, tt.text) {
				t.Errorf("verify: exit %d, want 1 with %q:\n%s%s", v.code, tt.text, v.stdout, v.stderr)
			}
		})
	}
}

// firstBreak reads a folder's observations of one condition and judges
// each trial's values by the file's "equals" invariants, as an oracle
// apart from the fold: the lowest trial that broke one, its point, and
// each broken invariant as "NAME want W got G", in the file's order.
func firstBreak(t *testing.T, dir, condition string, invariants []any) (trial int, point, model string, broken []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "observations.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	trial = -1
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var o struct {
			Condition string              `json:"condition"`
			Trial     int                 `json:"trial"`
			Point     string              `json:"point"`
			Model     string              `json:"model"`
			Values    map[string]wp.Value `json:"values"`
		}
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatal(err)
		}
		if o.Condition != condition || trial >= 0 && o.Trial > trial {
			continue
		}
		var br []string
		for _, iv := range invariants {
			m := iv.(map[string]any)
			name, want := m["name"].(string), int64(m["equals"].(float64))
			if got, err := o.Values[name].Int(); err != nil || got != want {
				br = append(br, fmt.Sprintf("%s want %d got %d", name, want, got))
			}
		}
		if len(br) > 0 {
			trial, point, model, broken = o.Trial, o.Point, o.Model, br
		}
	}
	if trial < 0 {
		t.Fatalf("no trial of %s broke an invariant", condition)
	}
	return trial, point, model, broken
}

// failBlocks are the FAIL lines of an output, each with its continuation
// lines, as printed.
func failBlocks(out string) []string {
	var blocks []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "FAIL "):
			blocks, in = append(blocks, l), true
		case in && strings.HasPrefix(l, "  "):
			blocks[len(blocks)-1] += "\n" + l
		default:
			in = false
		}
	}
	return blocks
}

// TestPatternFailureLineSaysTheBreak: a pattern whose power cut after the
// ACK loses its commit under DELETE/FULL, run without known_unsafe. The
// failure line names the first trial that broke, the cut and each
// broken invariant with its want and got, as an oracle reads them from
// the observations and the file; stderr, summary.json, JUnit's message
// and verify all carry that line, printed within 100 columns, and the
// replay names the power setting.
func TestPatternFailureLineSaysTheBreak(t *testing.T) {
	t.Parallel()
	var invariants []any
	file := patternFile(t, "single-transaction", func(m map[string]any) {
		m["known_unsafe"] = []any{}
		m["power"] = []any{"DELETE/FULL", "WAL/FULL"}
		invariants = m["invariants"].([]any)
	})
	dir := t.TempDir()
	sum, ju := filepath.Join(dir, "summary.json"), filepath.Join(dir, "junit.xml")
	r, out := runPattern(t, file, "--faults", "power", "--summary-json", sum, "--junit", ju)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1:\n%s%s", r.code, r.stdout, r.stderr)
	}
	const cond = "single-transaction/power:DELETE/FULL"
	trial, point, model, broken := firstBreak(t, out, cond, invariants)
	where := model + " power cut at " + point
	switch point {
	case pattern.PointACK:
		where = model + " power cut after the ACK"
	case pattern.PointACKOpen:
		where = model + " power cut after the ACK, the connection open"
	}
	text := fmt.Sprintf("trial %d, %s: %s", trial, where, strings.Join(broken, "; "))
	line := "pattern/" + cond + ": " + text

	blocks := failBlocks(r.stderr)
	if len(blocks) != 1 || strings.Join(strings.Fields(blocks[0]), " ") != "FAIL "+line {
		t.Fatalf("stderr's FAIL lines are %q, want one saying %q:\n%s", blocks, "FAIL "+line, r.stderr)
	}
	for _, l := range strings.Split(blocks[0], "\n") {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("a FAIL line of %d runes: %q", n, l)
		}
	}
	var s Summary
	if b, err := os.ReadFile(sum); err != nil || json.Unmarshal(b, &s) != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if diff := cmp.Diff([]string{line}, s.Failures); diff != "" {
		t.Errorf("summary.json failures (-want +got):\n%s", diff)
	}
	var j junitSuites
	if b, err := os.ReadFile(ju); err != nil || xml.Unmarshal(b, &j) != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	var messages []string
	for _, js := range j.Suites {
		for _, c := range js.Cases {
			if c.Failure != nil {
				messages = append(messages, c.Name+": "+c.Failure.Message)
			}
		}
	}
	if diff := cmp.Diff([]string{cond + ": " + text}, messages); diff != "" {
		t.Errorf("junit.xml failure messages (-want +got):\n%s", diff)
	}
	if !strings.Contains(r.stdout, "--faults power --seed 1 --power DELETE/FULL") {
		t.Errorf("the replay does not name the power setting:\n%s", r.stdout)
	}
	v := execIn(t, Hooks{}, "verify", out)
	if v.code != 4 {
		t.Fatalf("verify: exit %d, want 4:\n%s%s", v.code, v.stdout, v.stderr)
	}
	if diff := cmp.Diff(blocks, failBlocks(v.stdout)); diff != "" {
		t.Errorf("verify's FAIL lines differ from the run's (-run +verify):\n%s", diff)
	}
}

// TestPatternKnownUnsafeWords: with power under DELETE/FULL and WAL/FULL,
// of which the file's own known_unsafe says DELETE/FULL breaks, a bare
// "power" passes, and the verdict says the pass rests on a listed break;
// "power:WAL/FULL" lists the setting that held, and the run fails in
// those words.
func TestPatternKnownUnsafeWords(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		entry string
		code  int
		out   []string
		fail  string
	}{
		{"power", 0, []string{
			"== pattern  PASS: 1 class breaks as known_unsafe expects",
			"broke, as listed",
			"held (another setting broke)",
			"PASS: 1 class breaks as known_unsafe expects; results in ",
		}, ""},
		{"power:DELETE/FULL", 0, []string{"PASS: 1 class breaks as known_unsafe expects; results in "}, ""},
		{"power:WAL/FULL", 1, []string{"held, but known_unsafe lists it: the run fails ✗"},
			"FAIL pattern/single-transaction/power:WAL/FULL: held, but known_unsafe lists it: the run fails\n"},
	} {
		t.Run(tt.entry, func(t *testing.T) {
			file := patternFile(t, "single-transaction", func(m map[string]any) {
				m["known_unsafe"] = []any{tt.entry}
				m["power"] = []any{"DELETE/FULL", "WAL/FULL"}
			})
			r, out := runPattern(t, file, "--faults", "power")
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, s := range tt.out {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
			if !strings.Contains(r.stderr, tt.fail) {
				t.Errorf("stderr lacks %q:\n%s", tt.fail, r.stderr)
			}
			v := execIn(t, Hooks{}, "verify", out)
			if want := map[int]int{0: 0, 1: 4}[tt.code]; v.code != want {
				t.Fatalf("verify: exit %d, want %d:\n%s%s", v.code, want, v.stdout, v.stderr)
			}
			if tt.code == 0 && !strings.Contains(v.stdout, "run verdict, derived from the records: PASS: 1 class breaks as known_unsafe expects") {
				t.Errorf("verify does not say what the pass rests on:\n%s", v.stdout)
			}
		})
	}
}

// TestPatternClassWithNoTrialsFails: a fault class whose plan holds no
// trial tested nothing, so the run cannot pass on it: --trials 0 leaves the
// random class empty, which is a finding naming the class, exit 1.
func TestPatternClassWithNoTrialsFails(t *testing.T) {
	t.Parallel()
	r, out := runPattern(t, patterns+"outbox.json", "--faults", "random", "--trials", "0")
	if r.code != 1 || !strings.Contains(r.stderr, "outbox/random plans no trials") {
		t.Fatalf("exit %d, want 1 with the empty class named:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if v := execIn(t, Hooks{}, "verify", out); v.code != 4 || !strings.Contains(v.stdout+v.stderr, "plans no trials") {
		t.Errorf("verify: exit %d, want 4 deriving the same finding:\n%s%s", v.code, v.stdout, v.stderr)
	}
}
