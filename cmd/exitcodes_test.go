package cmd

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"idemlab/experiments/errclass"
)

// TestExitCodeOfEachClass: an error wrapping a class exits with the class's
// code, whatever wraps it; an error of no class is a usage error before
// the command started and a harness failure after.
func TestExitCodeOfEachClass(t *testing.T) {
	for _, c := range errclass.Classes {
		err := fmt.Errorf("outer: %w", fmt.Errorf("%w: inner", c.Err))
		for _, started := range []bool{false, true} {
			if got := ExitCode(err, started); got != c.Code {
				t.Errorf("ExitCode(%v, started %v) = %d, want %d", err, started, got, c.Code)
			}
		}
	}
	other := errors.New("something else")
	if got := ExitCode(other, false); got != errclass.ExitUsage {
		t.Errorf("an unclassified error before the start: exit %d, want %d", got, errclass.ExitUsage)
	}
	if got := ExitCode(other, true); got != errclass.ExitHarness {
		t.Errorf("an unclassified error after the start: exit %d, want %d", got, errclass.ExitHarness)
	}
	if got := ExitCode(nil, true); got != errclass.ExitOK {
		t.Errorf("no error: exit %d", got)
	}
}

// TestExitCodeDeclarations: every command declares its exit codes, each a
// code of errclass, and its --help prints them; the exit-codes topic
// holds every command's table.
func TestExitCodeDeclarations(t *testing.T) {
	known := []int{errclass.ExitOK}
	for _, c := range errclass.Classes {
		known = append(known, c.Code)
	}
	topic, err := topicMarkdown("exit-codes")
	if err != nil {
		t.Fatal(err)
	}
	root := newRootCmd(Streams{}, withPatterns(Hooks{}))
	for _, c := range root.Commands() {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			i := slices.IndexFunc(commandExits, func(d struct {
				Command string
				Codes   []exitCode
			}) bool {
				return d.Command == c.Name()
			})
			if i < 0 {
				t.Fatalf("%s declares no exit codes in commandExits", c.Name())
			}
			for _, e := range commandExits[i].Codes {
				if !slices.Contains(known, e.Code) {
					t.Errorf("%s declares exit %d, which no error class of errclass gives", c.Name(), e.Code)
				}
			}
			r := execIn(t, Hooks{}, c.Name(), "--help")
			if !strings.Contains(r.stdout, exitHelp(c.Name())) {
				t.Errorf("%s --help lacks its declared exit codes:\n%s", c.Name(), r.stdout)
			}
			if !strings.Contains(topic, "## `"+c.Name()+"`") {
				t.Errorf("the exit-codes topic has no table for %s", c.Name())
			}
		})
	}
}
