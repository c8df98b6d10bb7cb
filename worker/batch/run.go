package batch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"idemlab/worker/protocol"
	"idemlab/worker/wire"
)

// Crash points. Each is suffixed with ":" and the item id, so a sweep can
// discover one point per item from the report of a single run.
const (
	// PointBeforeSend is after IN_FLIGHT is committed and before the send
	// leaves the process: a crash here leaves IN_FLIGHT with nothing sent.
	PointBeforeSend = "before-send"
	// PointAfterSendAccepted is after the receiver accepted the send and
	// replied, and before SUCCEEDED is written: a crash here leaves
	// IN_FLIGHT for a send that was delivered.
	PointAfterSendAccepted = "after-send-accepted"
)

// ItemPoint names a crash point for one item, e.g.
// "after-send-accepted:item-041".
func ItemPoint(point, item string) string { return point + ":" + item }

// Run statuses, as the article's program reports them.
const (
	StatusCompleted   = "completed"
	StatusNeedsReview = "needs_review"
	// StatusFailed is this harness's status for a run stopped by a step
	// error; the article's program raises instead of returning.
	StatusFailed = "failed"
)

// Reasons a run holds an item.
const (
	HeldUnknown      = "unknown"
	HeldInputChanged = "input_changed"
)

// Sender performs the side-effect step and returns the receiver's receipt.
type Sender interface {
	Send(ctx context.Context, req wire.SendRequest) (receipt string, err error)
}

// Verifier asks the receiver whether it holds a receipt for exactly this
// job, item and step; found is false when it does not.
type Verifier interface {
	Lookup(ctx context.Context, k wire.Key) (receipt string, found bool, err error)
}

// LocalStep runs a step without side effects.
type LocalStep func(ctx context.Context, step string, it Item) error

// Config is one run of the batch.
type Config struct {
	Job string
	// Journal is the step journal; nil runs the article's baseline, which
	// keeps no record and redoes every step.
	Journal *Journal
	Sender  Sender
	// Verifier is consulted for a side-effect step left FAILED or
	// IN_FLIGHT; nil means no verification, as in the article's run 2.
	Verifier Verifier
	// Local runs validate and transform; nil means they do nothing.
	Local LocalStep
	// IdempotencyKey attaches "job:item:step" to every send, the safety net
	// the article mentions for receivers that de-duplicate by key.
	IdempotencyKey bool
	// Points receives the crash points; nil means none.
	Points *protocol.Points
}

// Outcome is what one run did, in the article's names.
type Outcome struct {
	Status        string         `json:"status"`
	ExecutedSteps int            `json:"executed_steps"`
	SkippedSteps  int            `json:"skipped_steps"`
	Held          []string       `json:"held"`
	Executed      map[string]int `json:"executed_by_step"`
	// Failed is "item:step" of the step whose error stopped the run.
	Failed    string `json:"failed,omitempty"`
	ErrorType string `json:"error_type,omitempty"`
}

// StepError is a step's error that stopped the run after its row was
// marked FAILED.
type StepError struct {
	Key  wire.Key
	Type string
	Err  error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("step %s failed (%s): %v", e.Key, e.Type, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// ErrorType returns the name recorded for err in error_type: the name an
// error type gives itself through an ErrorType method, else its Go type.
// The message is never recorded, since it may hold a token or an address.
func ErrorType(err error) string {
	var named interface{ ErrorType() string }
	if errors.As(err, &named) {
		return named.ErrorType()
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", err), "*")
}

// ErrBadJob is returned for an empty job id or an empty item id.
var ErrBadJob = errors.New("job id and item ids must not be empty")

// Run runs items once under the resume rules of the article:
//
//   - a row whose digest differs holds the item as item:step:input_changed;
//   - a SUCCEEDED row is skipped;
//   - a local step left FAILED or IN_FLIGHT runs again;
//   - a side-effect step left FAILED or IN_FLIGHT is verified with the
//     receiver by job, item and step; a receipt marks it SUCCEEDED, and
//     anything else holds the item as item:step:unknown;
//   - otherwise the step is marked IN_FLIGHT, run, and marked SUCCEEDED,
//     or FAILED with the error's type, which stops the run.
//
// A held item stops only its own remaining steps; the run goes on with the
// next item, since items do not depend on each other. A step error is
// returned as *StepError together with the outcome so far.
func Run(ctx context.Context, cfg Config, items []Item) (Outcome, error) {
	out := Outcome{Status: StatusCompleted, Held: []string{}, Executed: map[string]int{}}
	if strings.TrimSpace(cfg.Job) == "" {
		return out, ErrBadJob
	}
	var rows [len(Steps)]ItemState
	for _, it := range items {
		if strings.TrimSpace(it.ID) == "" {
			return out, ErrBadJob
		}
		digest := Digest(it)
		if cfg.Journal != nil {
			var err error
			if rows, err = cfg.Journal.ItemStates(ctx, cfg.Job, it.ID, digest); err != nil {
				return out, err
			}
		}
	steps:
		for i, step := range Steps {
			k := wire.Key{Job: cfg.Job, Item: it.ID, Step: step}
			if r := rows[i]; cfg.Journal != nil && r.Status != "" {
				if !r.SameDigest {
					out.Held = append(out.Held, it.ID+":"+step+":"+HeldInputChanged)
					break steps
				}
				if r.Status == Succeeded {
					out.SkippedSteps++
					continue
				}
				if IsSideEffect(step) {
					receipt, found := verify(ctx, cfg.Verifier, k)
					if found {
						if err := cfg.Journal.Mark(ctx, k, Succeeded, digest, receipt, ""); err != nil {
							return out, err
						}
						out.SkippedSteps++
						continue
					}
					out.Held = append(out.Held, it.ID+":"+step+":"+HeldUnknown)
					break steps
				}
			}
			if err := runStep(ctx, cfg, k, it, digest, &out); err != nil {
				return finish(out), err
			}
		}
	}
	return finish(out), nil
}

func finish(out Outcome) Outcome {
	switch {
	case out.Failed != "":
		out.Status = StatusFailed
	case len(out.Held) > 0:
		out.Status = StatusNeedsReview
	}
	return out
}

// verify treats a failed lookup like a missing receipt: the article holds
// the item whenever the send cannot be confirmed.
func verify(ctx context.Context, v Verifier, k wire.Key) (string, bool) {
	if v == nil {
		return "", false
	}
	receipt, found, err := v.Lookup(ctx, k)
	if err != nil || !found || receipt == "" {
		return "", false
	}
	return receipt, true
}

func runStep(ctx context.Context, cfg Config, k wire.Key, it Item, digest string, out *Outcome) error {
	j := cfg.Journal
	if j != nil {
		// IN_FLIGHT is committed before the step, so a stop at any later
		// moment leaves evidence that the step may have run.
		if err := j.Mark(ctx, k, InFlight, digest, "", ""); err != nil {
			return err
		}
	}
	out.ExecutedSteps++
	out.Executed[k.Step]++
	var receipt string
	var err error
	if IsSideEffect(k.Step) {
		req := wire.SendRequest{JobID: k.Job, ItemID: k.Item, Step: k.Step, Digest: digest}
		if cfg.IdempotencyKey {
			req.IdempotencyKey = k.String()
		}
		hit(cfg.Points, PointBeforeSend, k.Item)
		receipt, err = cfg.Sender.Send(ctx, req)
		if err == nil {
			hit(cfg.Points, PointAfterSendAccepted, k.Item)
		}
	} else if cfg.Local != nil {
		err = cfg.Local(ctx, k.Step, it)
	}
	if err != nil {
		se := &StepError{Key: k, Type: ErrorType(err), Err: err}
		out.Failed, out.ErrorType = k.Item+":"+k.Step, se.Type
		if j != nil {
			if merr := j.Mark(ctx, k, Failed, digest, "", se.Type); merr != nil {
				// A journal that cannot record the failure is a worker
				// error, not a step error: %v drops the StepError.
				return fmt.Errorf("after %v: %w", se, merr)
			}
		}
		return se
	}
	if j != nil {
		return j.Mark(ctx, k, Succeeded, digest, receipt, "")
	}
	return nil
}

func hit(p *protocol.Points, point, item string) {
	if p != nil {
		p.Hit(ItemPoint(point, item))
	}
}
