package durability

import (
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/engine"
	"idemlab/experiments/subject/builtin"
	"idemlab/experiments/syncmodel"
	wb "idemlab/worker/batch"
	we "idemlab/worker/explore"
	"idemlab/worker/faultvfs"
	wr "idemlab/worker/redelivery"
)

// Points beyond the ones the workers report.
const (
	// PointACKOpen: the worker reports success and exits with its
	// connection still open (protocol.EnvAckOpen), so no close-time
	// checkpoint runs; then the cut.
	PointACKOpen = engine.PointACKOpen
	// PointACKReader: the parent holds a read connection open while the
	// worker runs, so the worker's close is not the last one and
	// checkpoints nothing; then the cut. Not for the batch journal, whose
	// locking_mode=EXCLUSIVE admits no other connection.
	PointACKReader = "ack-reader"
)

// Shape is where a trial's first process stops, as the sync model sees it,
// and what it did before: whether it exited 0, and for the batch journal
// how many items it had sent.
type Shape struct {
	Process syncmodel.Process
	Cut     syncmodel.Cut
	Acked   bool
	// Sent is the batch items whose send the worker made before it
	// stopped.
	Sent int
}

// TotalCommits is how many commits a pattern's first process makes when
// it runs to the end: the separate commits' two, the single transaction's
// one, the claim and its downstream fields, and for the batch journal an
// IN_FLIGHT and a SUCCEEDED mark for every step of every item.
func TotalCommits(pattern string, items int) int {
	switch pattern {
	case PatternSeparate, PatternClaim:
		return 2
	case PatternSingle:
		return 1
	case PatternBatch:
		return 2 * len(wb.Steps) * items
	}
	return 0
}

// notifyInFlight is the batch's commit, counted from 1, that marks item i's
// notify step IN_FLIGHT; its send follows that commit.
func notifyInFlight(i int) int {
	return 2*len(wb.Steps)*(i-1) + 2*(len(wb.Steps)-1) + 1
}

// sentBefore is how many batch items were sent before commit c began.
func sentBefore(items, c int) int {
	n := 0
	for i := 1; i <= items; i++ {
		if notifyInFlight(i) < c {
			n++
		}
	}
	return n
}

// namedShape is a worker's own crash point: how many commits came before
// it, and whether it lies inside the next transaction, after its first
// changed page.
func namedShape(pattern string, items int, point string) (commits int, inTx bool, ok bool) {
	type at struct {
		commits int
		inTx    bool
	}
	var table map[string]at
	switch pattern {
	case PatternSeparate:
		table = map[string]at{wr.PointAfterJobInsert: {0, true}, wr.PointAfterJobCommit: {1, false}, wr.PointAfterProcessedCommit: {2, false}}
	case PatternSingle:
		table = map[string]at{wr.PointAfterProcessedInsert: {0, true}, wr.PointBeforeCommit: {0, true}, wr.PointAfterCommit: {1, false}}
	case PatternClaim:
		table = map[string]at{we.PointClaimSchema: {0, false}, we.PointClaimed: {1, false}, we.PointClaimFollowUp: {2, false}}
	case PatternBatch:
		table = map[string]at{}
		for i := 1; i <= items; i++ {
			for _, p := range []string{wb.PointBeforeSend, wb.PointAfterSendAccepted} {
				table[wb.ItemPoint(p, wb.ItemID(i))] = at{notifyInFlight(i), false}
			}
		}
	}
	a, ok := table[point]
	return a.commits, a.inTx, ok
}

// ParseSyncPoint reads a sync point's name (syncmodel.ParseSyncPoint),
// under the name pattern's sync-point cuts call it by.
var ParseSyncPoint = syncmodel.ParseSyncPoint

// ShapeOf places a trial's point in the sync model.
func ShapeOf(pattern string, items int, point string) (Shape, error) {
	total := TotalCommits(pattern, items)
	if total == 0 {
		return Shape{}, fmt.Errorf("unknown pattern %q", pattern)
	}
	all := func(end syncmodel.End, acked bool) Shape {
		return Shape{Process: syncmodel.Process{Commits: total, End: end}, Acked: acked, Sent: items}
	}
	switch point {
	case PointACK:
		return all(syncmodel.EndClose, true), nil
	case PointACKOpen:
		return all(syncmodel.EndOpen, true), nil
	case PointACKReader:
		if pattern == PatternBatch {
			return Shape{}, fmt.Errorf("%s has no point %q: locking_mode=EXCLUSIVE admits no reader", pattern, point)
		}
		return all(syncmodel.EndReader, true), nil
	}
	if c, ok := ParseSyncPoint(point); ok {
		sh := all(syncmodel.EndClose, false)
		sh.Cut = syncmodel.Cut{Sync: c.N, After: c.After}
		return sh, nil
	}
	commits, inTx, ok := namedShape(pattern, items, point)
	if !ok {
		return Shape{}, fmt.Errorf("%s has no crash point %q", pattern, point)
	}
	sh := Shape{Process: syncmodel.Process{Commits: commits, InTx: inTx, End: syncmodel.EndOpen}}
	if pattern == PatternBatch {
		sh.Sent = sentBefore(items, commits+1)
		if strings.HasPrefix(point, wb.PointBeforeSend+":") {
			sh.Sent--
		}
	}
	return sh, nil
}

// ModelSetting is the condition's setting as the sync model takes it.
func ModelSetting(s Setting) syncmodel.Setting {
	return syncmodel.Setting{JournalMode: s.JournalMode, Synchronous: s.Synchronous, Exclusive: s.Exclusive}
}

// afterTags is what the rest of a trial makes of a first process that made
// `made` commits and sent `sent` batch items, when the cut took back the
// last `lost` of those commits:
//
//   - separate commits: the redelivery finds no processed record unless
//     both commits stand, and inserts a job, a second one if the first
//     stood;
//   - single transaction: the redelivery finds the claim or writes both;
//   - claim: a lost claim lets the probe win inside the TTL (a duplicate);
//     lost downstream fields are written again by a later winner;
//   - batch journal: an item sent whose notify IN_FLIGHT mark was lost is
//     sent again by the resume, and accepted again (builtin.BatchIdempotencyKey).
func afterTags(pattern string, items, made, sent, lost int) map[string]bool {
	kept := made - lost
	tags := map[string]bool{}
	switch pattern {
	case PatternSeparate:
		jobs := 0
		if kept >= 1 {
			jobs++
		}
		if kept < 2 {
			jobs++
		}
		tags[TagDuplicate], tags[TagMissing] = jobs > 1, jobs == 0
	case PatternClaim:
		lostClaim := made >= 1 && kept == 0
		tags[TagLostClaim], tags[TagDuplicate] = lostClaim, lostClaim
		tags[TagLostDownstream] = made >= 2 && kept < 2
	case PatternBatch:
		// Without an Idempotency-Key the receiver accepts a send made
		// again; with one it would replay the first acceptance.
		for i := 1; i <= sent && i <= items && !builtin.BatchIdempotencyKey; i++ {
			tags[TagDuplicate] = tags[TagDuplicate] || kept < notifyInFlight(i)
		}
	}
	return tags
}

// outcomeOf joins the tags of a trial whose cut took back lost commits.
func outcomeOf(pattern string, items int, sh Shape, made, lost int) string {
	tags := afterTags(pattern, items, made, sh.Sent, lost)
	if lost > 0 {
		if sh.Acked {
			tags[TagLostAcked] = true
		} else {
			tags[TagRolledBack] = true
		}
	}
	return Join(tags)
}

// rowsLost counts the rows the first process left (made commits) that the
// cut took back (down to kept), as the fold counts them: rendered rows of
// before missing after.
func rowsLost(pattern string, made, kept int) int {
	if kept >= made {
		return 0
	}
	switch pattern {
	case PatternSeparate:
		return made - kept // a job, then a processed record
	case PatternSingle:
		return 2 * (made - kept) // both in one commit
	case PatternClaim:
		return 1 // one row, inserted, then updated
	case PatternBatch:
		// Each step's row is inserted IN_FLIGHT, then marked SUCCEEDED;
		// every row a lost commit touched differs.
		return (made+1)/2 - kept/2
	}
	return 0
}

// Want is the oracle's answer for one trial.
type Want struct {
	// Outcome and RowsLost are exact under the drop fault mode.
	Outcome  string `json:"outcome,omitempty"`
	RowsLost int    `json:"rows_lost"`
	// Recovered lists "file:action" for every file a power cut removes or
	// brings back; a kill changes no name.
	Recovered []string `json:"recovered"`
	// Torn, under the torn fault mode, gives the outcomes allowed for each
	// combination of what the seed did to the files it decided (see
	// ViewKey); Outcome and RowsLost are then unset.
	// A PostgreSQL power cell that decides no one outcome (wantOnServer)
	// has its allowed set here too, under the one key "" (its trials
	// record no views).
	Torn map[string][]string `json:"torn,omitempty"`
}

// AnyFiles, as a Want's one Recovered entry, says the files removed or
// brought back are not predicted (a cut at the fs layer's N-th fsync,
// fsSyncWant).
const AnyFiles = "*"

// placed is a trial placed in the sync model: its shape, the commits the
// first process made (what a kill leaves), and, for a power cut, what the
// drop fault mode's cut leaves.
type placed struct {
	sh   Shape
	made int
	cut  *syncmodel.Result
}

// place puts a trial in the sync model.
func place(pattern string, s Setting, items int, point string) (placed, error) {
	sh, err := ShapeOf(pattern, items, point)
	if err != nil {
		return placed{}, err
	}
	ms := ModelSetting(s)
	killed, err := syncmodel.Kill(ms, sh.Process, sh.Cut)
	if err != nil {
		return placed{}, err
	}
	if sh.Cut.Sync > 0 && pattern == PatternBatch {
		sh.Sent = sentBefore(items, killed.At.Commit)
	}
	pl := placed{sh: sh, made: killed.Min}
	if s.Kind != KindPower {
		return pl, nil
	}
	cut, err := syncmodel.PowerCut(ms, sh.Process, sh.Cut, nil)
	if err != nil {
		return placed{}, err
	}
	if cut.Min > pl.made {
		return placed{}, fmt.Errorf("%s %s: the model finds %d commits after the cut, %d before", pattern, point, cut.Min, pl.made)
	}
	pl.cut = &cut
	return pl, nil
}

// MayHoldSend says whether the batch journal the resume opens after the
// trial's cut may hold a notify IN_FLIGHT, the one state that leaves a
// send for a person to resolve.
func MayHoldSend(pattern string, s Setting, items int, point, fault string) (bool, error) {
	if pattern != PatternBatch {
		return false, nil
	}
	pl, err := place(pattern, s, items, point)
	if err != nil {
		return false, err
	}
	lo, hi := pl.made, pl.made
	if pl.cut != nil {
		lo, hi = pl.cut.Min, pl.cut.Min
		if fault == faultvfs.FaultTorn {
			r, err := syncmodel.AllTorn(ModelSetting(s), pl.sh.Process, pl.sh.Cut)
			if err != nil {
				return false, err
			}
			lo, hi = r.Min, r.Max
		}
	}
	for i := 1; i <= items; i++ {
		if n := notifyInFlight(i); n >= lo && n <= hi {
			return true, nil
		}
	}
	return false, nil
}

// WantOf is the oracle for one trial, from the settings alone: the
// pattern, the condition's setting, the items, the point and the fault
// mode. A kill leaves what the sync model's kill leaves; a power cut what
// its cut leaves, exactly under the drop mode.
func WantOf(pattern string, s Setting, items int, point, fault string) (Want, error) {
	pl, err := place(pattern, s, items, point)
	if err != nil {
		return Want{}, err
	}
	sh, made, ms := pl.sh, pl.made, ModelSetting(s)
	w := Want{Recovered: []string{}}
	if pl.cut == nil {
		w.Outcome = outcomeOf(pattern, items, sh, made, 0)
		return w, nil
	}
	cut := *pl.cut
	db := DBName(pattern)
	for _, f := range cut.Resurrected {
		w.Recovered = append(w.Recovered, db+f+":"+faultvfs.ActResurrect)
	}
	for _, f := range cut.Removed {
		w.Recovered = append(w.Recovered, db+f+":"+faultvfs.ActRemove)
	}
	slices.Sort(w.Recovered)
	if fault != faultvfs.FaultTorn {
		w.Outcome = outcomeOf(pattern, items, sh, made, made-cut.Min)
		w.RowsLost = rowsLost(pattern, made, cut.Min)
		return w, nil
	}
	w.Torn, err = tornWants(pattern, items, ms, sh, made)
	return w, err
}

// tornWants gives, for every combination of views of the files a torn
// cut decides (syncmodel.TornCuts), the outcomes it allows: a commit
// count anywhere between what the views leave, and corruption where a
// torn database has nothing to repair it.
func tornWants(pattern string, items int, ms syncmodel.Setting, sh Shape, made int) (map[string][]string, error) {
	cuts, err := syncmodel.TornCuts(ms, sh.Process, sh.Cut)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, tc := range cuts {
		var allowed []string
		for n := tc.Result.Max; n >= tc.Result.Min; n-- {
			if o := outcomeOf(pattern, items, sh, made, made-n); !slices.Contains(allowed, o) {
				allowed = append(allowed, o)
			}
		}
		if tc.Result.MayCorrupt {
			allowed = append(allowed, AnyOutcome)
		}
		out[syncmodel.Key(DBName(pattern), tc.Views)] = allowed
	}
	return out, nil
}

// ExtraPoints are the points every SQLite condition tries beyond the
// normal run and its workers' own: the ACK with the connection open and, where a
// second connection is possible, the ACK with the parent's reader open.
func ExtraPoints(pattern string) []string {
	if pattern == PatternBatch {
		return []string{PointACKOpen}
	}
	return []string{PointACKOpen, PointACKReader}
}

// sweep is how the engine plans a condition's trials: the normal run
// first, since it discovers the points; then every point it reported, the
// extra points on SQLite, and with SyncPoints a cut just before and just
// after every sync it made; each point with every seed under the torn
// mode's power cuts, whose keys carry the seed ("point#seed").
func (s Settings) sweep(c Condition) engine.Sweep {
	sw := engine.Sweep{First: PointACK, SyncPoints: s.SyncPoints && (!c.OnServer() || c.pgPower()), Seeds: s.Seeds(c), Seeded: s.Torn() && c.Kind == KindPower}
	if !c.OnServer() {
		sw.Extra = ExtraPoints(c.Pattern)
	}
	if c.pgPower() {
		sw.Model, sw.Layer = c.Model, engine.LayerFS
	} else if c.Kind == KindPower {
		sw.Model = s.Fault
		if s.OnFS(c) {
			sw.Layer = engine.LayerFS
		}
	}
	return sw
}

// TrialKey is how a trial is keyed in a condition's observed and expected
// values: its point, and under the torn mode a power trial's seed index.
func (s Settings) TrialKey(c Condition, point string, seed int) string {
	return s.sweep(c).Key(TrialRef{Point: point, Seed: seed})
}

// TrialRef is one trial of a condition: a point and a seed index.
type TrialRef = engine.Cut

// Order lists a condition's trials in the order they run (the engine's
// sweep): points are the workers' own points as the normal run reported
// them, and w the window of syncs it made (From 0 but on a PostgreSQL
// power condition, whose window --sync-bound may cut short, swept).
func (s Settings) Order(c Condition, points []string, w backend.SyncWindow) []TrialRef {
	w = w.Bounded(s.SyncBound)
	return s.sweep(c).Cuts(engine.Found{Points: points, SyncsFrom: w.From, Syncs: w.To})
}

// ModelOrder is Order as the model has it: the workers' points from
// Points and the syncs from the sync model's schedule of the normal run.
func (s Settings) ModelOrder(c Condition) ([]TrialRef, error) {
	if c.OnServer() {
		// The mount's fsyncs are the normal run's to count: one cut
		// before and one after stand for every N (anySyncKey).
		return s.Order(c, Points(c.Pattern, s.Items), backend.SyncWindow{To: 1}), nil
	}
	n, err := syncmodel.Syncs(ModelSetting(c.Setting()), syncmodel.Process{Commits: TotalCommits(c.Pattern, s.Items), End: syncmodel.EndClose})
	if err != nil {
		return nil, err
	}
	return s.Order(c, Points(c.Pattern, s.Items), backend.SyncWindow{To: n}), nil
}

// On PostgreSQL (--backend postgres) a kill stops the worker at its point,
// and the server rolls back what it had not committed. A server crash
// (KindServer, the engine's ServerCrash) runs the worker to its point or
// its ACK, then SIGKILLs every process of the server, restarts it and
// lets recovery run, and only then lets the pattern go on: PostgreSQL's
// counterpart of SQLite's power cut, where synchronous_commit decides
// what an acknowledged commit is worth.

// ServerKinds are the crash kinds on PostgreSQL, in run order.
var ServerKinds = []string{KindKill, KindServer}

// onServer places a trial on PostgreSQL: its shape (the pattern's
// logical model's, ShapeOf; its first process made sh.Process.Commits
// commits) and what the server may keep of those commits. A kill keeps
// every one: the server rolls back only what was not committed. A server
// crash keeps them too under synchronous_commit on and local, which flush
// the WAL before a commit returns; under off, with the writers frozen
// since before the worker started (backend.PrepareCrash), it loses every
// one, acknowledged or not (backend.CrashKeeps). A power cut keeps what
// PostgreSQL's guarantee says (backend.Keeps).
func onServer(c Condition, items int, point string) (Shape, backend.PowerKeeps, error) {
	if point == PointACKOpen || point == PointACKReader {
		return Shape{}, backend.PowerKeeps{}, fmt.Errorf("%s: point %q is SQLite's", c.Name, point)
	}
	sh, err := ShapeOf(c.Pattern, items, point)
	if err != nil {
		return Shape{}, backend.PowerKeeps{}, err
	}
	made := sh.Process.Commits
	switch c.Kind {
	case KindPower:
		return sh, backend.Keeps(c.power(), c.Model, made), nil
	case KindServer:
		made = backend.CrashKeeps(c.SynchronousCommit, made)
	}
	return sh, backend.PowerKeeps{Kept: []int{made}}, nil
}

// wantOnServer is the oracle for a trial on PostgreSQL, from the settings
// alone: what the pattern then makes of the rows the server kept is the
// same model the SQLite trials use (outcomeOf, rowsLost); the exact
// outcome where the cell decides one, else the outcomes it allows. For
// the batch journal a send whose notify IN_FLIGHT mark the crash took
// back is sent again by the resume, and the receiver accepts it a second
// time, as the run sends no Idempotency-Key (builtin.BatchIdempotencyKey); for the
// claim, a claim row the crash took back lets the probe win inside the
// TTL: a second winner.
func wantOnServer(c Condition, items int, point string) (Want, error) {
	sh, k, err := onServer(c, items, point)
	if err != nil {
		return Want{}, err
	}
	made := sh.Process.Commits
	if k.Anything {
		allow := AnyOutcome
		if len(k.Kept) == 1 && k.Kept[0] < made {
			allow = AnyWith(TagRolledBack)
			if sh.Acked {
				allow = AnyWith(TagLostAcked)
			}
		}
		return Want{Torn: map[string][]string{"": {allow}}, Recovered: []string{}}, nil
	}
	var allow []string
	for _, kept := range k.Kept {
		if o := outcomeOf(c.Pattern, items, sh, made, made-kept); !slices.Contains(allow, o) {
			allow = append(allow, o)
		}
	}
	if k.Corrupt {
		allow = append(allow, AnyWith(TagCorrupt))
	}
	if len(k.Kept) == 1 && len(allow) == 1 {
		return Want{Outcome: allow[0], RowsLost: rowsLost(c.Pattern, made, k.Kept[0]), Recovered: []string{}}, nil
	}
	return Want{Torn: map[string][]string{"": allow}, Recovered: []string{}}, nil
}

// mayHoldOnServer says whether the journal the batch's resume opens after
// a trial on PostgreSQL holds a notify IN_FLIGHT: whether the last commit
// the server kept is one.
func mayHoldOnServer(c Condition, items int, point string) (bool, error) {
	if c.Pattern != PatternBatch {
		return false, nil
	}
	if c.pgPower() {
		return true, nil // a torn cut or fsync=off may keep any commit
	}
	_, k, err := onServer(c, items, point)
	if err != nil {
		return false, err
	}
	for i := 1; i <= items; i++ {
		if notifyInFlight(i) == k.Kept[0] {
			return true, nil
		}
	}
	return false, nil
}
