package redelivery

import (
	"context"
	"fmt"
	"time"

	wc "idemlab/worker/claim"
	"idemlab/worker/store"
)

// ClaimTry is what the ttl-claim consumer's claim did: whether it won, on
// the consumer's clock (Unix ms), under which TTL.
type ClaimTry struct {
	Won   bool  `json:"won"`
	NowMS int64 `json:"now_ms"`
	TTLMS int64 `json:"ttl_ms"`
}

// claimThenWork is the ttl-claim pattern: it claims the event with
// article 003's TTL conditional upsert (worker/claim's statement, on its
// event_claims table) and, if it won, does the work, the job's insert, in
// a transaction of its own. A claim held by another consumer inside its
// TTL is lost, and the work is not done.
func claimThenWork(a ConsumeArgs, res *Result) (won bool, err error) {
	err = withStore(a.Deliver, res, func(ctx context.Context, st store.Store) (Outcome, error) {
		if err := wc.EnsureTable(ctx, st); err != nil {
			return Outcome{}, err
		}
		ev, now := a.Deliver.Event, time.Now().UnixMilli()
		claim := wc.Event{Fingerprint: ev.ID, Source: ConsumerName, Level: "info", Message: ev.JobKey, Time: now}
		out, err := wc.ClaimOn(ctx, st, wc.TTL, claim, now, a.ClaimTTL)
		if err != nil {
			return Outcome{}, err
		}
		res.Broker.Claim = &ClaimTry{Won: out.Won, NowMS: now, TTLMS: a.ClaimTTL.Milliseconds()}
		if won = out.Won; !won {
			return Outcome{}, nil
		}
		return insertJob(ctx, st, ev)
	})
	return won, err
}

// insertJob is the work under the claim: the follow-up job, with no
// check of its own.
func insertJob(ctx context.Context, st store.Store, ev Event) (Outcome, error) {
	tx, err := st.DB.BeginTx(ctx, nil)
	if err != nil {
		return Outcome{}, fmt.Errorf("begin job transaction: %w", err)
	}
	if _, err := tx.ExecContext(ctx, st.Dialect.Rebind("INSERT INTO follow_up_jobs (event_id, job_key) VALUES (?, ?)"), ev.ID, ev.JobKey); err != nil {
		tx.Rollback()
		return Outcome{}, fmt.Errorf("insert job: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Outcome{}, fmt.Errorf("commit job: %w", err)
	}
	return Outcome{JobInserted: true}, nil
}
