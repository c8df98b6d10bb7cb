// Command idemlab-nats is the broker process of idemlab's --broker nats: a
// JetStream server embedded from nats-server/v2, run as
// "idemlab-nats worker nats.serve -store DIR [-sync always|DURATION]".
// It is a binary of its own so that nats-server's package init never
// runs in idemlab's workers. Build it beside idemlab:
//
//	go build -o bin/ . ./cmd/idemlab-nats
package main

import (
	"fmt"
	"os"

	"idemlab/worker/natsserver"
)

func main() {
	if len(os.Args) < 3 || os.Args[1] != "worker" || os.Args[2] != natsserver.WorkerName {
		fmt.Fprintf(os.Stderr, "usage: %s worker %s -store DIR [-sync always|DURATION]\n", os.Args[0], natsserver.WorkerName)
		os.Exit(2)
	}
	os.Exit(natsserver.Main(os.Args[3:], os.Stdin, os.Stdout, os.Stderr))
}
