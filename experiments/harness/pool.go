package harness

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"idemlab/experiments/errclass"
	"os"
	"strings"
	"time"
)

// A pool is a fixed set of long-lived workers that serve many barrier
// rounds, so a scenario that races thousands of times pays process
// start-up a handful of times instead. Each member reads one request line
// per round on stdin, answers "ready" and then "done" lines on its answer
// pipe, and between the two waits on the release pipe that every member
// shares: the parent releases a round's members together with one write of
// one byte per member, after each of them has answered ready.
//
// The members inherit the answer pipe as descriptor PoolAnswerFD and the
// release pipe as PoolReleaseFD.
const (
	PoolAnswerFD  = 3
	PoolReleaseFD = 4
)

// PoolTimeout bounds every wait for a member's answer.
const PoolTimeout = 2 * time.Minute

// PoolSpec describes the members of a pool.
type PoolSpec struct {
	Scenario  string
	Condition string
	Worker    string
	Size      int
	// Label and Args give member i's label and arguments.
	Label func(i int) string
	Args  func(i int) []string
}

// Pool is a started pool.
type Pool struct {
	spec    PoolSpec
	members []*member
	release *os.File
	closed  bool
	// broken is the first member failure; no round runs after it.
	broken *MemberError
}

type member struct {
	h       *Handle
	stdin   *os.File
	answers *os.File
	r       *bufio.Reader
}

// Round is what one barrier round saw: the members' answers and the
// parent's clock just before it released them.
type Round struct {
	Ready      []string
	Done       []string
	ReleasedAt time.Time
}

// StartPool starts the members. They live until Close.
func (r *Runner) StartPool(ctx context.Context, s PoolSpec) (*Pool, error) {
	relR, relW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: create release pipe: %w", errclass.ErrHarness, err)
	}
	defer relR.Close()
	p := &Pool{spec: s, release: relW}
	for i := 0; i < s.Size; i++ {
		if err := p.start(ctx, r, i, relR); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

func (p *Pool) start(ctx context.Context, r *Runner, i int, relR *os.File) error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%w: create request pipe: %w", errclass.ErrHarness, err)
	}
	ansR, ansW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return fmt.Errorf("%w: create answer pipe: %w", errclass.ErrHarness, err)
	}
	h, err := r.Start(ctx, Spec{
		Scenario: p.spec.Scenario, Condition: p.spec.Condition, Label: p.spec.Label(i),
		Worker: p.spec.Worker, Args: p.spec.Args(i), Exits: []int{0},
		Stdin: inR, ExtraFiles: []*os.File{ansW, relR},
	})
	// Only the child holds these ends now, so a member that dies closes
	// its answer pipe and the parent reads EOF instead of hanging.
	inR.Close()
	ansW.Close()
	if err != nil {
		inW.Close()
		ansR.Close()
		return err
	}
	p.members = append(p.members, &member{h: h, stdin: inW, answers: ansR, r: bufio.NewReader(ansR)})
	return nil
}

// Size is the number of members.
func (p *Pool) Size() int { return len(p.members) }

// MemberError is a pool member that broke the pool's protocol: it died,
// hung, or closed a pipe before it answered. That is the worker's doing,
// not the harness's: the caller stops racing, closes the pool, which
// records every member, and records what it saw, so the fold judges the
// member from its record.
type MemberError struct {
	// Member is the member's index, or -1 when no single member is to
	// blame (every member closed the release pipe).
	Member int
	Label  string
	// What the parent was doing: "send request", "wait for ready",
	// "release", "wait for done".
	What string
	Err  error
}

func (e *MemberError) Error() string {
	return fmt.Sprintf("pool member %s: %s: %v", e.Label, e.What, e.Err)
}

func (e *MemberError) Unwrap() error { return e.Err }

// Race runs one barrier round: requests[k] goes to member who[k]. It
// waits until every one of them answered ready, releases them with one
// write, and waits for every done answer; Ready[k] and Done[k] are
// member who[k]'s lines. Members must be distinct.
//
// A member that fails (a *MemberError) does not stop the round for the
// others: they are still released and their done answers read, so their
// transcripts end cleanly, and its own lines stay empty. The pool is
// then broken, and every later Race returns the same error.
func (p *Pool) Race(who []int, requests []string) (Round, error) {
	rd := Round{Ready: make([]string, len(who)), Done: make([]string, len(who))}
	if p.broken != nil {
		return rd, p.broken
	}
	seen := map[int]bool{}
	for k, i := range who {
		if i < 0 || i >= len(p.members) || seen[i] {
			return rd, fmt.Errorf("%w: pool: member %d is not a distinct member of %d", errclass.ErrHarness, i, len(p.members))
		}
		seen[i] = true
		if strings.Contains(requests[k], "\n") {
			return rd, fmt.Errorf("%w: pool: a request must be one line", errclass.ErrHarness)
		}
	}
	live := make([]bool, len(who))
	for k, i := range who {
		if _, err := p.members[i].stdin.WriteString(requests[k] + "\n"); err != nil {
			p.fail(i, "send request", err)
			continue
		}
		live[k] = true
	}
	p.collect(who, live, rd.Ready, "wait for ready")
	rd.ReleasedAt = time.Now()
	if _, err := p.release.Write(make([]byte, len(who))); err != nil {
		p.broken = cmp.Or(p.broken, &MemberError{Member: -1, Label: "(every member)", What: "release", Err: err})
		return rd, p.broken
	}
	p.collect(who, live, rd.Done, "wait for done")
	if p.broken != nil {
		return rd, p.broken
	}
	return rd, nil
}

// collect reads one answer from each live member into lines; a member
// that fails is no longer live.
func (p *Pool) collect(who []int, live []bool, lines []string, what string) {
	for k, i := range who {
		if !live[k] {
			continue
		}
		line, err := p.answer(i)
		if err != nil {
			p.fail(i, what, err)
			live[k] = false
			continue
		}
		lines[k] = line
	}
}

func (p *Pool) answer(i int) (string, error) {
	m := p.members[i]
	if err := m.answers.SetReadDeadline(time.Now().Add(PoolTimeout)); err != nil {
		return "", err
	}
	line, err := m.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(line, "\n"), nil
}

// fail marks the pool broken by member i, keeping the first failure.
func (p *Pool) fail(i int, what string, err error) {
	if p.broken == nil {
		p.broken = &MemberError{Member: i, Label: p.spec.Label(i), What: what, Err: err}
	}
}

// Close ends every member's input, waits for all of them and returns
// their records in member order. A member that misbehaved is recorded
// like the others; one still running PoolTimeout after its input ended is
// killed, so a hung member cannot hang the run. The error is only the
// harness's own (it could not wait for or record a member).
func (p *Pool) Close() ([]*Proc, error) {
	if p.closed {
		return nil, errors.New("pool: closed twice")
	}
	p.closed = true
	p.release.Close()
	for _, m := range p.members {
		m.stdin.Close()
		m.h.killAfter(PoolTimeout)
	}
	var procs []*Proc
	var errs []error
	for _, m := range p.members {
		proc, err := m.h.Wait()
		m.answers.Close()
		procs = append(procs, proc)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return procs, errors.Join(errs...)
}
