package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"time"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
)

// ErrNoNATSServer is a run with --broker nats on a machine where no
// idemlab-nats binary is found and none can be built.
var ErrNoNATSServer = errors.New("no " + NATSBinary + " binary")

// FindNATSServer finds the idemlab-nats binary: $IDEMLAB_NATS_SERVER,
// else beside this executable, else on PATH. A binary named but not there
// is an error, not a fall-through.
func FindNATSServer() (string, error) {
	if p := builtNATS.Load(); p != nil {
		return *p, nil
	}
	if p := os.Getenv(EnvNATSServer); p != "" {
		if !isExecutable(p) {
			return "", fmt.Errorf("%w: $%s names %s, which is not an executable file", ErrNoNATSServer, EnvNATSServer, p)
		}
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), NATSBinary); isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath(NATSBinary); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: --broker nats runs it (the JetStream server, kept out of idemlab), and none is in $%s, beside idemlab or on PATH: run `make build`, or `go build -o idemlab-nats ./cmd/idemlab-nats` beside idemlab, or set $%s to one", ErrNoNATSServer, EnvNATSServer, EnvNATSServer)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// EnsureNATSServer is a --broker nats run's preflight: the idemlab-nats
// binary to run and its SHA-256. Where FindNATSServer finds none and the
// run is `go run` from idemlab's source tree (exe a temporary build of the
// go command, workdir inside the module), it builds ./cmd/idemlab-nats
// from that tree with the same go command into the user's cache, under
// the tree's hash, and says so on notice; a second run from the same tree
// finds it built. Otherwise the error is a usage error naming what is
// missing and how to get it.
func EnsureNATSServer(ctx context.Context, exe, workdir string, notice io.Writer) (path, sum string, err error) {
	path, ferr := FindNATSServer()
	if ferr != nil {
		root, ok := results.FindModuleRoot(workdir)
		// Without the go command there is nothing to build with: the
		// machine lacks the binary, as for a built idemlab.
		_, noGo := exec.LookPath("go")
		if !results.TemporaryBuild(exe) || !ok || os.Getenv(EnvNATSServer) != "" || noGo != nil {
			return "", "", fmt.Errorf("%w: %w", errclass.ErrUsage, ferr)
		}
		if path, err = buildFromSource(ctx, root, notice); err != nil {
			return "", "", fmt.Errorf("%w: %w (build it yourself: `make build`)", errclass.ErrHarness, err)
		}
		builtNATS.Store(&path)
	}
	if sum, err = results.HashFile(path); err != nil {
		return "", "", fmt.Errorf("%w: hash %s: %w", errclass.ErrHarness, path, err)
	}
	return path, sum, nil
}

// builtNATS is the idemlab-nats this process built for `go run`
// (EnsureNATSServer), which FindNATSServer then finds first: a scenario's
// trials that look the binary up themselves (pattern's, explore's article
// files) start the one the run's preflight built.
var builtNATS atomic.Pointer[string]

// Preflight is EnsureNATSServer for a run on broker name, with a server
// of the run's own unless url is set: nothing to find for --broker none
// or a user's server.
func Preflight(ctx context.Context, name, url, exe, workdir string, notice io.Writer) (path, sum string, err error) {
	if name != NATS || url != "" {
		return "", "", nil
	}
	return EnsureNATSServer(ctx, exe, workdir, notice)
}

// CacheDir is where `go run` keeps the idemlab-nats it built, one folder
// per source tree: $XDG_CACHE_HOME/idemlab/idemlab-nats (or the
// platform's user cache).
func CacheDir() (string, error) {
	c, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(c, "idemlab", NATSBinary), nil
}

// buildFromSource builds ./cmd/idemlab-nats of the module at root into
// the cache folder of root's source-tree hash, unless it is there: built
// into a temporary name and renamed, so two runs never see half a binary.
func buildFromSource(ctx context.Context, root string, notice io.Writer) (string, error) {
	src, err := results.SourceTreeHash(root)
	if err != nil {
		return "", err
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, src.SHA256[:16])
	bin := filepath.Join(dir, NATSBinary)
	if isExecutable(bin) {
		return bin, nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("%w: and no go command on PATH to build it from %s", ErrNoNATSServer, root)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	fmt.Fprintf(notice, "idemlab: --broker nats: no %s found; building ./cmd/%s from %s into %s (once per source tree)\n", NATSBinary, NATSBinary, root, dir)
	tmp, err := os.CreateTemp(dir, NATSBinary+".building-")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", tmp.Name(), "./cmd/"+NATSBinary)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/%s in %s: %w: %s", NATSBinary, root, err, out)
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", err
	}
	fmt.Fprintf(notice, "idemlab: --broker nats: built %s in %.1f s\n", bin, time.Since(t0).Seconds())
	return bin, nil
}
