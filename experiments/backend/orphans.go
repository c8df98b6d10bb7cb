package backend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"idemlab/experiments/owner"
	"idemlab/worker/powerfs"
	"idemlab/worker/store"
)

// A harness killed by SIGKILL runs none of its cleanup: its throwaway
// cluster keeps running (the postmaster leads a process group of its own)
// and keeps its shared memory, socket and folder; on a server named by
// --dsn its idemlab_<run> database stays. So each run records who owns
// what it makes, and the next PostgreSQL run removes what belongs to an
// owner that is gone, and says so.

// Owner identifies the process that made a cluster or a database
// (owner.Owner).
type Owner = owner.Owner

// Self is this process as an owner; ParseOwner reads what Owner.String
// wrote.
var (
	Self       = owner.Self
	ParseOwner = owner.Parse
)

// ownerFile is the owner record in a cluster's folder.
const ownerFile = "idemlab-owner"

// ownerPrefix starts the comment that records a database's owner.
const ownerPrefix = "idemlab owner "

// writeOwner records self as the owner of the cluster folder dir.
func writeOwner(dir string, self Owner) error {
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(self.String()+"\n"), 0o644); err != nil {
		return fmt.Errorf("record the cluster's owner: %w", err)
	}
	return nil
}

// SweepClusters stops and removes every throwaway cluster under tmp (the
// system default when empty) whose owner is gone, and returns one line per
// cluster saying what it removed, or what it could not. A folder with no
// owner record is left alone: it may be a cluster being made this moment,
// or one of a version that recorded no owner, which may still be running.
// Two runs sweeping at once do not both clean one cluster: the sweeper
// holds a lock on the owner record.
func SweepClusters(tmp string, self Owner) []string {
	if tmp == "" {
		tmp = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, "idemlab-pg-*"))
	var lines []string
	for _, dir := range dirs {
		if line := sweepCluster(dir, self); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// sweepCluster cleans one cluster folder if its owner is gone; "" when it
// is not an orphan, or another run is cleaning it.
func sweepCluster(dir string, self Owner) string {
	f, err := os.Open(filepath.Join(dir, ownerFile))
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 512)
	n, _ := f.Read(b)
	owner, err := ParseOwner(string(b[:n]))
	if err != nil || !owner.Gone(self) {
		return ""
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return ""
	}
	if _, err := os.Stat(dir); err != nil {
		return "" // another run removed it before we held the lock
	}
	c := &Cluster{Dir: dir}
	procs := ClusterProcesses(dir)
	// A power cluster's data folder is the backing folder of a mount at
	// Dir/data (power.go); the server's pid file is read there, never
	// through the mount, which is cleared before anything is removed.
	if st, err := os.Stat(filepath.Join(dir, powerBacking)); err == nil && st.IsDir() {
		c.dataDir = filepath.Join(dir, powerBacking)
	}
	shm := c.sharedMemoryID()
	size := folderSize(dir, c.dataDir != "")
	unmounted, err := c.stopOrphan(procs)
	what := fmt.Sprintf("cleaned up the PostgreSQL cluster %s left by a run that is gone (%s): stopped %d server processes, ", dir, owner, len(procs))
	for _, m := range unmounted {
		what += fmt.Sprintf("unmounted the stale mount %s, ", m)
	}
	if shm >= 0 {
		what += fmt.Sprintf("removed shared memory segment %d, ", shm)
	}
	what += fmt.Sprintf("removed the folder (%.1f MB)", float64(size)/1e6)
	if left := c.leftovers(shm); err != nil || left != "" {
		return fmt.Sprintf("could not clean up the PostgreSQL cluster %s left by a run that is gone (%s): %v; left: %s", dir, owner, err, left)
	}
	return what
}

// detachUnder detaches every power-loss mount at or under dir, which a
// dead owner's cluster may leave: its server's own exit unmounts it, but
// a server that died too leaves it answering "transport endpoint is not
// connected", and removing the folder through it would fail.
func detachUnder(dir string) ([]string, error) {
	ms, err := powerfs.Mounts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		if m.Mountpoint != dir && !strings.HasPrefix(m.Mountpoint, dir+string(filepath.Separator)) {
			continue
		}
		if err := powerfs.Detach(m.Mountpoint); err != nil {
			return out, err
		}
		out = append(out, m.Mountpoint)
	}
	return out, nil
}

// stopOrphan stops the server in the cluster's folder, detaches a
// power-loss mount in it (detachUnder), which it returns, and removes the
// folder. The postmaster the pid file names gets SIGQUIT (pg_ctl stop -m
// immediate), after which it releases its shared memory itself; it is
// signalled only when it is among the processes working in the folder, so
// a reused pid is never signalled. Without a postmaster, what is left of
// the server is killed.
func (c *Cluster) stopOrphan(procs []int) ([]string, error) {
	var errs []error
	dsm := dsmOf(procs)
	if c.readPID() == nil && containsPID(procs, c.PID) {
		if err := syscall.Kill(c.PID, syscall.SIGQUIT); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("signal the server (pid %d): %w", c.PID, err))
		}
	} else {
		for _, pid := range procs {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	errs = append(errs, c.waitGone(10*time.Second), c.removeSharedMemory(), removeDSM(dsm))
	unmounted, err := detachUnder(c.Dir)
	errs = append(errs, err)
	if err == nil {
		errs = append(errs, os.RemoveAll(c.Dir))
	}
	c.stopped = true
	return unmounted, errors.Join(errs...)
}

// leftovers says what of a cleaned cluster is still there: processes, the
// shared memory segment shm (when not -1), the folder.
func (c *Cluster) leftovers(shm int) string {
	var left []string
	if p := ClusterProcesses(c.Dir); len(p) > 0 {
		left = append(left, fmt.Sprintf("processes %v", p))
	}
	if shm >= 0 {
		if _, err := unix.SysvShmCtl(shm, unix.IPC_STAT, &unix.SysvShmDesc{}); err == nil {
			left = append(left, fmt.Sprintf("shared memory segment %d", shm))
		}
	}
	if _, err := os.Lstat(c.Dir); err == nil {
		left = append(left, "the folder")
	}
	return strings.Join(left, ", ")
}

func containsPID(pids []int, pid int) bool {
	for _, p := range pids {
		if p == pid {
			return true
		}
	}
	return false
}

// folderSize adds up the sizes of dir's files; with power, it skips the
// mount point Dir/data of a power cluster, which it never reads through.
func folderSize(dir string, power bool) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if power && p == filepath.Join(dir, "data") {
			return filepath.SkipDir
		}
		if err == nil && d.Type().IsRegular() {
			if i, err := d.Info(); err == nil {
				n += i.Size()
			}
		}
		return nil
	})
	return n
}

// commentOwner records self as the owner of database db on a server named
// by --dsn.
func commentOwner(ctx context.Context, m *sql.DB, db string, self Owner) error {
	if _, err := m.ExecContext(ctx, fmt.Sprintf("COMMENT ON DATABASE %s IS %s", db, store.QuoteLiteral(ownerPrefix+self.String()))); err != nil {
		return fmt.Errorf("record the run's database's owner: %w", err)
	}
	return nil
}

// sweepDatabases drops each idemlab_* database on the server m connects to
// whose recorded owner ran on this host and is gone, and returns one line
// per database dropped, or that could not be. A database with no owner
// comment (kept with --keep, or made by a version that recorded none) is
// left alone, as is one whose owner ran on another host.
func sweepDatabases(ctx context.Context, m *sql.DB, self Owner) ([]string, error) {
	rows, err := m.QueryContext(ctx, `SELECT datname, coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database WHERE datname LIKE 'idemlab\_%'`)
	if err != nil {
		return nil, fmt.Errorf("list the server's idemlab databases: %w", err)
	}
	type found struct {
		name  string
		owner Owner
	}
	var orphans []found
	for rows.Next() {
		var name, comment string
		if err := rows.Scan(&name, &comment); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list the server's idemlab databases: %w", err)
		}
		rec, ok := strings.CutPrefix(comment, ownerPrefix)
		if !ok {
			continue
		}
		if o, err := ParseOwner(rec); err == nil && o.Gone(self) {
			orphans = append(orphans, found{name, o})
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("list the server's idemlab databases: %w", err)
	}
	var lines []string
	for _, d := range orphans {
		if _, err := m.ExecContext(ctx, "DROP DATABASE IF EXISTS "+store.QuoteIdent(d.name)+" WITH (FORCE)"); err != nil {
			lines = append(lines, fmt.Sprintf("could not drop the database %s left by a run that is gone (%s): %v", d.name, d.owner, err))
			continue
		}
		lines = append(lines, fmt.Sprintf("dropped the database %s left by a run that is gone (%s)", d.name, d.owner))
	}
	return lines, nil
}
