// Package harness is the parent side shared by every scenario: it spawns
// workers by re-executing the harness binary, records every process and
// observation, and writes the results folder atomically.
package harness

import "errors"

// The error classes the CLI maps to exit codes. Wrap one of them with %w to
// choose the exit code; everything else is a harness failure.
var (
	// ErrUsage is a bad flag, bad input or an output folder that exists
	// (exit 2).
	ErrUsage = errors.New("usage error")
	// ErrExpectation means an observation differed from the oracle (exit 1).
	ErrExpectation = errors.New("expectation failed")
	// ErrHarness means the harness itself failed, for instance a worker
	// that exited in a way the protocol does not allow (exit 3).
	ErrHarness = errors.New("harness failure")
)

// Exit codes of the idemlab command.
const (
	ExitOK          = 0
	ExitExpectation = 1
	ExitUsage       = 2
	ExitHarness     = 3
)
