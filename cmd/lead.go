package cmd

import (
	"fmt"
	"io"

	"idemlab/experiments/scenario"
)

// printHead prints a scenario's verdict, in the scenario's words when a
// bare PASS would mislead, and then what it found, before its tables.
func printHead(w io.Writer, name string, pass bool, sec scenario.Section) {
	verdict := sec.Verdict
	switch {
	case verdict != "":
	case pass && sec.PassNote != "":
		verdict = "PASS: " + sec.PassNote
	default:
		verdict = verdictWord(pass)
	}
	fmt.Fprintf(w, "== %s  %s\n", name, verdict)
	for _, s := range sec.Lead {
		for i, line := range wrap(s.Text, maxWidth-2) {
			prefix := "- "
			if i > 0 {
				prefix = "  "
			}
			fmt.Fprintln(w, prefix+line)
		}
	}
}

// printReplays prints the commands that replay part of a result, with the
// binary the user ran, the input they gave and a folder that is free.
func printReplays(w io.Writer, sec scenario.Section, opts *ExperimentOptions) {
	input := opts.Input
	if input == defaultInput {
		input = ""
	}
	for i, line := range scenario.ReplayCommands(selfName(), input, opts.Out, sec.Replays) {
		fmt.Fprintf(w, "replay %s:\n  %s\n", sec.Replays[i].What, line)
	}
}
