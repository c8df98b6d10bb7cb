package cmd

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
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

// cellLines breaks a cell into lines of at most width runes: after a
// space, a comma, a slash or a hyphen where it can, anywhere where a
// word is longer than a line.
func cellLines(s string, width int) []string {
	var lines []string
	for utf8.RuneCountInString(s) > width {
		r := []rune(s)
		cut := width
		for k := width; k > 0; k-- {
			if strings.ContainsRune(" ,/-", r[k-1]) {
				cut = k
				break
			}
		}
		lines = append(lines, strings.TrimRight(string(r[:cut]), " "))
		s = strings.TrimLeft(string(r[cut:]), " ")
	}
	return append(lines, s)
}

// Summary is the machine-readable summary of a run, for CI.
type Summary struct {
	Pass      bool              `json:"pass"`
	Out       string            `json:"out"`
	Failures  []string          `json:"failures"`
	Scenarios []SummaryScenario `json:"scenarios"`
}

// SummaryScenario is one scenario in the summary.
type SummaryScenario struct {
	Name       string             `json:"name"`
	Pass       bool               `json:"pass"`
	Conditions []SummaryCondition `json:"conditions"`
}

// SummaryCondition is one condition in the summary.
type SummaryCondition struct {
	Name        string               `json:"name"`
	Pass        bool                 `json:"pass"`
	Differences []results.Difference `json:"differences,omitempty"`
}

func summarise(out string, res *results.Results) Summary {
	s := Summary{Pass: res.Pass, Out: out, Failures: suite.Failures(res)}
	if s.Failures == nil {
		s.Failures = []string{}
	}
	for _, sc := range res.Scenarios {
		ss := SummaryScenario{Name: sc.Name, Pass: sc.Pass}
		for _, c := range sc.Conditions {
			ss.Conditions = append(ss.Conditions, SummaryCondition{Name: c.Name, Pass: c.Pass, Differences: c.Differences})
		}
		s.Scenarios = append(s.Scenarios, ss)
	}
	return s
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func junit(res *results.Results) junitSuites {
	var out junitSuites
	for _, sc := range res.Scenarios {
		js := junitSuite{Name: "idemlab/" + sc.Name}
		for _, c := range sc.Conditions {
			jc := junitCase{Name: c.Name, Classname: "idemlab." + sc.Name}
			if !c.Pass {
				var lines []string
				for _, d := range c.Differences {
					lines = append(lines, fmt.Sprintf("%s: want %s, got %s", d.Path, d.Expected, d.Observed))
				}
				jc.Failure = &junitFailure{Message: "observed differs from the oracle", Text: strings.Join(lines, "\n")}
				js.Failures++
			}
			js.Tests++
			js.Cases = append(js.Cases, jc)
		}
		out.Tests += js.Tests
		out.Failures += js.Failures
		out.Suites = append(out.Suites, js)
	}
	return out
}

// writeCISummaries writes --summary-json and --junit.
func writeCISummaries(opts *ExperimentOptions, res *results.Results) error {
	if opts.SummaryJSON != "" {
		b, _ := json.MarshalIndent(summarise(opts.Out, res), "", "  ")
		if err := os.WriteFile(opts.SummaryJSON, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("%w: --summary-json %s: %w", errclass.ErrHarness, opts.SummaryJSON, err)
		}
	}
	if opts.JUnit != "" {
		b, _ := xml.MarshalIndent(junit(res), "", "  ")
		if err := os.WriteFile(opts.JUnit, append([]byte(xml.Header), append(b, '\n')...), 0o644); err != nil {
			return fmt.Errorf("%w: --junit %s: %w", errclass.ErrHarness, opts.JUnit, err)
		}
	}
	return nil
}
