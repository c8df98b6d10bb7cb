package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"idemlab/experiments/harness"
	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	"idemlab/experiments/subject"
	wb "idemlab/worker/batch"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
	"idemlab/worker/wire"
)

// Tables of the batch patterns. TableSends is not in the file: it is the
// receiver's log of every send of the trial, which the parent keeps.
const (
	TableJournal = "step_journal"
	TableSends   = subject.TableSends
)

// Steps of a batch recovery.
const (
	StepResume = "resume"
	StepFinal  = "final"
	// StepResolve is followed by the key, "resolve job:item:step".
	StepResolve = "resolve"
	RoleResolve = "resolve"
	RoleResume  = "resume"
)

// Duplicates names a batch outcome with n accepts beyond one per item.
func Duplicates(n int) string { return "duplicates-" + strconv.Itoa(n) }

// BatchIdempotencyKey is whether the batch's runs attach an
// Idempotency-Key to their sends. They do not, as the article's batch does
// not, so a send a resume makes again, its IN_FLIGHT mark lost, is
// accepted a second time by the receiver rather than replayed; the models
// that predict it (durability's) read this constant.
const BatchIdempotencyKey = false

// batchArgs is a run of explore's small batch: no simulated latency, so a
// sweep costs process starts only.
func batchArgs(st subject.Params, mode string, f subject.Files) []string {
	return wb.RunArgs{Mode: mode, Job: st.JobKey, Items: st.Items, Receiver: f.Receiver, DB: f.DB, IdempotencyKey: BatchIdempotencyKey, Backend: st.Backend}.Argv()
}

// batchRacerArgs is a run of the journal raced behind the barrier.
func batchRacerArgs(st subject.Params, f subject.Files) []string {
	return wb.RunArgs{Mode: wb.ModeJournal, Job: st.JobKey, Items: st.Items, Receiver: f.Receiver, DB: f.DB, Backend: st.Backend, ReadyFD: harness.BarrierReadyFD}.Argv()
}

// journalRaceAllowed is the outcomes after k runs of the journal raced on
// one job and a recovery. Each run reads an item's rows once, before the
// item's first step, and each mark is a transaction of its own: no lock
// is held from the read to the send, under any isolation level (a
// concurrent mark waits for a row lock, or meets 40001 and is run again,
// but the send it guards has already been decided). So every run may
// find an item unsent and send it: 1 to k accepts per item, 0 to
// (k-1)·items duplicates. On SQLite the journal's EXCLUSIVE lock lets one
// run in at a time; this set is PostgreSQL's.
func journalRaceAllowed(st subject.Params, k int) []string {
	out := []string{subject.OutcomeClean}
	for n := 1; n <= (k-1)*st.Items; n++ {
		out = append(out, Duplicates(n))
	}
	return out
}

// batchClaim decodes a journal racer's report: one run, its mark retries,
// and how it ended (completed, or needs_review when it found a send
// another run had in flight).
func batchClaim(raw json.RawMessage, _ bool) (subject.Claim, error) {
	var r wb.RunResult
	if err := results.DecodeStrict(raw, &r); err != nil {
		return subject.Claim{}, err
	}
	c := subject.Claim{Postgres: r.Postgres, Attempts: 1, SerializationErrors: r.SerializationRetries, End: r.Status}
	if r.SQLite != nil {
		c.Settings = *r.SQLite
	}
	return c, nil
}

// readJournalOn lists the journal through a store, as Read does a file.
func readJournalOn(ctx context.Context, st store.Store) (subject.State, error) {
	rows, err := wb.ReadJournal(ctx, st)
	if err != nil {
		return nil, err
	}
	s := subject.State{TableJournal: []string{}}
	for _, r := range rows {
		s[TableJournal] = append(s[TableJournal], journalRow(r))
	}
	return s, nil
}

// Batch is article 002's run in one mode. The journal recovers as
// the batch scenario's hard crash does: a resume that holds what it
// cannot confirm, a resolve per held send after the parent looked it up
// at the receiver, and a final run. Rerun-all just runs again.
func Batch(mode string) subject.Subject {
	p := subject.Subject{
		Name:       "batch-" + mode,
		Worker:     wb.WorkerRun,
		TrialShare: 12,
		Sends:      true,
		Points:     func(st subject.Params) []string { return wb.CleanPoints(st.Items) },
		Args:       func(st subject.Params, f subject.Files) []string { return batchArgs(st, mode, f) },
		Looked:     lookedUp,
		Read: func(ctx context.Context, db string) (subject.State, error) {
			s := subject.State{}
			if mode != wb.ModeJournal {
				return s, nil
			}
			s[TableJournal] = []string{}
			// A worker killed before it created the table leaves a file
			// without one, which reads as an empty journal.
			if ok, err := hasTable(ctx, wb.Options(db), "step_journal"); err != nil || !ok {
				return s, err
			}
			rows, err := readJournal(ctx, db)
			if err != nil {
				return nil, err
			}
			for _, r := range rows {
				s[TableJournal] = append(s[TableJournal], journalRow(r))
			}
			return s, nil
		},
		CheckRows: func(st subject.Params, s subject.State) []string {
			return checkBatchRows(st, s, mode == wb.ModeJournal)
		},
		Classify: classifyBatch,
		Invariants: []subject.Invariant{
			{Name: "each-item-sent-once", Check: eachItemOnce},
			{Name: "recovery-acknowledged", Check: recoveryAcknowledged},
		},
		Model: func(st subject.Params) []string {
			if mode == wb.ModeJournal {
				return []string{subject.OutcomeClean}
			}
			// Rerun-all resends what the crashed run had sent: 0 to all.
			out := []string{subject.OutcomeClean}
			for n := 1; n <= st.Items; n++ {
				out = append(out, Duplicates(n))
			}
			return out
		},
		Account: func(st subject.Params, role, sender string, raw json.RawMessage, before, after subject.State) []string {
			if role == RoleResolve {
				var r wb.ResolveResult
				if err := results.DecodeStrict(raw, &r); err != nil {
					return []string{fmt.Sprintf("the resolve's result: %v", err)}
				}
				return nil
			}
			var r wb.RunResult
			if err := results.DecodeStrict(raw, &r); err != nil {
				return []string{fmt.Sprintf("the run's result: %v", err)}
			}
			var out []string
			if r.Mode != mode || r.JobID != st.JobKey || r.Items != st.Items {
				out = append(out, fmt.Sprintf("the run says mode %s, job %s, %d items; the settings give %s, %s, %d", r.Mode, r.JobID, r.Items, mode, st.JobKey, st.Items))
			}
			if sent := len(sentBy(sender, before, after)); r.Executed[wb.StepNotify] != sent {
				out = append(out, fmt.Sprintf("the run says it sent %d notifications, the receiver accepted %d %s", r.Executed[wb.StepNotify], sent, receiver.SentFrom(sender)))
			}
			if role == subject.RoleRecovery && r.Status != wb.StatusCompleted {
				out = append(out, fmt.Sprintf("the final run ended %s, want %s", r.Status, wb.StatusCompleted))
			}
			return out
		},
	}
	if mode == wb.ModeJournal {
		withJournal(&p, mode)
	} else {
		p.Window = subject.Window{From: wb.ItemPoint(wb.PointAfterSendAccepted, wb.ItemID(1))}
	}
	return p
}

// withJournal adds the journal's recovery to p: a resume that holds what
// it cannot confirm, a resolve per held send after the parent looked it up
// at the receiver, and a final run; and its races, on both backends. The
// worker's model of its journal (wb.JournalAt) gives the sends a crash
// leaves held, so the resolves a recovery runs.
func withJournal(p *subject.Subject, mode string) {
	p.Crashed = func(st subject.Params, at string) subject.State {
		s := subject.State{TableJournal: []string{}}
		for _, r := range wb.JournalAt(st.JobKey, st.Items, at) {
			s[TableJournal] = append(s[TableJournal], journalRow(r))
		}
		return s
	}
	p.PostgresRacer, p.RacesOnPostgres, p.RacerArgs = wb.WorkerRun, true, batchRacerArgs
	p.Tables, p.ReadOn = wb.SchemaOn, readJournalOn
	p.Claim, p.RaceAllowed = batchClaim, journalRaceAllowed
	p.Recovery = func(st subject.Params, f subject.Files, done []string, s subject.State) (subject.Action, bool) {
		switch {
		case len(done) == 0:
			return subject.Action{Step: StepResume, Role: RoleResume, Worker: wb.WorkerRun, Args: batchArgs(st, mode, f)}, true
		case done[len(done)-1] == StepFinal:
			return subject.Action{}, false
		}
		if k, ok := unresolved(heldSends(st, s), done); ok {
			return subject.Action{Step: StepResolve + " " + k.String(), Role: RoleResolve, Worker: wb.WorkerResolve, LookUp: k.String(),
				With: func(l subject.Lookup) []string {
					a := l.Resolve(f.DB, k)
					a.Backend = st.Backend
					return a.Argv()
				}}, true
		}
		return subject.Action{Step: StepFinal, Role: subject.RoleRecovery, Worker: wb.WorkerRun, Args: batchArgs(st, mode, f)}, true
	}
}

// unresolved is the first of held whose resolve is not among done. In a
// run a resolve settles its row, so that is the first held; on the
// model's state, which no resolve changes, it is the next to resolve.
func unresolved(held []wire.Key, done []string) (wire.Key, bool) {
	for _, k := range held {
		if !slices.Contains(done, StepResolve+" "+k.String()) {
			return k, true
		}
	}
	return wire.Key{}, false
}

// readJournal reads the journal with the worker's reader, opening the file
// as the next run would.
func readJournal(ctx context.Context, db string) ([]wb.JournalRow, error) {
	st, err := store.OpenSQLite(ctx, wb.Options(db))
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer st.Close()
	return wb.ReadJournal(ctx, st)
}

// journalRow renders a row of the job as a state row; parseJournalRow reads
// it back.
func journalRow(r wb.JournalRow) string {
	return strings.Join([]string{r.Item, r.Step, r.Status, r.Receipt}, "|")
}

func parseJournalRow(job, s string) (wb.JournalRow, bool) {
	f := strings.Split(s, "|")
	if len(f) != 4 {
		return wb.JournalRow{}, false
	}
	return wb.JournalRow{Job: job, Item: f[0], Step: f[1], Status: f[2], Receipt: f[3]}, true
}

// sentBy lists the accepted sends of the process whose sender token is
// tok, over the whole log of after: what it sent, whenever the receiver
// logged it. A folder of format 4 or older has no tokens (tok is empty),
// and its reading stays the old one: the accepts logged between before
// and after, the window the process ran in.
func sentBy(tok string, before, after subject.State) []subject.Send {
	var out []subject.Send
	for _, x := range subject.Sends(after) {
		if !x.Accepted() {
			continue
		}
		if (tok != "" && x.Sender == tok) || (tok == "" && x.Seq > len(before[TableSends])) {
			out = append(out, x)
		}
	}
	return out
}

// acceptsByItem counts each item's accepted notifications.
func acceptsByItem(s subject.State) map[string]int {
	out := map[string]int{}
	for _, x := range subject.Sends(s) {
		if x.Accepted() && x.Step == wb.StepNotify {
			out[x.Item]++
		}
	}
	return out
}

// lookedUp answers a lookup from the receiver's log: found when a send of
// the key was accepted, with that send's receipt.
func lookedUp(s subject.State, key string) subject.Lookup {
	l := subject.Lookup{Key: key}
	for _, x := range subject.Sends(s) {
		if x.Accepted() && strings.HasSuffix(key, ":"+x.Item+":"+x.Step) {
			l.Found, l.Receipt = true, x.Receipt
		}
	}
	return l
}

// heldSends are the sends a person resolves, found by the worker's reader
// of held sends in the journal rows of the state.
func heldSends(st subject.Params, s subject.State) []wire.Key {
	var rows []wb.JournalRow
	for _, r := range s[TableJournal] {
		if x, ok := parseJournalRow(st.JobKey, r); ok {
			rows = append(rows, x)
		}
	}
	return wb.HeldSends(rows, st.JobKey)
}

func itemIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = wb.ItemID(i + 1)
	}
	return out
}

func checkBatchRows(st subject.Params, s subject.State, journal bool) []string {
	var bad []string
	items := itemIDs(st.Items)
	for i, r := range s[TableJournal] {
		f := strings.Split(r, "|")
		if len(f) != 4 || !slices.Contains(items, f[0]) || !slices.Contains(wb.Steps[:], f[1]) {
			bad = append(bad, fmt.Sprintf("%s[%d] is %q, not a row of the settings' items and steps", TableJournal, i, r))
		}
	}
	for i, r := range s[TableSends] {
		x, ok := subject.ParseSend(r)
		if !ok || x.Seq != i+1 || !slices.Contains(items, x.Item) || x.Step != wb.StepNotify {
			bad = append(bad, fmt.Sprintf("%s[%d] is %q, not the receiver's entry %d for a notification of the settings' items", TableSends, i, r, i+1))
		}
	}
	if _, ok := s[TableSends]; !ok {
		bad = append(bad, fmt.Sprintf("table %s is missing", TableSends))
	}
	if _, ok := s[TableJournal]; ok != journal {
		bad = append(bad, fmt.Sprintf("table %s listed: %v, but the pattern keeps a journal: %v", TableJournal, ok, journal))
	}
	for t := range s {
		if t != TableJournal && t != TableSends {
			bad = append(bad, fmt.Sprintf("table %s is not a table of the pattern", t))
		}
	}
	return bad
}

// classifyBatch counts accepts beyond one per item, and items never sent.
func classifyBatch(st subject.Params, s subject.State) string {
	by := acceptsByItem(s)
	dups, lost := 0, 0
	for _, it := range itemIDs(st.Items) {
		switch n := by[it]; {
		case n == 0:
			lost++
		case n > 1:
			dups += n - 1
		}
	}
	switch {
	case dups == 0 && lost == 0:
		return subject.OutcomeClean
	case lost == 0:
		return Duplicates(dups)
	}
	return fmt.Sprintf("duplicates-%d-lost-%d", dups, lost)
}

// eachItemOnce says the receiver accepted every item's notification
// exactly once by the end of the recovery: its log is the evidence.
func eachItemOnce(h subject.History) []string {
	last, ok := h.Final()
	if !ok {
		return []string{"no steps"}
	}
	by := acceptsByItem(last.Rows)
	var out []string
	for _, it := range itemIDs(h.Items) {
		if n := by[it]; n != 1 {
			out = append(out, fmt.Sprintf("the receiver accepted %s %d times, want exactly 1", it, n))
		}
	}
	return out
}

// hasTable says whether the file exists and holds the table.
func hasTable(ctx context.Context, o sqlitedb.Options, table string) (bool, error) {
	if _, err := os.Stat(o.Path); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	db, _, err := sqlitedb.Open(ctx, o)
	if err != nil {
		return false, err
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", table).Scan(&n); err != nil {
		return false, fmt.Errorf("look up table %s: %w", table, err)
	}
	return n > 0, nil
}
