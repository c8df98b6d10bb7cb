package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/engine"
)

// fileCopy is a code block in a topic that follows <!-- file: PATH -->:
// the repository file PATH, shown whole.
var fileCopy = regexp.MustCompile("(?s)<!-- file: (\\S+) -->\n(```[a-z]*\n)(.*?)```\n")

// TestTopicFileCopies: each file a topic shows whole is the repository's
// file as it is now, so the program the manual prints is the one the
// tests run; -update copies the files into the topics again.
func TestTopicFileCopies(t *testing.T) {
	topics, err := filepath.Glob("help/topics/*.md")
	if err != nil || len(topics) == 0 {
		t.Fatalf("no topics under help/topics (%v)", err)
	}
	copies := 0
	for _, path := range topics {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := fileCopy.ReplaceAllStringFunc(string(b), func(block string) string {
			m := fileCopy.FindStringSubmatch(block)
			copies++
			file, err := os.ReadFile(filepath.Join("..", m[1]))
			if err != nil {
				t.Errorf("%s shows %s, which the repository does not hold: %v", filepath.Base(path), m[1], err)
				return block
			}
			if diff := cmp.Diff(m[3], string(file)); diff != "" && !*update {
				t.Errorf("%s's copy of %s is stale; run go test ./cmd -run TestTopicFileCopies -update (-topic +file):\n%s", filepath.Base(path), m[1], diff)
			}
			return "<!-- file: " + m[1] + " -->\n" + m[2] + string(file) + "```\n"
		})
		if *update && text != string(b) {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if copies == 0 {
		t.Fatal("no topic shows a repository file whole: the handlers topic should")
	}
}

// TestHandlerExamplePerLanguage: the handlers topic shows, whole, one
// shipped handler program for each interpreter a shipped handler file
// (testdata/handlers/*.json) runs its program with.
func TestHandlerExamplePerLanguage(t *testing.T) {
	b, err := os.ReadFile("help/topics/handlers.md")
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, m := range fileCopy.FindAllStringSubmatch(string(b), -1) {
		shown = append(shown, m[1])
	}
	programs := shippedPrograms(t)
	if len(programs) == 0 {
		t.Fatal("no shipped handler file under testdata/handlers names a program")
	}
	for interpreter, files := range programs {
		if !slices.ContainsFunc(files, func(f string) bool { return slices.Contains(shown, f) }) {
			t.Errorf("the handlers topic shows no %s program whole; add one of %s after <!-- file: PATH -->", interpreter, strings.Join(files, ", "))
		}
	}
}

// shippedPrograms are the programs the shipped handler files run, by
// their interpreter (command[0]): each argument that names a file beside
// the handler file.
func shippedPrograms(t testing.TB) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("../testdata/handlers/*.json")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Command []string `json:"command"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, arg := range p.Command[min(1, len(p.Command)):] {
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), arg)); err == nil {
				out[p.Command[0]] = append(out[p.Command[0]], filepath.ToSlash(filepath.Join("testdata/handlers", arg)))
			}
		}
	}
	return out
}

// TestFaultsTopicNamesEveryClass: the faults topic names every fault
// class of the engine's registry, by its word in --faults or, for a
// class pattern files do not run, by its kind.
func TestFaultsTopicNamesEveryClass(t *testing.T) {
	md, err := topicMarkdown("faults")
	if err != nil {
		t.Fatal(err)
	}
	if len(engine.Classes) == 0 {
		t.Fatal("engine.Classes is empty")
	}
	for _, c := range engine.Classes {
		names := []string{c.Fault, string(c.Kind), strings.ReplaceAll(string(c.Kind), "-", " ")}
		named := func(n string) bool {
			return n != "" && (strings.Contains(md, "**"+n) || strings.Contains(md, "`"+n))
		}
		if !slices.ContainsFunc(names, named) {
			t.Errorf("the faults topic does not name class %s (in bold or as code: %s)", c.Kind, strings.Join(names[1:], ", "))
		}
	}
}
