package worker_test

// These benchmarks price a worker's start-up against the least a Go child
// can cost, so a new dependency's package init shows up as a number rather
// than as a slower experiment nobody can explain. Each benchmark builds its
// program with "go build", then times b.N real starts and reports the
// median, which a shared 2-core machine disturbs less than the mean.
//
//	go test -run '^$' -bench 'Start|Delivery' -benchtime 100x ./worker/

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"idemlab/worker/protocol"
)

// medians keeps each benchmark's median start, so later benchmarks in the
// same run can report how many times slower they are than the floors.
var medians sync.Map

// build compiles the package at pkg (relative to the module root) into a
// temporary directory and returns the executable.
func build(b *testing.B, pkg string) string {
	b.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		b.Skipf("go toolchain not available: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	exe := filepath.Join(b.TempDir(), filepath.Base(pkg)+".exe")
	cmd := exec.Command("go", "build", "-o", exe, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return exe
}

// run starts exe once and checks its exit code and, if want is not empty,
// that its stdout contains want.
func run(exe string, args []string, wantCode int, want string) error {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		return err
	}
	if code != wantCode {
		return fmt.Errorf("%s %v exited %d, want %d; stderr: %s", filepath.Base(exe), args, code, wantCode, stderr.Bytes())
	}
	if want != "" && !strings.Contains(stdout.String(), want) {
		return fmt.Errorf("%s %v printed %q, want it to contain %q", filepath.Base(exe), args, stdout.Bytes(), want)
	}
	return nil
}

// timeStarts runs start b.N times, timing each call, and reports the median
// in ms, plus its ratio to every baseline measured earlier in this run.
func timeStarts(b *testing.B, start func(i int) error, baselines ...string) {
	var took []time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if err := start(i); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(t0))
		i++
	}
	slices.Sort(took)
	med := took[len(took)/2]
	b.ReportMetric(float64(med.Microseconds())/1000, "median-ms")
	medians.Store(b.Name(), med)
	for _, base := range baselines {
		if v, ok := medians.Load(base); ok {
			b.ReportMetric(float64(med)/float64(v.(time.Duration)), "x-"+strings.TrimPrefix(base, "Benchmark"))
		}
	}
}

// BenchmarkStartEmpty is the floor: a Go program that does nothing.
func BenchmarkStartEmpty(b *testing.B) {
	exe := build(b, "./testdata/minimal/empty")
	timeStarts(b, func(int) error { return run(exe, nil, 0, "") })
}

// BenchmarkStartSQLiteOnly adds cgo and the SQLite driver's init.
func BenchmarkStartSQLiteOnly(b *testing.B) {
	exe := build(b, "./testdata/minimal/sqliteonly")
	timeStarts(b, func(int) error { return run(exe, nil, 2, "") }, "BenchmarkStartEmpty")
}

// BenchmarkStartWorkerNope is the idemlab binary asked for a worker that
// does not exist: every linked package's init, then a usage error.
func BenchmarkStartWorkerNope(b *testing.B) {
	exe := build(b, ".")
	timeStarts(b, func(int) error { return run(exe, []string{"worker", "nope"}, 2, "") },
		"BenchmarkStartEmpty", "BenchmarkStartSQLiteOnly")
}

// BenchmarkDeliveryMinimal is one single-transaction delivery by a program
// that links nothing but the driver. Every iteration gets a fresh file, as
// in BenchmarkDeliveryWorker, so both create the schema.
func BenchmarkDeliveryMinimal(b *testing.B) {
	exe := build(b, "./testdata/minimal/sqlitetx")
	dir := b.TempDir()
	timeStarts(b, func(i int) error {
		db := filepath.Join(dir, fmt.Sprintf("d%d.db", i))
		return run(exe, []string{"-db", db, "-event-id", "e", "-job-key", "k"}, 0, `"job_inserted":true`)
	}, "BenchmarkStartSQLiteOnly")
}

// BenchmarkDeliveryWorker is the same delivery by the real worker, which
// also reads its pragmas back and writes the protocol report.
func BenchmarkDeliveryWorker(b *testing.B) {
	exe := build(b, ".")
	dir := b.TempDir()
	if os.Getenv(protocol.EnvCrashAt) != "" {
		b.Skip("IDEMLAB_CRASH_AT is set; the worker would crash on purpose")
	}
	timeStarts(b, func(i int) error {
		db := filepath.Join(dir, fmt.Sprintf("d%d.db", i))
		return run(exe, []string{"worker", "redelivery.deliver", "-db", db,
			"-pattern", "single-transaction", "-event-id", "e", "-job-key", "k"}, 0, `"job_inserted":true`)
	}, "BenchmarkStartWorkerNope", "BenchmarkDeliveryMinimal")
}

// BenchmarkStartInterleaved runs the empty program, the driver-only program
// and "idemlab worker nope" in turn within each iteration, rotating the
// order, so load from other processes on a shared machine falls on all
// three alike. Its ratios are the ones to trust when the separate
// benchmarks above disagree from run to run.
func BenchmarkStartInterleaved(b *testing.B) {
	progs := []struct {
		name string
		exe  string
		args []string
		code int
	}{
		{"empty", build(b, "./testdata/minimal/empty"), nil, 0},
		{"sqliteonly", build(b, "./testdata/minimal/sqliteonly"), nil, 2},
		{"worker", build(b, "."), []string{"worker", "nope"}, 2},
	}
	took := make([][]time.Duration, len(progs))
	r := 0
	for b.Loop() {
		for k := range progs {
			i := (k + r) % len(progs)
			t0 := time.Now()
			if err := run(progs[i].exe, progs[i].args, progs[i].code, ""); err != nil {
				b.Fatal(err)
			}
			took[i] = append(took[i], time.Since(t0))
		}
		r++
	}
	med := make([]float64, len(progs))
	for i, p := range progs {
		slices.Sort(took[i])
		med[i] = float64(took[i][len(took[i])/2].Microseconds()) / 1000
		b.ReportMetric(med[i], p.name+"-ms")
	}
	b.ReportMetric(med[2]/med[1], "worker-x-sqliteonly")
}

// BenchmarkDeliveryInterleaved alternates the minimal one-transaction
// program and the real worker delivering the same transaction, each on a
// fresh file, so their ratio survives load from other processes.
func BenchmarkDeliveryInterleaved(b *testing.B) {
	if os.Getenv(protocol.EnvCrashAt) != "" {
		b.Skip("IDEMLAB_CRASH_AT is set; the worker would crash on purpose")
	}
	minimal, worker := build(b, "./testdata/minimal/sqlitetx"), build(b, ".")
	dir := b.TempDir()
	progs := []func(i int) error{
		func(i int) error {
			return run(minimal, []string{"-db", filepath.Join(dir, fmt.Sprintf("m%d.db", i)), "-event-id", "e", "-job-key", "k"}, 0, `"job_inserted":true`)
		},
		func(i int) error {
			return run(worker, []string{"worker", "redelivery.deliver", "-db", filepath.Join(dir, fmt.Sprintf("w%d.db", i)),
				"-pattern", "single-transaction", "-event-id", "e", "-job-key", "k"}, 0, `"job_inserted":true`)
		},
	}
	took := make([][]time.Duration, len(progs))
	r := 0
	for b.Loop() {
		for k := range progs {
			i := (k + r) % len(progs)
			t0 := time.Now()
			if err := progs[i](r); err != nil {
				b.Fatal(err)
			}
			took[i] = append(took[i], time.Since(t0))
		}
		r++
	}
	med := make([]float64, len(progs))
	for i, name := range []string{"minimal", "worker"} {
		slices.Sort(took[i])
		med[i] = float64(took[i][len(took[i])/2].Microseconds()) / 1000
		b.ReportMetric(med[i], name+"-ms")
	}
	b.ReportMetric(med[1]/med[0], "worker-x-minimal")
}
