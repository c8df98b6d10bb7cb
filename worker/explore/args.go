package explore

import (
	"flag"
	"io"
)

// newFlagSet is a worker's flag set: errors returned, nothing printed, so
// the worker reports them in its one report line.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
