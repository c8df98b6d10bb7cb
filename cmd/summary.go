package cmd

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
	"idemlab/experiments/review"
	"idemlab/experiments/scenario"
	"idemlab/experiments/suite"
)

// maxWidth is the terminal width tables are fitted to.
const maxWidth = 100

// printTable prints a table aligned with tabwriter, wrapping the widest
// column onto continuation lines until every line fits maxWidth, then its
// legend. A cell is never cut: its end (the rarest outcome, the last
// condition part) is often what the reader looks for.
func printTable(w io.Writer, t scenario.Table) {
	if t.Title != "" {
		fmt.Fprintln(w, t.Title)
	}
	rows := fit(append([][]string{t.Header}, t.Rows...))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	for _, l := range t.Legend {
		for i, line := range wrap(l, maxWidth-4) {
			indent := "  "
			if i > 0 {
				indent = "    "
			}
			fmt.Fprintf(w, "%s%s\n", indent, line)
		}
	}
}

// wrap breaks text at spaces into lines of at most width runes.
func wrap(text string, width int) []string {
	var lines []string
	var cur []string
	n := 0
	for _, word := range strings.Fields(text) {
		wl := utf8.RuneCountInString(word)
		if n > 0 && n+1+wl > width {
			lines = append(lines, strings.Join(cur, " "))
			cur, n = nil, 0
		}
		if n > 0 {
			n++
		}
		cur = append(cur, word)
		n += wl
	}
	if len(cur) > 0 {
		lines = append(lines, strings.Join(cur, " "))
	}
	return lines
}

// fit wraps the cells of the widest column, narrower each round, until
// every line fits maxWidth or no column can narrow further, and returns
// the lines to print: a row's continuation lines have its wrapped cells'
// later lines and empty cells elsewhere.
func fit(rows [][]string) [][]string {
	limit := map[int]int{}
	lines := func(i, j int) []string {
		if l, ok := limit[j]; ok {
			return cellLines(rows[i][j], l)
		}
		return []string{rows[i][j]}
	}
	for {
		widths := map[int]int{}
		for i, r := range rows {
			for j := range r {
				for _, l := range lines(i, j) {
					widths[j] = max(widths[j], utf8.RuneCountInString(l))
				}
			}
		}
		total, widest := 0, 0
		for j, n := range widths {
			total += n + 2
			if n > widths[widest] || n == widths[widest] && j < widest {
				widest = j
			}
		}
		next := max(8, widths[widest]-(total-maxWidth))
		if total <= maxWidth || next >= widths[widest] {
			break
		}
		limit[widest] = next
	}
	var out [][]string
	for i, r := range rows {
		cells := make([][]string, len(r))
		n := 1
		for j := range r {
			cells[j] = lines(i, j)
			n = max(n, len(cells[j]))
		}
		for k := range n {
			line := make([]string, len(r))
			for j := range r {
				if k < len(cells[j]) {
					line[j] = cells[j][k]
				}
			}
			out = append(out, line)
		}
	}
	return out
}

// cellLines breaks a cell into lines of at most width runes: between
// phrases (after "; " or ": ") where it can, so "one job want 1 got 0"
// stays on one line; else after a space, so "after-4-commit" stays
// whole; else after a comma, a slash or a hyphen; anywhere where a word
// is longer than a line.
func cellLines(s string, width int) []string {
	var lines []string
	for utf8.RuneCountInString(s) > width {
		r := []rune(s)
		cut := phraseCut(r, width)
		for _, seps := range []string{" ", ",/-"} {
			for k := width; cut == 0 && k > 0; k-- {
				if strings.ContainsRune(seps, r[k-1]) {
					cut = k
				}
			}
		}
		if cut == 0 {
			cut = width
		}
		lines = append(lines, strings.TrimRight(string(r[:cut]), " "))
		s = strings.TrimLeft(string(r[cut:]), " ")
	}
	return append(lines, s)
}

// phraseCut is the last cut within width after "; " or ": ", or 0.
func phraseCut(r []rune, width int) int {
	for k := min(width+1, len(r)); k >= 2; k-- {
		if r[k-1] == ' ' && (r[k-2] == ';' || r[k-2] == ':') {
			return k
		}
	}
	return 0
}

// Statuses of a run in the CI files.
const (
	StatusPass        = "pass"
	StatusFail        = "fail"
	StatusError       = "error"
	StatusInterrupted = "interrupted"
)

// status names how a run ended, from the exit code its error maps to.
func status(err error) (string, int) {
	code := ExitCode(err, true)
	switch code {
	case errclass.ExitOK:
		return StatusPass, code
	case errclass.ExitExpectation:
		return StatusFail, code
	case errclass.ExitInterrupted:
		return StatusInterrupted, code
	}
	return StatusError, code
}

// Summary is the machine-readable summary of a run, for CI. It is written
// on every exit, so it always describes the run that wrote it: Status says
// how it ended and Error is the line printed on stderr.
type Summary struct {
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error,omitempty"`
	Pass     bool   `json:"pass"`
	Out      string `json:"out"`
	// Failures are the failure lines printed on stderr.
	Failures  []string          `json:"failures"`
	Scenarios []SummaryScenario `json:"scenarios"`
}

// SummaryScenario is one scenario in the summary.
type SummaryScenario struct {
	Name       string             `json:"name"`
	Pass       bool               `json:"pass"`
	Findings   []string           `json:"findings,omitempty"`
	Conditions []SummaryCondition `json:"conditions"`
}

// SummaryCondition is one condition in the summary: its findings, every
// difference in the scenario's words (headline first), and the raw
// differences as results.json holds them.
type SummaryCondition struct {
	Name        string               `json:"name"`
	Pass        bool                 `json:"pass"`
	Findings    []string             `json:"findings,omitempty"`
	Explained   []string             `json:"explained,omitempty"`
	Differences []results.Difference `json:"differences,omitempty"`
}

func summarise(reg scenario.Registry, out string, res *results.Results, runErr error) Summary {
	st, code := status(runErr)
	s := Summary{Status: st, ExitCode: code, Out: out, Failures: []string{}, Scenarios: []SummaryScenario{}}
	if runErr != nil {
		s.Error = runErr.Error()
	}
	if res == nil {
		return s
	}
	s.Pass = res.Pass && runErr == nil
	s.Failures = append(s.Failures, suite.Failures(reg, res)...)
	for _, sc := range res.Scenarios {
		ss := SummaryScenario{Name: sc.Name, Pass: sc.Pass, Findings: findingLines(sc.Findings)}
		def, _ := reg.Lookup(sc.Name)
		for _, c := range sc.Conditions {
			cs := SummaryCondition{Name: c.Name, Pass: c.Pass, Findings: findingLines(c.Findings), Differences: c.Differences}
			if !c.Pass {
				cs.Explained = scenario.ExplainLines(def, c)
			}
			ss.Conditions = append(ss.Conditions, cs)
		}
		s.Scenarios = append(s.Scenarios, ss)
	}
	return s
}

func findingLines(fs []results.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.String())
	}
	return out
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// junit has one test case per condition. A failed one's message is its
// failure line as stderr prints it, without the name (suite.FailureText),
// and its text every finding and difference, one a line. A run that ended in an error or an interrupt
// adds a test case "run" holding the error line, so CI never reads a
// run that stopped as one that passed.
func junit(reg scenario.Registry, res *results.Results, runErr error) junitSuites {
	var out junitSuites
	if res != nil {
		for _, sc := range res.Scenarios {
			def, _ := reg.Lookup(sc.Name)
			js := junitSuite{Name: "idemlab/" + sc.Name}
			for _, c := range sc.Conditions {
				jc := junitCase{Name: c.Name, Classname: "idemlab." + sc.Name}
				if !c.Pass {
					lines := append(conditionFindings(c), scenario.ExplainLines(def, c)...)
					jc.Failure = &junitFailure{Message: suite.FailureText(def, c), Text: strings.Join(lines, "\n")}
					js.Failures++
				}
				js.Tests++
				js.Cases = append(js.Cases, jc)
			}
			if len(sc.Findings) > 0 {
				lines := findingLines(sc.Findings)
				js.Cases = append(js.Cases, junitCase{Name: "findings", Classname: "idemlab." + sc.Name, Failure: &junitFailure{Message: lines[0], Text: strings.Join(lines, "\n")}})
				js.Tests++
				js.Failures++
			}
			out.Tests += js.Tests
			out.Failures += js.Failures
			out.Suites = append(out.Suites, js)
		}
	}
	if st, _ := status(runErr); st == StatusError || st == StatusInterrupted {
		js := junitSuite{Name: "idemlab", Tests: 1, Errors: 1, Cases: []junitCase{{
			Name: "run", Classname: "idemlab", Error: &junitFailure{Message: runErr.Error(), Type: st, Text: runErr.Error()},
		}}}
		out.Tests++
		out.Errors++
		out.Suites = append(out.Suites, js)
	}
	return out
}

func conditionFindings(c results.ConditionResult) []string {
	var out []string
	for _, f := range c.Findings {
		out = append(out, f.Message)
	}
	return out
}

// checkCIPaths refuses an unwritable --summary-json or --junit before the
// run, as --out is refused, so no folder is written for nothing.
func checkCIPaths(opts *ExperimentOptions) error {
	for _, p := range []struct{ flag, path string }{{"--summary-json", opts.SummaryJSON}, {"--junit", opts.JUnit}} {
		if err := review.CheckWritable(p.flag, p.path); err != nil {
			return err
		}
	}
	if opts.SummaryJSON != "" && filepath.Clean(opts.SummaryJSON) == filepath.Clean(opts.JUnit) {
		return fmt.Errorf("%w: --summary-json and --junit are both %s; give each its own file", errclass.ErrUsage, opts.JUnit)
	}
	return nil
}

// writeCISummaries writes --summary-json and --junit for a run that ended
// with runErr (nil when it passed); res is nil when no folder was written.
// Each file replaces the old one through a rename, so a reader sees the
// previous run's file or this run's, never half of one.
func writeCISummaries(opts *ExperimentOptions, res *results.Results, runErr error) error {
	reg := opts.hooks.Registry
	if opts.SummaryJSON != "" {
		b, _ := json.MarshalIndent(summarise(reg, opts.Out, res, runErr), "", "  ")
		if err := review.WriteFile(opts.SummaryJSON, append(b, '\n')); err != nil {
			return fmt.Errorf("%w: --summary-json: %w", errclass.ErrHarness, err)
		}
	}
	if opts.JUnit != "" {
		b, _ := xml.MarshalIndent(junit(reg, res, runErr), "", "  ")
		if err := review.WriteFile(opts.JUnit, append([]byte(xml.Header), append(b, '\n')...)); err != nil {
			return fmt.Errorf("%w: --junit: %w", errclass.ErrHarness, err)
		}
	}
	return nil
}
