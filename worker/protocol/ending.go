package protocol

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// gistMax bounds the stderr line an ending quotes.
const gistMax = 200

// exitNames are the codes of this protocol in a reader's words.
var exitNames = map[int]string{
	ExitACK:         "ACK",
	ExitUsage:       "usage error",
	ExitWorkerError: "worker error",
	ExitCrash:       "crash",
	ExitStepFailed:  "step failed",
}

// Ending says in a reader's words how a process ended, with the line of
// its stderr that says why: "exited 3 (worker error): worker x: insert
// job: UNIQUE constraint failed: follow_up_jobs.job_key", "panicked (exit
// 2): boom", "died from signal killed". A finding quotes it, so a reader
// of a failed condition sees what the worker said without opening
// raw-processes.jsonl.
func Ending(exitCode int, signal, stderr string) string {
	gist, panicked := Gist(stderr)
	var s string
	switch {
	case signal != "":
		s = "died from signal " + signal
	case panicked:
		s = fmt.Sprintf("panicked (exit %d)", exitCode)
	case exitNames[exitCode] != "":
		s = fmt.Sprintf("exited %d (%s)", exitCode, exitNames[exitCode])
	default:
		s = fmt.Sprintf("exited %d", exitCode)
	}
	if gist != "" {
		s += ": " + gist
	}
	return s
}

// Gist is the line of a worker's stderr that says why it ended: the
// message of a Go panic or fatal error when there is one (the goroutine
// dump after it says nothing to a reader), else the last non-empty line.
// It is cut to gistMax bytes.
func Gist(stderr string) (line string, panicked bool) {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, l := range lines {
		for _, prefix := range []string{"panic: ", "fatal error: "} {
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				return cut(strings.TrimSpace(rest)), true
			}
		}
	}
	return cut(strings.TrimSpace(lines[len(lines)-1])), false
}

func cut(s string) string {
	if len(s) <= gistMax {
		return s
	}
	n := gistMax
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
