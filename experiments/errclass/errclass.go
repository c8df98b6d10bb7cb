// Package errclass holds the error classes that the command maps to exit
// codes. Wrap one with %w to choose the exit code; the cause stays
// reachable with errors.Is and errors.As.
package errclass

import "errors"

// The error classes the CLI maps to exit codes. Wrap one of them with %w to
// choose the exit code; everything else is a harness failure.
var (
	// ErrUsage is a bad flag, bad input or an output folder that exists
	// (exit 2).
	ErrUsage = errors.New("usage error")
	// ErrExpectation means an observation differed from the oracle, or a
	// folder did not verify (exit 1).
	ErrExpectation = errors.New("expectation failed")
	// ErrHarness means the harness itself failed: it could not start,
	// wait for or record a worker, write the folder or read its own
	// records (exit 3). Nothing a worker does is a harness failure.
	ErrHarness = errors.New("harness failure")
	// ErrFindings means a results folder does not verify: its records do
	// not give what its results.json says (exit 1).
	ErrFindings = errors.New("the folder does not verify")
	// ErrResultsDiffer means verify --rerun observed different results
	// (exit 1).
	ErrResultsDiffer = errors.New("the results differ")
	// ErrShardsMismatch means idemlab merge was given shard folders that
	// are not the parts of one plan: one missing, given twice, from
	// another input, seed or binary, or not verifying (exit 1).
	ErrShardsMismatch = errors.New("the shard folders do not fit together")
	// ErrRunFailed means a folder is consistent, but the run it records
	// failed its expectations (verify, exit 4).
	ErrRunFailed = errors.New("the recorded run failed")
	// ErrCodeChanged means a folder verifies and a rerun reproduced it, but
	// the code differs from the code that made it (verify, exit 5).
	ErrCodeChanged = errors.New("the code changed since the run")
	// ErrInterrupted means Ctrl-C or SIGTERM stopped the run (exit 130).
	ErrInterrupted = errors.New("interrupted")
)

// Exit codes of the idemlab command.
const (
	ExitOK          = 0
	ExitExpectation = 1
	ExitUsage       = 2
	ExitHarness     = 3
	ExitRunFailed   = 4
	ExitCodeChanged = 5
	ExitInterrupted = 130
)

// Class is an error class and the exit code the command maps it to.
type Class struct {
	Err  error
	Code int
}

// Classes are the error classes in the order the command tests them: the
// first one an error wraps decides its exit code. An error that wraps
// none is a usage error before the command started, and a harness failure
// after. The exit-code tables of the manual are made from this list.
var Classes = []Class{
	{ErrInterrupted, ExitInterrupted},
	{ErrUsage, ExitUsage},
	{ErrExpectation, ExitExpectation},
	{ErrFindings, ExitExpectation},
	{ErrResultsDiffer, ExitExpectation},
	{ErrShardsMismatch, ExitExpectation},
	{ErrRunFailed, ExitRunFailed},
	{ErrCodeChanged, ExitCodeChanged},
	{ErrHarness, ExitHarness},
}
