package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"idemlab/experiments/procstat"
)

// Cluster is a throwaway PostgreSQL server: a data folder in a temp dir,
// a unix socket in the same dir and no TCP, owned by this run alone.
type Cluster struct {
	// Dir holds the data folder, the socket and the server's log.
	Dir string
	// PID is the postmaster's process id; it leads its own process
	// group, which holds every backend.
	PID int
	// Bin is the folder of the server's binaries.
	Bin string
	// User is the cluster's superuser, which every connection uses.
	User string
	// StartedIn is from nothing to the server accepting connections.
	StartedIn time.Duration
	// FromTemplate says the data folder is a copy of a kept template of
	// initdb's output rather than initdb's own.
	FromTemplate bool
	// stopped says the server at PID has been stopped.
	stopped bool
	// serverOpts are pg_ctl's -o, kept for a restart.
	serverOpts string
	// runAs is the OS user the server runs as, when this process is root.
	runAs string
	// dataDir, when set, is the data folder instead of Dir/data: a power
	// cluster's server restarts on its rebuilt backing folder.
	dataDir string
}

// ClusterUser is the superuser initdb creates; trust authentication on
// the private socket lets any local user connect as it.
const ClusterUser = "idemlab"

// serverUser is the OS user a root process runs the server as: the server
// refuses to run as root, and Debian's package creates this user.
const serverUser = "postgres"

// StartCluster creates and starts a cluster in a new folder under tmp
// (the system default when empty). settings are extra server settings,
// "name=value" each. On any failure, everything it started is stopped and
// the folder removed.
func StartCluster(ctx context.Context, tmp string, settings []string) (c *Cluster, err error) {
	began := time.Now()
	c, uid, gid, self, err := newClusterDir(tmp)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
		}
	}()
	// The owner is recorded before anything is started, so a run that
	// is killed leaves nothing the next run cannot attribute (orphans.go).
	if err := writeOwner(c.Dir, self); err != nil {
		return c, err
	}
	if err := os.Chown(c.Dir, uid, gid); err != nil {
		return c, fmt.Errorf("give the cluster's folder to %s: %w", c.runAs, err)
	}
	if err := c.initData(ctx, c.data(), initArgs, uid, gid); err != nil {
		return c, err
	}
	opts := []string{"-k", c.Dir, "-c", "listen_addresses=", "-c", "unix_socket_permissions=0777"}
	for _, s := range settings {
		opts = append(opts, "-c", s)
	}
	c.serverOpts = shellJoin(opts)
	if err := c.start(ctx); err != nil {
		return c, err
	}
	c.StartedIn = time.Since(began)
	return c, ctx.Err()
}

// initArgs are initdb's options: trust on the private socket, one
// superuser, a fixed encoding and locale, and no fsync of what is thrown
// away at the end.
var initArgs = []string{"--no-sync", "-A", "trust", "-U", ClusterUser, "-E", "UTF8", "--locale=C"}

// initData makes the data folder data with initdb's options args: a copy
// of the template of initdb's output when there is one (template.go),
// else initdb's own output, of which it then keeps a template. A template
// that cannot be kept costs the next start its initdb, nothing more, so
// that error is not the run's.
func (c *Cluster) initData(ctx context.Context, data string, args []string, uid, gid int) error {
	tpl := templateDir(c.Bin, c.runAs, args)
	ok, tplErr := fromTemplate(tpl, data, uid, gid)
	if ok {
		c.FromTemplate = true
		return nil
	}
	// A template that could not be copied is removed half-copied, and
	// initdb makes the folder as if there were none.
	if err := c.run(ctx, "initdb", append(append([]string{}, args...), "-D", data)...); err != nil {
		return errors.Join(err, tplErr)
	}
	_ = saveTemplate(data, tpl)
	return nil
}

// start starts the server on the cluster's data folder and reads its pid.
func (c *Cluster) start(ctx context.Context) error {
	if err := c.run(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", c.data(), "-l", filepath.Join(c.Dir, "server.log"), "-o", c.serverOpts); err != nil {
		c.readPID()
		log, _ := os.ReadFile(filepath.Join(c.Dir, "server.log"))
		return fmt.Errorf("%w; the server's log ends: %s", err, lastLines(string(log), 3))
	}
	c.stopped = false
	return c.readPID()
}

// Crash SIGKILLs the server's whole process group, postmaster and
// backends at once, as a crash of the server ends them, waits until they
// are gone, and starts the server again on the same data folder, whose
// recovery replays the WAL that reached the disk. It returns when the
// recovered server accepts connections.
func (c *Cluster) Crash(ctx context.Context) error {
	pid := c.PID
	if err := c.KillGroup(); err != nil {
		return err
	}
	// The killed postmaster leaves its pid file and its socket's lock
	// file, and the next start refuses them while kill(pid, 0) succeeds,
	// which it does for a zombie its new parent has not reaped yet (the
	// process that adopts orphans need not reap them promptly). Every
	// process of the group is gone, so lock files still naming an
	// unreaped zombie are stale.
	if !reaped(pid, 500*time.Millisecond) {
		for _, f := range []string{filepath.Join(c.data(), "postmaster.pid"), filepath.Join(c.Dir, ".s.PGSQL.5432.lock")} {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove the dead server's lock file: %w", err)
			}
		}
	}
	return c.start(ctx)
}

// reaped waits until no process, zombie or not, has pid.
func reaped(pid int, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *Cluster) data() string {
	if c.dataDir != "" {
		return c.dataDir
	}
	return filepath.Join(c.Dir, "data")
}

// AdminDSN connects to database db over the cluster's socket.
func (c *Cluster) AdminDSN(db string) string {
	return fmt.Sprintf("host=%s user=%s dbname=%s sslmode=disable", c.Dir, c.User, db)
}

// newClusterDir is a cluster not yet made: the server's binaries, the
// user it runs as, the uid and gid its folder must belong to, this run's
// identity as its owner, and a new folder under tmp for it.
func newClusterDir(tmp string) (c *Cluster, uid, gid int, self Owner, err error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, 0, 0, self, err
	}
	c = &Cluster{Bin: bin, User: ClusterUser}
	if os.Geteuid() == 0 {
		c.runAs = serverUser
	}
	if uid, gid, err = c.owner(); err != nil {
		return nil, 0, 0, self, err
	}
	if self, err = Self(); err != nil {
		return nil, 0, 0, self, err
	}
	if c.Dir, err = os.MkdirTemp(tmp, "idemlab-pg-"); err != nil {
		return nil, 0, 0, self, fmt.Errorf("create the cluster's folder: %w", err)
	}
	return c, uid, gid, self, nil
}

// owner is the uid and gid the cluster's folder must belong to.
func (c *Cluster) owner() (int, int, error) {
	if c.runAs == "" {
		return os.Getuid(), os.Getgid(), nil
	}
	u, err := user.Lookup(c.runAs)
	if err != nil {
		return 0, 0, fmt.Errorf("the PostgreSQL server refuses to run as root, and there is no user %q to run it as (the package %s creates it): %w", c.runAs, Package, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid, nil
}

// run runs one of the server's programs as the cluster's OS user, in a
// process group of its own, so a Ctrl-C at the terminal reaches this
// process, which then stops everything in order, and not the program
// half-way.
func (c *Cluster) run(ctx context.Context, prog string, args ...string) error {
	path := filepath.Join(c.Bin, prog)
	argv := append([]string{path}, args...)
	if c.runAs != "" {
		argv = append([]string{"runuser", "-u", c.runAs, "--"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Dir = c.Dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", prog, err, lastLines(out.String(), 3))
	}
	return ctx.Err()
}

// readPID reads the postmaster's pid from its pid file.
func (c *Cluster) readPID() error {
	b, err := os.ReadFile(filepath.Join(c.data(), "postmaster.pid"))
	if err != nil {
		return fmt.Errorf("read the server's pid: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 1 {
		return fmt.Errorf("read the server's pid: %q is not a pid", first)
	}
	c.PID = pid
	return nil
}

// Stop stops the server by its pid and removes the folder. An immediate
// shutdown (SIGQUIT) is enough for a cluster that is thrown away; a server
// process still alive after a while gets SIGKILL. Stop is safe on a
// cluster that never started.
func (c *Cluster) Stop() error {
	if c == nil {
		return nil
	}
	errs := []error{c.stopServer()}
	if c.Dir != "" {
		errs = append(errs, os.RemoveAll(c.Dir))
	}
	return errors.Join(errs...)
}

// stopServer is Stop's shutdown without the folder's removal: an
// immediate shutdown (SIGQUIT) of a running server, which it waits for;
// nothing when the server is not running.
func (c *Cluster) stopServer() error {
	if c.PID <= 0 || c.stopped {
		return nil
	}
	var errs []error
	if err := syscall.Kill(c.PID, syscall.SIGQUIT); err != nil && !errors.Is(err, syscall.ESRCH) {
		errs = append(errs, fmt.Errorf("signal the server (pid %d): %w", c.PID, err))
	}
	errs = append(errs, c.waitGone(10*time.Second), c.removeSharedMemory())
	c.stopped = true
	return errors.Join(errs...)
}

// KillGroup sends SIGKILL to every process of the server at once,
// postmaster and backends, as a crash of the server ends them, and waits
// until they are gone. The folder stays, for a restart.
func (c *Cluster) KillGroup() error {
	if c.PID <= 0 || c.stopped {
		return errors.New("the server is not running")
	}
	pids := ClusterProcesses(c.Dir)
	dsm := dsmOf(pids)
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	err := errors.Join(c.waitGone(10*time.Second), c.removeSharedMemory(), removeDSM(dsm))
	c.stopped = true
	return err
}

// waitGone waits until no process of the server is alive, killing any
// that outlive the wait.
func (c *Cluster) waitGone(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		left := ClusterProcesses(c.Dir)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			if time.Now().After(deadline.Add(5 * time.Second)) {
				return fmt.Errorf("the server's processes %v outlived SIGKILL", left)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// removeSharedMemory removes the System V shared memory segment the
// postmaster's pid file names, once no process is attached: a server
// killed, not shut down, leaves it behind. A segment still in use, or one
// the file does not name, is left alone.
func (c *Cluster) removeSharedMemory() error { return removeSegment(c.sharedMemoryID()) }

// removeSegment removes the System V shared memory segment id (none when
// -1) if no process is attached to it.
func removeSegment(id int) error {
	if id < 0 {
		return nil
	}
	var ds unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err != nil || ds.Nattch != 0 {
		return nil
	}
	if _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); err != nil {
		return fmt.Errorf("remove the server's shared memory segment %d: %w", id, err)
	}
	return nil
}

// sharedMemoryID is the System V shared memory segment the postmaster's
// pid file names (its seventh line: key and id), or -1.
func (c *Cluster) sharedMemoryID() int { return shmIDIn(c.data()) }

// shmIDIn is sharedMemoryID for the data folder data.
func shmIDIn(data string) int {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return -1
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return -1
	}
	f := strings.Fields(lines[6])
	if len(f) != 2 {
		return -1
	}
	id, err := strconv.Atoi(f[1])
	if err != nil || id < 0 {
		return -1
	}
	return id
}

// ClusterProcesses lists the live processes whose working folder is dir
// or inside it: every PostgreSQL server process works in its data folder,
// and a backend the postmaster's death orphaned is found there too. A
// zombie waiting for its parent to reap it has stopped, so it does not
// count.
func ClusterProcesses(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil || dir == "" {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil {
			continue
		}
		cwd = strings.TrimSuffix(cwd, " (deleted)")
		if cwd != dir && !strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			continue
		}
		if st, err := procstat.Read(pid); err == nil && !st.Live() {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// shellJoin quotes pg_ctl's -o string, which it hands to a shell.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
