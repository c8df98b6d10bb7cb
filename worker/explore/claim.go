package explore

import (
	"context"
	"errors"
	"fmt"
	"time"

	wc "idemlab/worker/claim"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// ClaimName is the registry name of the claiming worker: article 003's TTL
// claim followed by its downstream write, with crash points between the
// commits so explore can sweep them. The article's own workers have none.
const ClaimName = "explore.claim"

// Crash points of the claim, in the order a first claim passes them.
const (
	PointClaimSchema   = "schema-ready"
	PointClaimed       = "claimed"
	PointClaimFollowUp = "followed-up"
)

// ClaimResult is the claiming worker's report payload.
type ClaimResult struct {
	Holder string     `json:"holder"`
	Claim  wc.Outcome `json:"claim"`
	// FoundDone: the claim won, but the downstream fields were already
	// written by an earlier winner, so this one left them alone.
	FoundDone  bool   `json:"found_done"`
	FollowedUp bool   `json:"followed_up"`
	ExternalID string `json:"external_id,omitempty"`
	// Settings are what a SQLite connection read back, Postgres what a
	// PostgreSQL session did; the other is left out.
	Settings sqlitedb.Settings `json:"settings,omitzero"`
	Postgres *store.PGSettings `json:"postgres,omitempty"`
}

// ClaimArgs are the claiming worker's arguments.
type ClaimArgs struct {
	DB, Fingerprint, Holder, Classification string
	TTLMS, OffsetMS                         int64
	// Backend is empty for SQLite, which keeps the command line as it was
	// before there was a choice; with postgres, DB is a connection string.
	Backend string
}

// Argv is the command line after the worker name; the parent and the
// fold both render it so.
func (a ClaimArgs) Argv() []string {
	argv := []string{"-db", a.DB, "-fingerprint", a.Fingerprint, "-holder", a.Holder, "-classification", a.Classification,
		"-ttl-ms", fmt.Sprint(a.TTLMS), "-clock-offset-ms", fmt.Sprint(a.OffsetMS)}
	return store.BackendArgv(argv, a.Backend)
}

// ParseClaimArgs reads the command line Argv renders.
func ParseClaimArgs(argv []string) (ClaimArgs, error) {
	var a ClaimArgs
	fs := newFlagSet(ClaimName)
	fs.StringVar(&a.DB, "db", "", "database file")
	fs.StringVar(&a.Fingerprint, "fingerprint", "", "event fingerprint")
	fs.StringVar(&a.Holder, "holder", "", "this claimer's name")
	fs.StringVar(&a.Classification, "classification", "", "downstream classification")
	fs.Int64Var(&a.TTLMS, "ttl-ms", 0, "claim TTL")
	fs.Int64Var(&a.OffsetMS, "clock-offset-ms", 0, "added to the worker's clock")
	backend := store.BindBackend(fs, &a.Backend)
	if err := fs.Parse(argv); err != nil {
		return a, err
	}
	if err := backend(); err != nil {
		return a, err
	}
	if a.DB == "" || a.Fingerprint == "" || a.Holder == "" || a.TTLMS <= 0 {
		return a, errors.New("-db, -fingerprint, -holder and a positive -ttl-ms are required")
	}
	return a, nil
}

// ClaimMain is the registered worker "explore.claim". It creates the table
// when the file has none, claims with the TTL upsert on its own clock
// (shifted by -clock-offset-ms, so a re-claim after the TTL costs no
// waiting) and, if it won and nobody wrote them yet, writes the downstream
// fields naming itself.
func ClaimMain(call *protocol.Call) int {
	a, err := ParseClaimArgs(call.Args)
	if err != nil {
		return call.Usage(err)
	}
	ctx := context.Background()
	// The parent may choose the VFS and pragmas (the durability matrix
	// does); unset, they stay article 003's WAL/NORMAL.
	opts, err := sqlitedb.FromEnv(wc.Options(a.DB, 5*time.Second))
	if err != nil {
		return call.Usage(err)
	}
	db, rb, err := store.Open(ctx, a.Backend, a.DB, opts)
	if err != nil {
		return call.Fail(err)
	}
	// No deferred Close: a crash must leave the file as a dead process would.
	if err := wc.EnsureTable(ctx, db); err != nil {
		return call.Fail(err)
	}
	call.Points.Hit(PointClaimSchema)
	clock := wc.Clock{OffsetMS: a.OffsetMS, PinnedMS: wc.NoPin}
	ev := wc.Event{Fingerprint: a.Fingerprint, Source: "explore", Level: "error", Message: "explore claim", Time: clock.Now()}
	out, err := wc.ClaimOn(ctx, db, wc.TTL, ev, clock.Now(), time.Duration(a.TTLMS)*time.Millisecond)
	if err != nil {
		return call.Fail(err)
	}
	res := ClaimResult{Holder: a.Holder, Claim: out, Postgres: rb.Postgres}
	if rb.SQLite != nil {
		res.Settings = *rb.SQLite
	}
	if out.Won {
		call.Points.Hit(PointClaimed)
		row, ok, err := wc.ReadRow(ctx, db, a.Fingerprint)
		if err != nil || !ok {
			return call.Fail(fmt.Errorf("read the claimed row (found %v): %w", ok, err))
		}
		if row.Classification != nil || row.ExternalID != nil {
			res.FoundDone = true
		} else {
			res.ExternalID = wc.ExternalIDFor(a.Holder)
			if _, err := wc.FollowUpOn(ctx, db, a.Fingerprint, a.Classification, res.ExternalID); err != nil {
				return call.Fail(err)
			}
			res.FollowedUp = true
			call.Points.Hit(PointClaimFollowUp)
		}
	}
	call.AckOpen(res)
	if err := db.Close(); err != nil {
		return call.Fail(fmt.Errorf("close database: %w", err))
	}
	return call.Finish(res, protocol.ExitACK)
}
