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

// printTable prints a table aligned with tabwriter, shortening the widest
// column until a row fits maxWidth, then its legend.
func printTable(w io.Writer, t scenario.Table) {
	if t.Title != "" {
		fmt.Fprintln(w, t.Title)
	}
	rows := append([][]string{t.Header}, t.Rows...)
	fit(rows)
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

// fit shortens cells of the widest column, with an ellipsis, until every
// row fits.
func fit(rows [][]string) {
	for {
		widths := map[int]int{}
		for _, r := range rows {
			for i, c := range r {
				widths[i] = max(widths[i], utf8.RuneCountInString(c))
			}
		}
		total, widest := 0, 0
		for i, n := range widths {
			total += n + 2
			if n > widths[widest] {
				widest = i
			}
		}
		if total <= maxWidth || widths[widest] <= 8 {
			return
		}
		limit := widths[widest] - (total - maxWidth)
		if limit < 8 {
			limit = 8
		}
		for _, r := range rows {
			if widest < len(r) && utf8.RuneCountInString(r[widest]) > limit {
				rs := []rune(r[widest])
				r[widest] = string(rs[:limit-1]) + "…"
			}
		}
	}
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
