package review

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"idemlab/experiments/harness"
	"idemlab/experiments/suite"
	"idemlab/worker"
)

var update = flag.Bool("update", false, "regenerate the golden folder and the golden report")

func TestMain(m *testing.M) { worker.TestMain(m) }

// The golden folder is a real run of the redelivery scenario, committed. Its
// input file sits beside it, since the recorded input hash must match the
// file verify is given.
const (
	goldenDir   = "testdata/golden/results"
	goldenInput = "testdata/golden/input.json"
)

// regenerateGolden runs the scenario for real with this test binary as the
// worker binary. Only argv is rewritten afterwards, to keep this machine's
// temporary paths out of the repository; verify does not check argv.
func regenerateGolden(t *testing.T) {
	regenerateFolder(t, suite.Options{Out: goldenDir, InputPath: goldenInput, Scenarios: []string{"redelivery"}})
}

// regenerateFolder runs the scenarios of so for real into so.Out, replacing
// it, and keeps temporary paths out of argv.
func regenerateFolder(t *testing.T, so suite.Options) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if err := os.RemoveAll(so.Out); err != nil {
		t.Fatal(err)
	}
	so.Executable, so.Workdir, so.TempDir, so.Stdout, so.Stderr = exe, wd, t.TempDir(), io.Discard, io.Discard
	if _, err = suite.Run(context.Background(), so); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(so.Out, harness.ProcessesFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		var rec harness.ProcessRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		for i, a := range rec.Argv {
			if filepath.IsAbs(a) {
				rec.Argv[i] = "$TMP/" + filepath.Base(a)
			}
		}
		enc, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(enc, '\n'))
	}
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyGolden copies the golden folder and its input into a temp dir that a
// test may tamper with.
func copyGolden(tb testing.TB) (dir, input string) {
	tb.Helper()
	return copyFolder(tb, goldenDir, goldenInput)
}

// copyFolder copies a committed results folder and its input.
func copyFolder(tb testing.TB, goldenDir, goldenInput string) (dir, input string) {
	tb.Helper()
	root := tb.TempDir()
	dir = filepath.Join(root, "results")
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for _, name := range []string{harness.ResultsFile, harness.ObservationsFile, harness.ProcessesFile} {
		b, err := os.ReadFile(filepath.Join(goldenDir, name))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	b, err := os.ReadFile(goldenInput)
	if err != nil {
		tb.Fatal(err)
	}
	input = filepath.Join(root, "input.json")
	if err := os.WriteFile(input, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir, input
}

// treeDigest lists every entry with its mode and content, to show verify
// wrote nothing into the folder.
func treeDigest(tb testing.TB, dir string) string {
	tb.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			tb.Fatal(err)
		}
		st, _ := os.Lstat(p)
		b.WriteString(p + " " + st.Mode().String() + " " + st.ModTime().String() + "\n")
		if st.Mode().IsRegular() {
			c, _ := os.ReadFile(p)
			b.Write(c)
		}
		return nil
	})
	return b.String()
}

func TestGoldenFolderVerifies(t *testing.T) {
	if *update {
		regenerateGolden(t)
	}
	before := treeDigest(t, goldenDir)
	out, err := Verify(goldenDir, Options{InputPath: goldenInput})
	if err != nil {
		t.Fatal(err)
	}
	if !out.OK() {
		t.Fatalf("golden folder does not verify:\n%v", out.Findings)
	}
	if !strings.Contains(strings.Join(out.Notices, "\n"), "code hash check skipped") {
		t.Errorf("no notice that the code hash was skipped; notices: %v", out.Notices)
	}
	if after := treeDigest(t, goldenDir); after != before {
		t.Fatal("verify changed the folder")
	}
}

// editJSON rewrites results.json through a generic decode, so a test can
// change one field.
func editJSON(tb testing.TB, path string, edit func(m map[string]any)) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatal(err)
	}
	edit(m)
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// editLine rewrites line n (1-based) of a JSONL file.
func editLine(tb testing.TB, path string, n int, edit func(m map[string]any)) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[n-1]), &m); err != nil {
		tb.Fatal(err)
	}
	edit(m)
	enc, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	lines[n-1] = string(enc)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func conditionAt(m map[string]any, s, c int) map[string]any {
	return m["scenarios"].([]any)[s].(map[string]any)["conditions"].([]any)[c].(map[string]any)
}

func TestTamperedFoldersFail(t *testing.T) {
	tests := []struct {
		name      string
		tamper    func(t *testing.T, dir, input string)
		limits    Limits
		wantFile  string
		wantField string
		wantMsg   string
	}{
		{
			name: "row count changed in results.json",
			tamper: func(t *testing.T, dir, _ string) {
				editJSON(t, filepath.Join(dir, harness.ResultsFile), func(m map[string]any) {
					d := conditionAt(m, 0, 1)["observed"].([]any)[1].(map[string]any)
					d["follow_up_jobs"] = 1
				})
			},
			wantFile: harness.ResultsFile, wantField: "observed[1].follow_up_jobs", wantMsg: "observations.jsonl line 4 says 2",
		},
		{
			name: "row count changed in observations.jsonl",
			tamper: func(t *testing.T, dir, _ string) {
				editLine(t, filepath.Join(dir, harness.ObservationsFile), 4, func(m map[string]any) {
					m["observed"].(map[string]any)["follow_up_jobs"] = 1
				})
			},
			wantFile: harness.ObservationsFile, wantField: "line 4: observed.follow_up_jobs", wantMsg: "lists 2 rows",
		},
		{
			name: "process exit code changed",
			tamper: func(t *testing.T, dir, _ string) {
				editLine(t, filepath.Join(dir, harness.ProcessesFile), 3, func(m map[string]any) { m["exit_code"] = 0 })
			},
			wantFile: harness.ObservationsFile, wantField: "line 3: exit_code", wantMsg: "process 3 exited 0",
		},
		{
			name: "input.json changed",
			tamper: func(t *testing.T, _, input string) {
				b, _ := os.ReadFile(input)
				os.WriteFile(input, bytes.Replace(b, []byte("042"), []byte("043"), 1), 0o644)
			},
			wantFile: harness.ResultsFile, wantField: "inputs.sha256", wantMsg: "hashes to",
		},
		{
			name: "last line truncated",
			tamper: func(t *testing.T, dir, _ string) {
				p := filepath.Join(dir, harness.ObservationsFile)
				b, _ := os.ReadFile(p)
				os.WriteFile(p, b[:len(b)-40], 0o644)
			},
			wantFile: harness.ObservationsFile, wantField: "line 10", wantMsg: "truncated",
		},
		{
			name: "line cut in the middle",
			tamper: func(t *testing.T, dir, _ string) {
				p := filepath.Join(dir, harness.ProcessesFile)
				b, _ := os.ReadFile(p)
				lines := strings.SplitAfter(string(b), "\n")
				lines[1] = lines[1][:len(lines[1])/2] + "\n"
				os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644)
			},
			wantFile: harness.ProcessesFile, wantField: "line 2", wantMsg: "not a process record",
		},
		{
			name: "symlink inside the folder pointing outside",
			tamper: func(t *testing.T, dir, _ string) {
				if err := os.Symlink("/etc/passwd", filepath.Join(dir, "notes.txt")); err != nil {
					t.Fatal(err)
				}
			},
			wantFile: "notes.txt", wantMsg: "pointing outside",
		},
		{
			name: "results.json replaced by a symlink",
			tamper: func(t *testing.T, dir, _ string) {
				p := filepath.Join(dir, harness.ResultsFile)
				b, _ := os.ReadFile(p)
				other := filepath.Join(t.TempDir(), "results.json")
				os.WriteFile(other, b, 0o644)
				os.Remove(p)
				if err := os.Symlink(other, p); err != nil {
					t.Fatal(err)
				}
			},
			wantFile: harness.ResultsFile, wantMsg: "symbolic link",
		},
		{
			name: "missing raw-processes.jsonl",
			tamper: func(t *testing.T, dir, _ string) {
				os.Remove(filepath.Join(dir, harness.ProcessesFile))
			},
			wantFile: harness.ProcessesFile, wantMsg: "missing",
		},
		{
			name:     "huge file",
			tamper:   func(*testing.T, string, string) {},
			limits:   Limits{JSONLBytes: 1024},
			wantFile: harness.ProcessesFile, wantMsg: "over the cap",
		},
		{
			name: "observation line removed",
			tamper: func(t *testing.T, dir, _ string) {
				p := filepath.Join(dir, harness.ObservationsFile)
				b, _ := os.ReadFile(p)
				lines := strings.SplitAfter(string(b), "\n")
				os.WriteFile(p, []byte(strings.Join(append(lines[:3:3], lines[4:]...), "")), 0o644)
			},
			wantFile: harness.ObservationsFile, wantField: "condition separate-commit/crash-after-job-commit", wantMsg: "1 lines, but results.json has 2 deliveries",
		},
		{
			name: "expected edited to match a wrong observation",
			tamper: func(t *testing.T, dir, _ string) {
				editJSON(t, filepath.Join(dir, harness.ResultsFile), func(m map[string]any) {
					conditionAt(m, 0, 1)["expected"].([]any)[1].(map[string]any)["follow_up_jobs"] = 1
				})
			},
			wantFile: harness.ResultsFile, wantField: "expected[1].follow_up_jobs", wantMsg: "the oracle computes 2",
		},
		{
			name: "overall pass flipped",
			tamper: func(t *testing.T, dir, _ string) {
				editJSON(t, filepath.Join(dir, harness.ResultsFile), func(m map[string]any) { m["pass"] = false })
			},
			wantFile: harness.ResultsFile, wantField: "pass", wantMsg: "the scenarios give true",
		},
		{
			name: "condition pass flipped",
			tamper: func(t *testing.T, dir, _ string) {
				editJSON(t, filepath.Join(dir, harness.ResultsFile), func(m map[string]any) {
					conditionAt(m, 0, 2)["pass"] = false
					conditionAt(m, 0, 2)["diff"] = "made up"
				})
			},
			wantFile: harness.ResultsFile, wantField: "conditions[single-transaction/normal].pass", wantMsg: "expected and observed agree",
		},
		{
			name: "unknown field in results.json",
			tamper: func(t *testing.T, dir, _ string) {
				editJSON(t, filepath.Join(dir, harness.ResultsFile), func(m map[string]any) { m["verified_by"] = "me" })
			},
			wantFile: harness.ResultsFile, wantField: "/", wantMsg: "schema: unexpected additional properties [\"verified_by\"]",
		},
		{
			name: "results.json not JSON",
			tamper: func(t *testing.T, dir, _ string) {
				os.WriteFile(filepath.Join(dir, harness.ResultsFile), []byte("{\"tool\": \n"), 0o644)
			},
			wantFile: harness.ResultsFile, wantMsg: "not valid JSON",
		},
		{
			name: "process line added",
			tamper: func(t *testing.T, dir, _ string) {
				p := filepath.Join(dir, harness.ProcessesFile)
				b, _ := os.ReadFile(p)
				first := strings.SplitAfter(string(b), "\n")[0]
				os.WriteFile(p, append(b, first...), 0o644)
			},
			wantFile: harness.ProcessesFile, wantField: "line 11: id", wantMsg: "is 1, want 11",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, input := copyGolden(t)
			tt.tamper(t, dir, input)
			before := treeDigest(t, dir)
			out, err := Verify(dir, Options{InputPath: input, Limits: tt.limits})
			if err != nil {
				t.Fatal(err)
			}
			if out.OK() {
				t.Fatal("tampered folder verified")
			}
			found := false
			for _, f := range out.Findings {
				if f.File == tt.wantFile && strings.Contains(f.Field, tt.wantField) && strings.Contains(f.Message, tt.wantMsg) {
					found = true
				}
			}
			if !found {
				var all []string
				for _, f := range out.Findings {
					all = append(all, f.String())
				}
				t.Fatalf("no finding in %s at %q saying %q; findings:\n%s", tt.wantFile, tt.wantField, tt.wantMsg, strings.Join(all, "\n"))
			}
			if after := treeDigest(t, dir); after != before {
				t.Fatal("verify changed the folder")
			}
		})
	}
}

func TestVerifyUsageErrors(t *testing.T) {
	dir, input := copyGolden(t)
	tests := []struct {
		name, dir, input string
	}{
		{"missing input", dir, filepath.Join(t.TempDir(), "nope.json")},
		{"missing folder", filepath.Join(t.TempDir(), "nope"), input},
		{"folder is a file", input, input},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Verify(tt.dir, Options{InputPath: tt.input})
			if err == nil || !errorsIsUsage(err) {
				t.Fatalf("err = %v, want a usage error", err)
			}
		})
	}
}

func TestCodeHashChecked(t *testing.T) {
	dir, input := copyGolden(t)
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module idemlab\n"), 0o644)
	os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n"), 0o644)
	sum, err := harness.SourceTreeHash(src)
	if err != nil {
		t.Fatal(err)
	}
	editJSON(t, filepath.Join(dir, harness.ResultsFile), func(m map[string]any) {
		m["code"].(map[string]any)["source"] = map[string]any{"sha256": sum.SHA256, "files": sum.Files, "method": sum.Method}
	})
	out, err := Verify(dir, Options{InputPath: input, SourceRoot: src})
	if err != nil {
		t.Fatal(err)
	}
	if !out.OK() {
		t.Fatalf("matching source tree gave findings: %v", out.Findings)
	}
	os.WriteFile(filepath.Join(src, "main.go"), []byte("package main // changed\n"), 0o644)
	out, err = Verify(dir, Options{InputPath: input, SourceRoot: src})
	if err != nil {
		t.Fatal(err)
	}
	if out.OK() || out.Findings[0].Field != "code.source.sha256" {
		t.Fatalf("changed source tree: findings %v, want one at code.source.sha256", out.Findings)
	}
}

func TestRerunReproducesGolden(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, input := copyGolden(t)
	f, err := Load(dir, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := Rerun(context.Background(), f, RerunOptions{InputPath: input, Executable: exe, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !ro.OK() {
		t.Fatalf("rerun differs: %v", ro.Diffs)
	}
	// A folder whose figures were edited consistently still differs from a
	// fresh run.
	editJSON(t, filepath.Join(dir, harness.ResultsFile), func(m map[string]any) {
		conditionAt(m, 0, 1)["observed"].([]any)[1].(map[string]any)["follow_up_jobs"] = 1
	})
	f, _ = Load(dir, Limits{})
	ro, err = Rerun(context.Background(), f, RerunOptions{InputPath: input, Executable: exe, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if ro.OK() || !strings.Contains(ro.Diffs["redelivery"], "FollowUpJobs") {
		t.Fatalf("rerun of an edited folder: diffs %v, want a FollowUpJobs difference", ro.Diffs)
	}
}

// normalise hides what changes whenever the golden folder is regenerated.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`), "TIME"},
	{regexp.MustCompile(`[0-9a-f]{64}`), "SHA256"},
	{regexp.MustCompile(`[0-9a-f]{40}`), "REVISION"},
	{regexp.MustCompile(`(source tree, )\d+( files)`), "${1}N${2}"},
	{regexp.MustCompile(`go1\.[0-9.]+`), "GOVERSION"},
	{regexp.MustCompile(`SQLite \| [0-9.]+`), "SQLite | VERSION"},
	{regexp.MustCompile(`CPUs \| \d+`), "CPUs | N"},
}

func normalise(s string) string {
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}

func TestReportGolden(t *testing.T) {
	rep := goldenReport(t, goldenDir)
	matchGoldenMarkdown(t, rep, "testdata/report.golden.md")
	if len(rep.Articles) != 1 || rep.Articles[0].Matches != 8 || rep.Articles[0].Cells != 8 {
		t.Fatalf("article 000: %+v, want 8 of 8 cells matching", rep.Articles)
	}
}

func TestReportMarksMismatchedCells(t *testing.T) {
	dir, _ := copyGolden(t)
	editJSON(t, filepath.Join(dir, harness.ResultsFile), func(m map[string]any) {
		conditionAt(m, 0, 1)["observed"].([]any)[1].(map[string]any)["follow_up_jobs"] = 1
	})
	f, err := Load(dir, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := BuildReport(f)
	if err != nil {
		t.Fatal(err)
	}
	if a := rep.Articles[0]; a.Matches != 7 || a.Cells != 8 {
		t.Fatalf("article 000: %d of %d cells match, want 7 of 8", a.Matches, a.Cells)
	}
	if len(rep.Findings) == 0 {
		t.Fatal("report of an edited folder shows no consistency finding")
	}
}

func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			b.WriteString("- " + a + "\n+ " + c + "\n")
		}
	}
	return b.String()
}

func TestSchemaShippedAndStrict(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(SchemaJSON, &doc); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(goldenDir, harness.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var res any
	json.Unmarshal(b, &res)
	if fs := validateSchema(res); len(fs) != 0 {
		t.Fatalf("golden results.json fails the schema: %v", fs)
	}
	res.(map[string]any)["inputs"].(map[string]any)["sha256"] = "not-a-hash"
	if fs := validateSchema(res); len(fs) == 0 || fs[0].Field != "/inputs/sha256" {
		t.Fatalf("bad hash: findings %v, want one at /inputs/sha256", fs)
	}
}

func TestPublishedDataParses(t *testing.T) {
	for _, name := range []string{"000.json", "002.json", "003.json"} {
		b, err := Published(name)
		if err != nil {
			t.Fatal(err)
		}
		var head struct{ Article, Scenario, Source string }
		dec := json.NewDecoder(bufio.NewReader(bytes.NewReader(b)))
		if err := dec.Decode(&head); err != nil || head.Article == "" || head.Scenario == "" || head.Source == "" {
			t.Fatalf("%s: head %+v, err %v", name, head, err)
		}
	}
}

func errorsIsUsage(err error) bool { return errors.Is(err, harness.ErrUsage) }

// goldenReport loads a committed results folder and builds its report.
func goldenReport(t testing.TB, dir string) *Report {
	t.Helper()
	f, err := Load(dir, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := BuildReport(f)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// matchGoldenMarkdown renders rep as Markdown, normalised, and compares it
// with the golden file, rewriting the file under -update.
func matchGoldenMarkdown(t testing.TB, rep *Report, golden string) {
	t.Helper()
	var md bytes.Buffer
	if err := RenderMarkdown(&md, rep, func(c Chart) string { return "report-" + c.Slug + ".svg" }); err != nil {
		t.Fatal(err)
	}
	got := normalise(md.String())
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("report differs from %s (run with -update to accept):\n%s", golden, lineDiff(string(want), got))
	}
}
