package cmd

import (
	"fmt"
	"slices"
	"strings"

	"idemlab/cmd/help"
	"idemlab/experiments/errclass"
)

// exitCode is one exit code a command declares: what it means for that
// command, in plain words for --help, and what the exit-codes topic adds
// (Markdown). Every exit-code table of the manual is made from these
// declarations and errclass.Classes.
type exitCode struct {
	Code int
	Help string
	More string
}

// commandExits are the commands' declarations, in the order the manual
// lists them.
var commandExits = []struct {
	Command string
	Codes   []exitCode
}{
	{"experiment", []exitCode{
		{errclass.ExitOK, `every expectation met; or, with --shard i/n, DIR already holds this shard of the same run ("shard i/n already done in DIR"), and nothing ran`, ""},
		{errclass.ExitExpectation, `an expectation failed, or a worker misbehaved (a finding): one line per failed condition on stderr; results written with "pass": false`,
			"Each line leads with the answer: the condition's findings, then its differences in the scenario's words, headline figure first (`FAIL claim/5-at-boundary/ttl: race B winners want 0 got 1; race B row claimed_at want \"A:now\" got \"B:now\"`), at most three and a count of the rest; `--verbose` adds the full diff."},
		{errclass.ExitUsage, `usage or input error (bad flag, bad input file, --out exists, and with --shard is not this shard of the same run); nothing is written`,
			"Also a bad flag value, a flag that does not apply to the chosen scenarios, a bad input file (the field is named), `--out` that exists (even empty) or cannot be created. Every value that reaches a worker as an argument or an environment variable (the scenarios' ids, keys and messages, a pattern file's `command`, `--dsn`) must hold no NUL byte and be at most 4096 bytes (`input.json: redelivery.event_id: contains a NUL byte`), where `exec` would refuse it later; a `--claim-sql` statement, at most 32 KiB. A run that loses `--out` to another run at the final rename also exits 2, keeping its results in the folder it names."},
		{errclass.ExitHarness, `the harness itself failed (it could not start a worker or write the folder); nothing is written`,
			"It could not start or wait for a worker, write the folder or read back its own records. Nothing a worker does is a harness failure: a worker that exits outside the protocol, dies from a signal, panics, prints no or a bad report, or reports what the rows contradict is recorded, its condition fails with a finding that says so, and the run exits 1."},
		{errclass.ExitInterrupted, `interrupted (Ctrl-C or SIGTERM); the workers are stopped and nothing is written`, ""},
	}},
	{"verify", []exitCode{
		{errclass.ExitOK, `the folder verifies and its run passed (and, with --rerun, was reproduced)`, ""},
		{errclass.ExitExpectation, `the folder does not verify (each finding names the file and the field), or the rerun gave different results`, ""},
		{errclass.ExitUsage, `usage error (bad flag, unreadable --input or --exe, DIR not a folder; --rerun of a folder made on PostgreSQL with neither the server's binaries nor --dsn; --dsn without --rerun or on a SQLite folder)`, ""},
		{errclass.ExitHarness, `the harness failed while rerunning`, ""},
		{errclass.ExitRunFailed, `the folder is consistent, but its run failed its expectations ("pass": false)`, ""},
		{errclass.ExitCodeChanged, `the folder verifies (and reproduces, with --rerun), but the code differs from the run's: --exe, the working tree, or the rerun's binary`, ""},
		{errclass.ExitInterrupted, `interrupted during --rerun`, ""},
	}},
	{"merge", []exitCode{
		{errclass.ExitOK, `merged, and the merged run passed`, ""},
		{errclass.ExitExpectation, `the folders are not the n parts of one plan (one missing, given twice, from another input, seed or binary, or not verifying): each reason names the folder, and nothing is written; or merged, but the merged run failed its expectations ("pass": false)`,
			"So does a folder from another flag, one that does not verify, or one that is no shard's; one line per reason on stderr."},
		{errclass.ExitUsage, `usage error (no --out, --out exists, a DIR that is not a folder); nothing is written`, ""},
		{errclass.ExitHarness, `the harness failed while merging; nothing is written`, ""},
	}},
	{"report", []exitCode{
		{errclass.ExitOK, `rendered (also when the code here differs from the run's)`, ""},
		{errclass.ExitExpectation, `rendered, but the folder does not verify (the findings are on the page), or results.json is unreadable; with several folders, one of them does not verify (nothing is written)`,
			"The page lists the findings under a \"DOES NOT VERIFY\" badge; with several folders, the one that does not verify is named."},
		{errclass.ExitUsage, `usage error (DIR not a folder, the output's folder missing)`, ""},
	}},
	{"resolve", []exitCode{
		{errclass.ExitOK, `resolved`, ""},
		{errclass.ExitUsage, `usage error: a missing flag or row, a SUCCEEDED row, or --delivered=true without --receipt`, ""},
		{errclass.ExitHarness, `the journal could not be read or written`, ""},
	}},
	{"list", []exitCode{
		{errclass.ExitOK, `printed`, ""},
		{errclass.ExitUsage, `usage error (an argument or an unknown flag)`, ""},
	}},
	{"docs", []exitCode{
		{errclass.ExitOK, `the pages are written`, ""},
		{errclass.ExitUsage, `usage error (neither --markdown nor --man, an argument, an unknown flag)`, ""},
		{errclass.ExitHarness, `a folder or a page could not be written`, ""},
	}},
}

// exitsOf is a command's declaration.
func exitsOf(command string) []exitCode {
	for _, c := range commandExits {
		if c.Command == command {
			return c.Codes
		}
	}
	panic("no exit codes declared for " + command)
}

// exitHelp is the "Exit codes:" block of a command's --help.
func exitHelp(command string) string {
	lines := []string{"Exit codes:"}
	for _, e := range exitsOf(command) {
		lines = append(lines, helpWrap(e.Help, fmt.Sprintf("  %-4d ", e.Code), "       ")...)
	}
	return strings.Join(lines, "\n")
}

// helpWrap wraps a --help paragraph at 100 columns.
func helpWrap(text, first, rest string) []string {
	return help.Wrap(text, 100, first, rest)
}

// exitCodesMarkdown is the exit-codes topic's generated part: what each
// code means across the commands (errclass.Classes), then each command's
// declaration.
func exitCodesMarkdown() string {
	var b strings.Builder
	b.WriteString(exitCodesCompact())
	b.WriteString("\nAn error of none of these classes is a usage error (2) when the command had not started (an unknown command, bad arguments), and a harness failure (3) once it had. The classes are `experiments/errclass`'s; the table is made from them and from each command's declaration (`cmd/exitcodes.go`).\n")
	for _, c := range commandExits {
		fmt.Fprintf(&b, "\n## `%s`\n\n| code | meaning |\n|---|---|\n", c.Command)
		for _, e := range c.Codes {
			text := e.Help
			if e.More != "" {
				text += ". " + e.More
			}
			fmt.Fprintf(&b, "| %d | %s |\n", e.Code, strings.ReplaceAll(text, "|", `\|`))
		}
	}
	return b.String()
}

// exitCodesCompact is the README's table: one row per code.
func exitCodesCompact() string {
	var b strings.Builder
	b.WriteString("| code | meaning | commands |\n|---|---|---|\n")
	for _, code := range exitCodeList() {
		fmt.Fprintf(&b, "| %d | %s | %s |\n", code, classWords(code), strings.Join(commandsUsing(code), ", "))
	}
	return b.String()
}

// exitCodeList is every code some command declares, in order.
func exitCodeList() []int {
	var codes []int
	for _, c := range commandExits {
		for _, e := range c.Codes {
			if !slices.Contains(codes, e.Code) {
				codes = append(codes, e.Code)
			}
		}
	}
	slices.Sort(codes)
	return codes
}

// classWords names what a code means across commands: the error classes
// that map to it.
func classWords(code int) string {
	if code == errclass.ExitOK {
		return "success"
	}
	var words []string
	for _, c := range errclass.Classes {
		if c.Code == code {
			words = append(words, c.Err.Error())
		}
	}
	return strings.Join(words, "; ")
}

func commandsUsing(code int) []string {
	var names []string
	for _, c := range commandExits {
		for _, e := range c.Codes {
			if e.Code == code {
				names = append(names, c.Command)
			}
		}
	}
	return names
}
