// Command idemlab tests whether a message handler is idempotent under
// crashes, kills, races, power cuts and redelivery, with real child
// processes and real databases. Run "idemlab help".
package main

import (
	"context"
	"os"

	"idemlab/cmd"
	"idemlab/worker"
)

func main() {
	if code, ok := worker.Dispatch(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); ok {
		os.Exit(code)
	}
	os.Exit(cmd.Execute(context.Background(), os.Args[1:], cmd.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, shippedPatterns))
}
