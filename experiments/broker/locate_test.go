package broker_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"idemlab/experiments/broker"
	"idemlab/experiments/broker/brokertest"
	"idemlab/experiments/results"
)

// buildIdemlab builds idemlab into dir/sub and returns its path.
func buildIdemlab(t *testing.T, dir, sub string) string {
	t.Helper()
	exe := filepath.Join(dir, sub, "idemlab")
	if err := brokertest.Build(exe, "."); err != nil {
		t.Fatal(err)
	}
	return exe
}

// brokerRun runs exe's experiment with --broker nats from folder wd,
// with env, into out; it returns the exit code and stderr.
func brokerRun(t *testing.T, exe, wd, out string, env []string, scenario ...string) (int, string) {
	t.Helper()
	root, err := brokertest.Root()
	if err != nil {
		t.Fatal(err)
	}
	if scenario == nil {
		scenario = []string{"--scenario", "redelivery"}
	}
	args := append([]string{"experiment", "--quiet"}, scenario...)
	cmd := exec.Command(exe, append(args, "--broker", broker.NATS,
		"--input", filepath.Join(root, "input.json"), "--out", out)...)
	cmd.Dir, cmd.Env = wd, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), stderr.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// cleanEnv is the environment with no idemlab-nats to find: no
// $IDEMLAB_NATS_SERVER, a PATH of the go command's folder alone, and a
// cache folder of the test's own.
func cleanEnv(t *testing.T, cache string) []string {
	t.Helper()
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	gocache, err := exec.Command(goTool, "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	env := withoutVar(withoutVar(withoutVar(os.Environ(), broker.EnvNATSServer), "PATH"), "XDG_CACHE_HOME")
	// The go command keeps its own build cache, so the build reuses it.
	return append(withoutVar(env, "GOCACHE"), "PATH="+filepath.Dir(goTool), "XDG_CACHE_HOME="+cache, "TMPDIR="+cache,
		"GOCACHE="+strings.TrimSpace(string(gocache)))
}

// TestMissingServerRefusedUpFront: a built idemlab with no idemlab-nats
// beside it, on PATH or in $IDEMLAB_NATS_SERVER refuses --broker nats when
// the run is planned: exit 2, one line that says how to get the binary,
// no results folder, no broker started. A $IDEMLAB_NATS_SERVER that names
// no file is refused the same way.
func TestMissingServerRefusedUpFront(t *testing.T) {
	if testing.Short() {
		t.Skip("builds idemlab and runs it")
	}
	tmp := t.TempDir()
	exe := buildIdemlab(t, tmp, "bin")
	env := cleanEnv(t, filepath.Join(tmp, "cache"))
	root, err := brokertest.Root()
	if err != nil {
		t.Fatal(err)
	}
	nowhere := []string{"make build", "go build -o idemlab-nats ./cmd/idemlab-nats", "$" + broker.EnvNATSServer}
	for _, c := range []struct {
		name     string
		env      []string
		scenario []string
		want     []string
	}{
		{"nowhere", env, nil, nowhere},
		{"named but absent", append(env, broker.EnvNATSServer+"="+filepath.Join(tmp, "none")), nil, []string{"$" + broker.EnvNATSServer + " names " + filepath.Join(tmp, "none")}},
		// pattern's and explore's article files start their brokers
		// trial by trial; the run refuses them as early.
		{"pattern", env, []string{"--scenario", "pattern", "--pattern-file", filepath.Join(root, "testdata", "patterns", "single-transaction.json")}, nowhere},
		{"explore", env, []string{"--scenario", "explore"}, nowhere},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(tmp, "out-"+strings.ReplaceAll(c.name, " ", "-"))
			code, stderr := brokerRun(t, exe, tmp, out, c.env, c.scenario...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (usage); stderr:\n%s", code, stderr)
			}
			if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 {
				t.Errorf("stderr has %d lines, want 1:\n%s", len(lines), stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Lstat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("--out %s was made (%v)", out, err)
			}
			if left := stores(t, tmp); len(left) > 0 {
				t.Errorf("a broker was started: stores %v", left)
			}
		})
	}
}

// TestGoRunBuildsServer: idemlab run as `go run` builds it (a binary in a
// go-build folder, run from the module's source tree) builds idemlab-nats
// from that tree into the user's cache, says so, runs, and records the
// binary's hash with each broker; a second run finds it built.
func TestGoRunBuildsServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds idemlab and idemlab-nats and runs them")
	}
	tmp := t.TempDir()
	exe := buildIdemlab(t, tmp, "go-build123/b001/exe")
	root, err := brokertest.Root()
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(tmp, "cache")
	env := cleanEnv(t, cache)
	for run := 1; run <= 2; run++ {
		// The cache folder is the source tree's; a tree edited between
		// the runs is built again, so the second run must find the
		// first's binary only where the tree stayed the same.
		src, err := results.SourceTreeHash(root)
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(cache, "idemlab", broker.NATSBinary, src.SHA256[:16], broker.NATSBinary)
		_, there := os.Stat(bin)
		out := filepath.Join(tmp, "out"+string(rune('0'+run)))
		code, stderr := brokerRun(t, exe, root, out, env)
		if code != 0 {
			t.Fatalf("run %d: exit %d; stderr:\n%s", run, code, stderr)
		}
		if built, want := strings.Contains(stderr, "building ./cmd/idemlab-nats"), there != nil; built != want {
			t.Errorf("run %d said it built: %v, want %v; stderr:\n%s", run, built, want, stderr)
		}
		if run == 2 && there != nil {
			t.Log("the source tree changed between the runs: the second built again")
		}
		sum, err := results.HashFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		servers := recordedServers(t, out)
		if len(servers) == 0 {
			t.Fatalf("run %d recorded no broker server", run)
		}
		for _, s := range servers {
			if s.Binary != bin || s.BinarySHA256 != sum {
				t.Errorf("run %d recorded the broker %s (%s), want %s (%s)", run, s.Binary, s.BinarySHA256, bin, sum)
			}
		}
	}
}

// recordedServers are the broker servers a folder's observations record.
func recordedServers(t *testing.T, out string) []broker.Server {
	b, err := os.ReadFile(filepath.Join(out, results.ObservationsFile))
	if err != nil {
		t.Fatal(err)
	}
	var servers []broker.Server
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var o struct {
			Broker *struct {
				Server *broker.Server `json:"server"`
			} `json:"broker"`
		}
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatal(err)
		}
		if o.Broker != nil && o.Broker.Server != nil {
			servers = append(servers, *o.Broker.Server)
		}
	}
	return servers
}
