// Package natsserver is the broker process of --broker nats: a JetStream
// server embedded from nats-server/v2, serving one trial's store folder
// until its parent kills it or closes its standard input.
//
// It is linked only into the idemlab-nats binary (cmd/idemlab-nats), never
// into idemlab: nats-server's packages run their init in every process
// that links them (one reads /proc and arms a timer that fires every
// second for the life of the process), and idemlab starts thousands of
// workers. TestNotLinkedIntoIdemlab holds that line.
package natsserver

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"idemlab/worker/natswire"
)

// WorkerName is the argv name the broker process runs under:
// "idemlab-nats worker nats.serve ...".
const WorkerName = "nats.serve"

// SyncAlways is the -sync value for a file store that syncs every write.
const SyncAlways = natswire.SyncAlways

// Args are the broker process's arguments.
type Args struct {
	// Store is the JetStream store folder, the trial's own.
	Store string
	// Sync is the file store's sync_interval: a duration, or "always";
	// empty keeps the server's default.
	Sync string
}

// Argv renders the arguments after the worker name.
func (a Args) Argv() []string {
	argv := []string{"-store", a.Store}
	if a.Sync != "" {
		argv = append(argv, "-sync", a.Sync)
	}
	return argv
}

// DefaultSyncInterval is the file store's sync interval when none is set;
// nats-server documents two minutes.
const DefaultSyncInterval = natswire.DefaultSyncInterval

// Main runs the broker: argv is the arguments after the worker name. It
// returns the exit code.
func Main(argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	t0 := time.Now()
	var a Args
	fs := flag.NewFlagSet(WorkerName, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&a.Store, "store", "", "JetStream store folder")
	fs.StringVar(&a.Sync, "sync", "", `sync_interval: a duration or "always"; empty keeps the default`)
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	if a.Store == "" {
		fmt.Fprintln(stderr, "nats.serve: -store is required")
		return 2
	}
	opts := &server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: a.Store,
		NoSigs: true, NoLog: true, ServerName: "idemlab",
	}
	switch a.Sync {
	case "":
	case SyncAlways:
		opts.SyncAlways = true
	default:
		d, err := time.ParseDuration(a.Sync)
		if err != nil || d <= 0 {
			fmt.Fprintf(stderr, "nats.serve: -sync %q is neither a positive duration nor %q\n", a.Sync, SyncAlways)
			return 2
		}
		opts.SyncInterval = d
	}
	s, err := server.NewServer(opts)
	if err != nil {
		fmt.Fprintf(stderr, "nats.serve: %v\n", err)
		return 1
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		fmt.Fprintln(stderr, "nats.serve: not ready for connections after 10s")
		s.Shutdown()
		return 1
	}
	r := natswire.Ready{URL: s.ClientURL(), PID: os.Getpid(), Version: server.VERSION, Store: a.Store, SyncInterval: natswire.SyncLabel(a.Sync),
		ReadyMS: float64(time.Since(t0).Microseconds()) / 1000}
	line, _ := json.Marshal(r)
	if _, err := fmt.Fprintf(stdout, "%s\n", line); err != nil {
		s.Shutdown()
		return 1
	}
	// The parent keeps the pipe open for the trial; EOF means it is gone
	// or done, and a broker must not outlive its trial.
	_, err = io.Copy(io.Discard, stdin)
	s.Shutdown()
	s.WaitForShutdown()
	if err != nil && !errors.Is(err, os.ErrClosed) {
		return 1
	}
	return 0
}
