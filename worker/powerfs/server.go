package powerfs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"idemlab/worker/protocol"
)

// WorkerName is the serving process's name in the worker registry.
const WorkerName = "powerfs.serve"

// FSName is the mount's type suffix: /proc/self/mountinfo shows
// "fuse.idemlab-powerfs", and the source field "idemlab-powerfs:PID",
// PID being the serving process.
const FSName = "idemlab-powerfs"

// Lines the server writes on its stdout, one event a line.
const (
	EventMounted = "mounted"
	// EventCut is "cut AT SYNC PID": the mount froze at a sync cut point.
	EventCut = "cut"
	// EventDone is "done": the cut's rebuild finished and the mount is
	// gone; "unmounted": a clean unmount.
	EventDone      = "done"
	EventUnmounted = "unmounted"
)

// Commands the parent writes on the server's stdin.
const (
	CmdCut     = "cut"
	CmdUnmount = "unmount"
	// CmdArm is "arm N": from now on the mount freezes before its N-th
	// sync, as with CutSync N and no CutAfter; the server answers
	// EventArmed.
	CmdArm = "arm"
)

// EventArmed is the server's answer to CmdArm.
const EventArmed = "armed"

// Config is what a serving process is started with.
type Config struct {
	Backing, Mountpoint, Store string
	Params
	// CutSync, if not 0, freezes the mount at the CutSync-th sync of the
	// mount (file or directory), before it reaches the disk or, with
	// CutAfter, after.
	CutSync  int
	CutAfter bool
}

// Args renders c as the worker's arguments.
func (c Config) Args() []string {
	a := []string{"-backing", c.Backing, "-mnt", c.Mountpoint, "-store", c.Store,
		"-model", c.Model, "-dir-model", c.DirModel, "-seed", fmt.Sprint(c.Seed), "-unit", fmt.Sprint(c.Unit),
		"-cut-sync", fmt.Sprint(c.CutSync)}
	if c.CutAfter {
		a = append(a, "-cut-after")
	}
	return a
}

func parseConfig(args []string, stderr io.Writer) (Config, error) {
	var c Config
	f := flag.NewFlagSet(WorkerName, flag.ContinueOnError)
	f.SetOutput(stderr)
	f.StringVar(&c.Backing, "backing", "", "the backing folder")
	f.StringVar(&c.Mountpoint, "mnt", "", "the mount point")
	f.StringVar(&c.Store, "store", "", "the server's store, on the backing folder's filesystem")
	f.StringVar(&c.Model, "model", ModelDrop, "drop, keep or torn")
	f.StringVar(&c.DirModel, "dir-model", DirPOSIX, "posix or ext4-ordered")
	f.Int64Var(&c.Seed, "seed", 0, "the torn model's seed")
	f.IntVar(&c.Unit, "unit", 0, "the torn model's unit, 512 or 4096")
	f.IntVar(&c.CutSync, "cut-sync", 0, "freeze at this sync of the mount")
	f.BoolVar(&c.CutAfter, "cut-after", false, "freeze after the sync, not before")
	if err := f.Parse(args); err != nil {
		return c, err
	}
	if c.Backing == "" || c.Mountpoint == "" || c.Store == "" {
		return c, errors.New("powerfs.serve: -backing, -mnt and -store are required")
	}
	p, err := c.Params.normalize()
	c.Params = p
	return c, err
}

// server is the serving process's state: the model, the log, and the
// freeze that stops it answering.
type server struct {
	cfg    Config
	mu     sync.Mutex
	st     *state
	log    *os.File
	seq    int
	frozen bool
	// hold is never closed: a request that arrives after the freeze waits
	// on it until the process exits.
	hold    chan struct{}
	rootIno uint64
	// undo is the store's undo file, undoEnd its size.
	undo    *os.File
	undoEnd int64
	events  io.Writer
	evMu    sync.Mutex
}

// Main serves one mount until the parent asks for a cut or an unmount.
func Main(call *protocol.Call) int {
	cfg, err := parseConfig(call.Args, call.Stderr)
	if err != nil {
		return call.Usage(err)
	}
	if err := serve(cfg, call.Stdin, call.Stdout); err != nil {
		fmt.Fprintln(call.Stderr, "powerfs.serve:", err)
		return protocol.ExitUsage
	}
	return 0
}

func (s *server) event(line string) {
	s.evMu.Lock()
	defer s.evMu.Unlock()
	fmt.Fprintln(s.events, line)
}

func serve(cfg Config, stdin io.Reader, stdout io.Writer) error {
	s := &server{cfg: cfg, st: newState(cfg.DirModel), hold: make(chan struct{}), events: stdout}
	var bst, sst syscall.Stat_t
	if err := syscall.Stat(cfg.Backing, &bst); err != nil {
		return err
	}
	for _, d := range []string{cfg.Store, filepath.Join(cfg.Store, stashDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := syscall.Stat(cfg.Store, &sst); err != nil {
		return err
	}
	if rel, err := filepath.Rel(cfg.Backing, cfg.Store); err == nil && !strings.HasPrefix(rel, "..") {
		return fmt.Errorf("the store %s is inside the backing folder", cfg.Store)
	}
	if bst.Dev != sst.Dev {
		return fmt.Errorf("the store %s is not on the backing folder's filesystem", cfg.Store)
	}
	s.rootIno = bst.Ino
	lf, err := os.OpenFile(filepath.Join(cfg.Store, LogName), os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	s.log = lf
	if s.undo, err = os.OpenFile(filepath.Join(cfg.Store, undoName), os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		return err
	}
	if err := s.baseline(); err != nil {
		return err
	}
	root := &gofs.LoopbackRoot{Path: cfg.Backing, Dev: uint64(bst.Dev)}
	rootNode := &node{LoopbackNode: &gofs.LoopbackNode{RootData: root}, srv: s}
	root.RootNode = rootNode
	// Every change reaches the backing folder through this mount, so the
	// kernel's caches of names and attributes stay true for its life.
	cache := time.Hour
	// The server's loop ends with the connection, when this process
	// unmounts and exits; nothing waits for it.
	_, err = gofs.Mount(cfg.Mountpoint, rootNode, &gofs.Options{EntryTimeout: &cache, AttrTimeout: &cache, NegativeTimeout: &cache, MountOptions: fuse.MountOptions{
		DirectMount: true, DirectMountStrict: os.Geteuid() == 0, AllowOther: true,
		Name: FSName, FsName: fmt.Sprintf("%s:%d", FSName, os.Getpid()),
	}})
	if err != nil {
		return err
	}
	if afterMount != nil {
		afterMount(s)
	}
	s.event(EventMounted)
	in := bufio.NewScanner(stdin)
	cmd := CmdUnmount
	for in.Scan() {
		c := strings.TrimSpace(in.Text())
		if n, ok := strings.CutPrefix(c, CmdArm+" "); ok {
			s.arm(n)
			continue
		}
		if c == CmdCut || c == CmdUnmount {
			cmd = c
			break
		}
	}
	s.mu.Lock()
	if cmd == CmdCut && !s.frozen {
		s.freezeLocked("command", 0, 0)
	}
	s.frozen = true
	if err := unix.Unmount(cfg.Mountpoint, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount %s: %w", cfg.Mountpoint, err)
	}
	if cmd == CmdUnmount {
		s.event(EventUnmounted)
		return nil
	}
	if _, err := recoverCut(cfg.Backing, cfg.Store, cfg.Params); err != nil {
		return err
	}
	s.event(EventDone)
	return nil
}

// arm sets the sync cut to the sync n names, before it, and says so.
func (s *server) arm(n string) {
	k, err := strconv.Atoi(n)
	if err != nil || k < 1 {
		return
	}
	s.mu.Lock()
	s.cfg.CutSync, s.cfg.CutAfter = k, false
	s.mu.Unlock()
	s.event(fmt.Sprintf("%s %d", EventArmed, k))
}

// recoverCut is the server's cut; a test replaces it with a broken one.
var recoverCut = Recover

// afterMount, if set, runs once the mount is up, before the server says
// so; only a test's broken server sets it.
var afterMount func(*server)

// baseline logs every entry of the backing folder as durable.
func (s *server) baseline() error {
	return filepath.WalkDir(s.cfg.Backing, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st, pst syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		op := Op{Kind: OpBase, Ino: st.Ino, Type: typeOf(st.Mode), Mode: st.Mode & 0o7777, Size: st.Size}
		if p != s.cfg.Backing {
			if err := syscall.Lstat(filepath.Dir(p), &pst); err != nil {
				return err
			}
			op.Dir, op.Name = pst.Ino, filepath.Base(p)
		}
		return s.logOp(op)
	})
}

func typeOf(mode uint32) string {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return TypeDir
	case syscall.S_IFLNK:
		return TypeSymlink
	}
	return TypeFile
}

// logOp writes op as one line, then applies it to the model. The caller
// holds mu.
func (s *server) logOp(op Op) error {
	s.seq++
	op.Seq = s.seq
	b, err := json.Marshal(op)
	if err != nil {
		return err
	}
	if _, err := s.log.Write(append(b, '\n')); err != nil {
		return err
	}
	return s.st.apply(op)
}

// enter takes the lock for a change, or never returns once frozen.
func (s *server) enter() {
	s.mu.Lock()
	if s.frozen {
		s.mu.Unlock()
		<-s.hold
	}
}

// freezeLocked logs the cut and stops every later change; the caller
// holds mu.
func (s *server) freezeLocked(at string, sync, pid int) {
	_ = s.logOp(Op{Kind: OpCut, At: at, Sync: sync, Pid: pid})
	s.frozen = true
	s.event(fmt.Sprintf("%s %s %d %d", EventCut, at, sync, pid))
}

// stall answers nothing: the caller holds mu and the mount is frozen.
func (s *server) stall() {
	s.mu.Unlock()
	<-s.hold
}

// save appends the pre-images of spans, read through the open file f (or
// path), to the undo file, and returns where they start.
func (s *server) save(path string, f gofs.FileHandle, spans []Span) (int64, error) {
	if len(spans) == 0 {
		return 0, nil
	}
	read := func(b []byte, off int64) error {
		_, err := unix.Pread(0, b, off)
		return err
	}
	fd, ok := fdOf(f)
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); ok && err == nil && fl&unix.O_ACCMODE != unix.O_WRONLY {
		read = func(b []byte, off int64) error {
			for len(b) > 0 {
				n, err := unix.Pread(fd, b, off)
				if err != nil {
					return err
				}
				if n == 0 {
					return io.ErrUnexpectedEOF
				}
				b, off = b[n:], off+int64(n)
			}
			return nil
		}
	} else {
		src := path
		if ok {
			src = fmt.Sprintf("/proc/self/fd/%d", fd)
		}
		r, err := os.Open(src)
		if err != nil {
			return 0, err
		}
		defer r.Close()
		read = func(b []byte, off int64) error {
			_, err := r.ReadAt(b, off)
			return err
		}
	}
	for _, sp := range spans {
		b := make([]byte, sp[1]-sp[0])
		if err := read(b, sp[0]); err != nil {
			return 0, err
		}
		if _, err := s.undo.Write(b); err != nil {
			return 0, err
		}
	}
	at := s.undoEnd
	for _, sp := range spans {
		s.undoEnd += sp[1] - sp[0]
	}
	return at, nil
}

// stash links the non-directory a name change is about to remove into
// the store, so a cut can bring it back.
func (s *server) stash(path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return 0, err
	}
	if typeOf(st.Mode) != TypeDir {
		if err := os.Link(path, stashPath(s.cfg.Store, st.Ino)); err != nil && !errors.Is(err, fs.ErrExist) {
			return 0, err
		}
	}
	return st.Ino, nil
}

func pidOf(ctx context.Context) int {
	if c, ok := ctx.(*fuse.Context); ok {
		return int(c.Caller.Pid)
	}
	return 0
}

func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return gofs.ToErrno(err)
}
