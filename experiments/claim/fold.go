package claim

import (
	"fmt"
	"sort"

	"idemlab/experiments/backend"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wc "idemlab/worker/claim"
	"idemlab/worker/protocol"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Extra is the scenario's derived extra table.
type Extra struct {
	// BusyRetries is the SQLITE_BUSY retries the racers report, per
	// condition.
	BusyRetries map[string]int `json:"busy_retries" idemlab:"measure"`
	// SQLiteReadBack is what the racers' connections read back; the fold
	// checks every one against the settings.
	SQLiteReadBack *sqlitedb.Settings `json:"sqlite_read_back,omitempty"`
	// SerializationRetries and DeadlockRetries are PostgreSQL's 40001 and
	// 40P01 retries the racers report, per condition, as BusyRetries are
	// SQLite's, and like them measurements: how many racers' snapshots
	// missed the winner's row is the scheduler's doing, so a rerun does
	// not compare them. Whether any racer met one under READ COMMITTED is
	// in the observed figures, and compared. PostgresReadBack is what
	// their sessions read back.
	SerializationRetries map[string]int    `json:"serialization_retries,omitempty" idemlab:"measure"`
	DeadlockRetries      map[string]int    `json:"deadlock_retries,omitempty" idemlab:"measure"`
	PostgresReadBack     *store.PGSettings `json:"postgres_read_back,omitempty"`
	// Release says how close together the racers left the barrier.
	Release ReleaseStats `json:"release"`
	// Mutants is the mutant table; nil when it was not run.
	Mutants *MutantTable `json:"mutants,omitempty"`
	// ClaimErrors are, per condition, the first error the user's
	// statement failed with, as a racer reports it.
	ClaimErrors map[string]string `json:"claim_errors,omitempty"`
}

// ReleaseStats are taken over the races with more than one racer. Spread
// is the time between the first and the last racer of a race waking, by
// their own clocks; wake is from the parent's release write to the last
// racer's wake.
type ReleaseStats struct {
	Races          int   `json:"races"`
	MedianSpreadUS int64 `json:"median_spread_us" idemlab:"measure"`
	MaxSpreadUS    int64 `json:"max_spread_us" idemlab:"measure"`
	MaxWakeUS      int64 `json:"max_wake_us" idemlab:"measure"`
}

// MutantTable records, per mutant, which rounds caught it.
type MutantTable struct {
	Repetitions int `json:"repetitions"`
	// Oracle says what each mutant is checked against.
	Oracle string      `json:"oracle"`
	Rows   []MutantRow `json:"rows"`
}

// MutantRow is one mutant: the rounds whose observed outcomes differ from
// the TTL claim's oracle killed it.
type MutantRow struct {
	Mutant   wc.Variant `json:"mutant"`
	Killed   bool       `json:"killed"`
	KilledBy []string   `json:"killed_by"`
	Survived []string   `json:"survived"`
	// Differences are the killing rounds' fields, expected and observed.
	Differences map[string][]results.Difference `json:"differences"`
}

// member is a pool process as the fold reads it: its transcript by race,
// and which of its entries an observation line used.
type member struct {
	p       results.Process
	entries map[int]wc.Entry
	used    map[int]bool
}

// round is what the fold carries from one race of a round to the next.
type round struct {
	db       string
	base     int64
	prev     *wc.Row
	marks    []RaceMarks
	outcomes []RaceOutcome
}

// folder holds one fold's state.
type folder struct {
	c       results.Checker
	st      Settings
	rec     results.Records
	sched   []Slot
	members map[int]*member
	// cur is the round the lines are in; perRep each round condition's
	// outcomes per repetition; dbs the round each file belongs to.
	cur     round
	perRep  map[string][][]RaceOutcome
	dbs     map[string]string
	busy    map[string]int
	ser     map[string]int
	dead    map[string]int
	rb      *sqlitedb.Settings
	pgRB    *store.PGSettings
	spreads []int64
	wake    int64

	// claimErrs are the first error of the user's statement per condition.
	claimErrs map[string]string
}

// raceLine is one observation line as the fold reads it: the line, the
// race the schedule puts there, and what the line says.
type raceLine struct {
	l results.Line
	s Slot
	o Observation
}

// Fold derives every figure from the records. The parent's evidence comes
// first: the row it read after each race, the table layout it saw, its own
// clock around the release, and each process's exit status. Which racer
// won, by which statement and at which now is the racers' word, from each
// member's transcript; the fold checks it against the requests the parent
// sent and the rows the parent read, and derives winners from it only
// once it agrees with them.
func (Scenario) Fold(st Settings, rec results.Records) (scenario.Folded, []results.Finding) {
	f := &folder{st: st, rec: rec, sched: Schedule(st), members: map[int]*member{}, perRep: map[string][][]RaceOutcome{}, dbs: map[string]string{}, busy: map[string]int{}, ser: map[string]int{}, dead: map[string]int{}, claimErrs: map[string]string{}}
	f.readPool()
	for i, l := range rec.Observations {
		if rl, ok := f.read(i, l); ok {
			f.place(rl)
			f.race(rl)
		}
	}
	if n := len(rec.Observations); n < len(f.sched) {
		s := f.sched[n]
		f.c.AddTo(s.Condition, results.ObservationsFile, "condition "+s.Condition, "%d races recorded, the settings give %d; the first missing is race %d (%s repetition %d race %s)", n, len(f.sched), s.Seq, s.Condition, s.Repetition, s.Race.Name)
	}
	folded := scenario.Folded{Observed: map[string]any{}}
	for _, r := range st.Rounds {
		for _, v := range st.Claims {
			name := RoundCondition(r.ID, v)
			if reason, ok := st.notRun(name); ok && len(f.perRep[name]) == 0 {
				folded.Observed[name] = NotApplicable{reason}
			} else if r.hasKind(v) {
				folded.Observed[name] = GroupOutcomes(f.perRep[name])
			}
		}
	}
	ex := Extra{BusyRetries: f.busy, SQLiteReadBack: f.rb, PostgresReadBack: f.pgRB, Release: f.release()}
	if st.Postgres != nil {
		ex.SerializationRetries, ex.DeadlockRetries = f.ser, f.dead
	}
	if len(f.claimErrs) > 0 {
		ex.ClaimErrors = f.claimErrs
	}
	if st.Mutants {
		ex.Mutants = mutants(st, f.perRep)
		for _, row := range ex.Mutants.Rows {
			folded.Observed[MutantCondition(row.Mutant)] = MutantVerdict{Killed: row.Killed}
		}
	}
	folded.Extra = ex
	f.unusedEntries()
	f.c.Unused(rec, len(f.sched))
	f.mutantFindings()
	return folded, f.c.Findings
}

// mutantFindings moves the findings about a mutant's races, which are
// recorded under their round's name, to the mutant's condition: what they
// show fails the mutant.
func (f *folder) mutantFindings() {
	for i, x := range f.c.Findings {
		for _, m := range f.st.MutantVariants {
			for _, r := range f.st.Rounds {
				if x.Condition == RoundCondition(r.ID, m) {
					f.c.Findings[i].Condition = MutantCondition(m)
				}
			}
		}
	}
}

// read decodes line i against the race the schedule puts there; a line
// past the schedule or that does not decode is a finding and nothing more.
func (f *folder) read(i int, l results.Line) (raceLine, bool) {
	rl := raceLine{l: l}
	if i >= len(f.sched) {
		f.c.Obs(l, "race", "one race more than the %d the settings give", len(f.sched))
		return rl, false
	}
	rl.s = f.sched[i]
	if err := results.DecodeStrict(l.Raw, &rl.o); err != nil {
		f.c.Obs(l, "", "not a claim observation: %v", err)
		return rl, false
	}
	return rl, true
}

// place checks that the line is the race the schedule puts there and that
// it ran on its round's file, and starts a new round at a round's first
// race.
func (f *folder) place(rl raceLine) {
	l, s, o := rl.l, rl.s, rl.o
	f.checkPlace(rl)
	if s.Index == 0 {
		f.cur = round{db: o.DB, base: o.BaseMS}
		key := fmt.Sprintf("%s repetition %d", s.Condition, s.Repetition)
		if other, dup := f.dbs[o.DB]; dup {
			f.c.Obs(l, "db", "%s is also the file of %s; every round starts on a fresh file", o.DB, other)
		}
		f.dbs[o.DB] = key
	} else {
		if o.DB != f.cur.db {
			f.c.Obs(l, "db", "%q, but race A of this round ran on %q; a round's races share one file", o.DB, f.cur.db)
		}
		if o.BaseMS != f.cur.base {
			f.c.Obs(l, "base_ms", "%d, but the round started at %d", o.BaseMS, f.cur.base)
		}
	}
	if !backend.IsTarget(f.st.backendName(), o.DB, DBName) {
		f.c.Obs(l, "db", "%q is not a %s", o.DB, backend.TargetKind(f.st.backendName(), DBName))
	}
	if o.Broken != "" {
		f.c.Obs(l, "broken", "race %s of %s repetition %d: %s; the run stopped at this race", s.Race.Name, s.Condition, s.Repetition, o.Broken)
	}
}

// mutants decides which rounds killed each mutant: a round kills it when
// the outcomes its races showed differ from the TTL claim's oracle.
func mutants(st Settings, perRep map[string][][]RaceOutcome) *MutantTable {
	t := &MutantTable{Repetitions: st.MutantRepetitions, Oracle: fmt.Sprintf("the oracle of the %s claim with boundary %q", wc.TTL, wc.Chosen)}
	for _, m := range st.MutantVariants {
		row := MutantRow{Mutant: m, KilledBy: []string{}, Survived: []string{}, Differences: map[string][]results.Difference{}}
		for _, r := range st.Rounds {
			if !r.hasKind(wc.TTL) {
				continue
			}
			exp := ExpectedGroups(Expect(wc.TTL, r, wc.Chosen, st.params()), st.MutantRepetitions)
			obs := GroupOutcomes(perRep[RoundCondition(r.ID, m)])
			if d := scenario.Differences(exp, obs); len(d) > 0 {
				row.KilledBy = append(row.KilledBy, r.ID)
				row.Differences[r.ID] = d
			} else {
				row.Survived = append(row.Survived, r.ID)
			}
		}
		row.Killed = len(row.KilledBy) > 0
		t.Rows = append(t.Rows, row)
	}
	return t
}

// checkPlace checks that line i is the race the schedule puts there.
func (f *folder) checkPlace(rl raceLine) {
	l, s, o := rl.l, rl.s, rl.o
	checks := []struct {
		field     string
		got, want any
	}{
		{"condition", o.Condition, s.Condition}, {"race", o.Race, s.Seq}, {"round", o.Round, s.Round.ID},
		{"variant", o.Variant, s.By}, {"repetition", o.Repetition, s.Repetition}, {"race_name", o.RaceName, s.Race.Name},
		{"claimed_at_column", o.ClaimedAtColumn, s.Round.Schema == wc.SchemaNew},
	}
	for _, c := range checks {
		if c.got != c.want {
			f.c.Obs(l, c.field, "is %v, but the settings put %v here (race %d: %s repetition %d race %s)", c.got, c.want, s.Seq, s.Condition, s.Repetition, s.Race.Name)
		}
	}
	if s.Race.Pinned && o.StartMS != o.BaseMS {
		f.c.Obs(l, "start_ms", "%d, but race %s pins its clock to the round's start %d", o.StartMS, s.Race.Name, o.BaseMS)
	}
	if o.StartMS < o.BaseMS {
		f.c.Obs(l, "start_ms", "%d is before the round's start %d", o.StartMS, o.BaseMS)
	}
	if o.ReadAtUS < o.ReleasedAtUS {
		f.c.Obs(l, "read_at_us", "%d is before the release at %d", o.ReadAtUS, o.ReleasedAtUS)
	}
}

// readPool reads every process line as a pool member: the worker, its
// command line, environment, exit status and report, and its transcript.
func (f *folder) readPool() {
	labels := map[string]int{}
	for _, p := range f.rec.Processes {
		if p.Worker != wc.PoolWorker || p.Condition != PoolCondition {
			f.c.Proc(p, "worker", "%q for condition %q, but the claim scenario starts only %q members of %q", p.Worker, p.Condition, wc.PoolWorker, PoolCondition)
			continue
		}
		if other, dup := labels[p.Label]; dup {
			f.c.Proc(p, "label", "%q is also process %d's; each member has its own label", p.Label, other)
		}
		labels[p.Label] = p.ID
		if !validMember(p.Label, f.st.PoolSize) {
			f.c.Proc(p, "label", "%q is not one of the %d members %s to %s", p.Label, f.st.PoolSize, MemberLabel(0), MemberLabel(f.st.PoolSize-1))
		}
		f.c.Argv(p, wc.PoolWorker, f.st.PoolArgs(p.Label).Argv())
		f.c.Env(p, map[string]string{})
		if p.ExitCode != protocol.ExitACK || p.Signal != "" {
			f.c.Proc(p, "exit_code", "%s %s; a member that served its races exits 0", p.Label, protocol.Ending(p.ExitCode, p.Signal, p.Stderr))
		}
		rep, ok := f.c.Report(p)
		if !ok {
			continue
		}
		var res wc.PoolResult
		if err := results.DecodeStrict(rep.Result, &res); err != nil {
			f.c.Proc(p, "stdout", "the report's result is not a pool transcript: %v", err)
			continue
		}
		if res.Label != p.Label {
			f.c.Proc(p, "stdout", "the transcript is member %q's, the record says %q", res.Label, p.Label)
		}
		m := &member{p: p, entries: map[int]wc.Entry{}, used: map[int]bool{}}
		for i, e := range res.Races {
			if _, dup := m.entries[e.Request.Race]; dup {
				f.c.Proc(p, fmt.Sprintf("stdout: races[%d].request.race", i), "race %d appears twice; a member serves a race once", e.Request.Race)
			}
			m.entries[e.Request.Race] = e
		}
		f.members[p.ID] = m
	}
	if len(f.rec.Processes) != f.st.PoolSize {
		f.c.Add(results.ProcessesFile, "", "%d processes of scenario claim, but the pool has %d members", len(f.rec.Processes), f.st.PoolSize)
	}
}

func validMember(label string, size int) bool {
	for i := 0; i < size; i++ {
		if MemberLabel(i) == label {
			return true
		}
	}
	return false
}

// unusedEntries reports transcript entries no observation line used: a
// race a member says it ran but the parent never recorded.
func (f *folder) unusedEntries() {
	ids := make([]int, 0, len(f.members))
	for id := range f.members {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		m := f.members[id]
		var races []int
		for r := range m.entries {
			if !m.used[r] {
				races = append(races, r)
			}
		}
		sort.Ints(races)
		for _, r := range races {
			f.c.Proc(m.p, fmt.Sprintf("stdout: race %d", r), "the transcript has a race no observation line records with this process")
		}
	}
}

// tally is what the racers of one race add up to as the fold reads them.
type tally struct {
	out      RaceOutcome
	mark     RaceMarks
	wantPath wc.Path
	wakes    []int64
	// failures counts the race's 40001 and 40P01 retries.
	failures int
}

// served is one racer's entry in its member's transcript, beside the slot
// of the race line that says the member served it.
type served struct {
	rl raceLine
	k  int
	r  Racer
	p  results.Process
	e  wc.Entry
	ef string
}

// race checks one race, derives its outcome into the round, and moves the
// round on.
func (f *folder) race(rl raceLine) {
	s, o := rl.s, rl.o
	t := &tally{
		mark:     RaceMarks{Name: s.Race.Name, EventMS: o.StartMS + s.Race.CallerMS},
		out:      RaceOutcome{Race: s.Race.Name, Workers: len(o.Racers), Paths: map[wc.Path]int{}},
		wantPath: wc.PathUpsert,
	}
	if len(o.Racers) != s.Racers {
		f.c.Obs(rl.l, "racers", "%d racers, but race %s of round %s runs %d", len(o.Racers), s.Race.Name, s.Round.ID, s.Racers)
	}
	switch {
	case s.By == wc.Legacy:
		t.wantPath = wc.PathLegacy
	case !o.ClaimedAtColumn:
		t.wantPath = wc.PathFallback
	}
	seen := map[int]int{}
	for k, r := range o.Racers {
		field := results.Field("racers", k)
		if r.Slot != k {
			f.c.Obs(rl.l, field+".slot", "is %d, want %d", r.Slot, k)
		}
		if other, dup := seen[r.ProcessID]; dup {
			f.c.Obs(rl.l, field+".process_id", "process %d also serves slot %d of this race; the racers of a race are distinct processes", r.ProcessID, other)
			continue
		}
		seen[r.ProcessID] = k
		want := RequestFor(s, k, o.DB, o.StartMS, o.BaseMS)
		for _, d := range results.DiffPaths("", want, r.Request) {
			f.c.Obs(rl.l, field+".request"+d.Path, "is %s, but the settings give %s", d.B, d.A)
		}
		if sv, ok := f.entry(rl, k, r); ok {
			f.racer(sv, t)
		}
	}
	if f.st.ReadCommitted() {
		t.out.SerializationFailures = FailuresNone
		if t.failures > 0 {
			t.out.SerializationFailures = FailuresSome
		}
	}
	if w := t.wakes; len(w) > 1 {
		sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
		f.spreads = append(f.spreads, w[len(w)-1]-w[0])
		f.wake = max(f.wake, w[len(w)-1]-o.ReleasedAtUS)
	}
	f.checkRow(rl, t.mark)
	t.out.Row = Summarize(o.Row, o.ClaimedAtColumn, append(append([]RaceMarks{}, f.cur.marks...), t.mark))
	f.cur.marks = append(f.cur.marks, t.mark)
	f.cur.outcomes = append(f.cur.outcomes, t.out)
	f.cur.prev = o.Row
	if s.Last() {
		f.perRep[s.Condition] = append(f.perRep[s.Condition], f.cur.outcomes)
	}
}

// entry finds the transcript entry of the member that served slot k, and
// marks it used; ok is false, with any finding made, when there is none.
func (f *folder) entry(rl raceLine, k int, r Racer) (served, bool) {
	sv := served{rl: rl, k: k, r: r}
	p, ok := f.c.UseFor(f.rec, rl.l, r.ProcessID, PoolCondition)
	if !ok {
		return sv, false
	}
	m := f.members[p.ID]
	if m == nil {
		return sv, false // its own line is already a finding
	}
	race := rl.o.Race
	e, ok := m.entries[race]
	if !ok {
		f.c.ProcFor(p, rl.s.Condition, "stdout", "the transcript has no race %d, but %s line %d says this process served its slot %d", race, results.ObservationsFile, rl.l.N, k)
		return sv, false
	}
	m.used[race] = true
	sv.p, sv.e, sv.ef = p, e, fmt.Sprintf("stdout: race %d", race)
	return sv, true
}

// racer checks what one racer says it received and did against the
// request the parent sent and the parent's clock, and adds its claim to
// the race's tally.
func (f *folder) racer(sv served, t *tally) {
	p, e, ef, o, s := sv.p, sv.e, sv.ef, sv.rl.o, sv.rl.s
	for _, d := range results.DiffPaths("", sv.r.Request, e.Request) {
		f.c.ProcFor(p, s.Condition, ef+": request"+d.Path, "the member received %s, but the parent sent %s (%s line %d)", d.B, d.A, results.ObservationsFile, sv.rl.l.N)
	}
	if e.SQLite != f.st.SQLite {
		f.c.ProcFor(p, s.Condition, ef+": sqlite", "the connection read back %s, the settings require %s", results.Compact(e.SQLite), results.Compact(f.st.SQLite))
	} else if f.rb == nil && f.st.Postgres == nil {
		rb := e.SQLite
		f.rb = &rb
	}
	if msg := backend.CheckReadBack(f.st.Postgres, e.Postgres); msg != "" {
		f.c.ProcFor(p, s.Condition, ef+": postgres", "%s", msg)
	} else if f.pgRB == nil {
		f.pgRB = e.Postgres
	}
	if !(e.ReadyAtUS <= o.ReleasedAtUS && o.ReleasedAtUS <= e.ReleasedAtUS && e.ReleasedAtUS <= o.ReadAtUS) {
		f.c.ProcFor(p, s.Condition, ef+": released_at_us", "ready at %d and released at %d, but the parent released the race at %d and read the row at %d; a racer is ready before the release and wakes after it", e.ReadyAtUS, e.ReleasedAtUS, o.ReleasedAtUS, o.ReadAtUS)
	}
	t.wakes = append(t.wakes, e.ReleasedAtUS)
	f.checkNow(sv)
	oc := e.Outcome
	f.claimError(sv)
	// Which statement decided a user's claim is the statement's behaviour,
	// which the oracle judges; for the shipped claims it is the worker's.
	if oc.Path != t.wantPath && s.By != wc.User {
		f.c.ProcFor(p, s.Condition, ef+": outcome.path", "%q, but a %s claim on a table %s takes %q", oc.Path, s.By, map[bool]string{true: "with claimed_at", false: "without claimed_at"}[o.ClaimedAtColumn], t.wantPath)
	}
	if oc.Won != (oc.Changes == 1) || oc.Changes < 0 || oc.Changes > 1 {
		f.c.ProcFor(p, s.Condition, ef+": outcome.won", "%v with %d changes; a claim wins when its statement changes one row", oc.Won, oc.Changes)
	}
	wantFollow := oc.Won && s.Race.FollowUp
	if e.FollowedUp != wantFollow || (wantFollow && e.ExternalID != wc.ExternalIDFor(sv.r.Request.Label)) || (!wantFollow && e.ExternalID != "") {
		f.c.ProcFor(p, s.Condition, ef+": followed_up", "%v with external id %q; only a winner of a follow-up race follows up, writing %q", e.FollowedUp, e.ExternalID, wc.ExternalIDFor(sv.r.Request.Label))
	}
	t.out.Paths[oc.Path]++
	f.busy[s.Condition] += e.BusyRetries
	f.ser[s.Condition] += e.SerializationRetries
	f.dead[s.Condition] += e.DeadlockRetries
	t.failures += e.SerializationRetries + e.DeadlockRetries
	if oc.Won {
		t.out.Winners++
		t.mark.WinnerNows = append(t.mark.WinnerNows, oc.NowMS)
		if e.FollowedUp {
			t.mark.ExternalIDs = append(t.mark.ExternalIDs, e.ExternalID)
		}
	}
}

// claimError keeps the first error of the user's statement per condition:
// only that statement's failure is a result, with PathError.
func (f *folder) claimError(sv served) {
	e, s := sv.e, sv.rl.s
	failed := e.Outcome.Path == wc.PathError
	if failed != (e.ClaimError != "") || (failed && s.By != wc.User) {
		f.c.ProcFor(sv.p, s.Condition, sv.ef+": claim_error", "%q with path %q and claim %s; only the user's statement's failure is recorded, with path %q", e.ClaimError, e.Outcome.Path, s.By, wc.PathError)
		return
	}
	if failed && f.claimErrs[s.Condition] == "" {
		f.claimErrs[s.Condition] = e.ClaimError
	}
}

// checkNow checks the now a racer says it claimed with against the
// request and the parent's clock around the race.
func (f *folder) checkNow(sv served) {
	p, ef, req, o := sv.p, sv.ef, sv.r.Request, sv.rl.o
	now := sv.e.Outcome.NowMS
	switch {
	case sv.rl.s.By == wc.MutantCallerTime:
		if now != req.EventMS {
			f.c.ProcFor(p, sv.rl.s.Condition, ef+": outcome.now_ms", "%d, but %s takes now from the caller's timestamp %d", now, sv.rl.s.By, req.EventMS)
		}
	case req.NowMS != wc.NoPin:
		if now != req.NowMS {
			f.c.ProcFor(p, sv.rl.s.Condition, ef+": outcome.now_ms", "%d, but the request pins the clock to %d", now, req.NowMS)
		}
	default:
		clock := now - req.ClockOffsetMS
		lo, hi := o.ReleasedAtUS/1000, (o.ReadAtUS+999)/1000
		if clock < lo || clock > hi {
			f.c.ProcFor(p, sv.rl.s.Condition, ef+": outcome.now_ms", "%d less the offset %d is %d, outside the race's window %d to %d by the parent's clock", now, req.ClockOffsetMS, clock, lo, hi)
		}
	}
}

// checkRow checks the row the parent read against the racers' claims:
// every win adds one to count, no win leaves the row as it was, a win
// stamps the race's event time and, through the upsert, a winner's now,
// and only a follow-up race's winner writes the downstream fields.
func (f *folder) checkRow(rl raceLine, mark RaceMarks) {
	l, s, o, prev := rl.l, rl.s, rl.o, f.cur.prev
	row := o.Row
	winners := len(mark.WinnerNows)
	if row != nil {
		ident := []struct{ field, got, want string }{
			{"fingerprint", row.Fingerprint, f.st.Fingerprint}, {"source", row.Source, f.st.Source},
			{"level", row.Level, f.st.Level}, {"message", row.Message, f.st.Message},
		}
		for _, c := range ident {
			if c.got != c.want {
				f.c.Obs(l, "row."+c.field, "is %q, but every racer claims %q", c.got, c.want)
			}
		}
		if row.HasClaimedAt != o.ClaimedAtColumn {
			f.c.Obs(l, "row.has_claimed_at_column", "is %v, but claimed_at_column is %v", row.HasClaimedAt, o.ClaimedAtColumn)
		}
	}
	var before, after int64
	if prev != nil {
		before = prev.Count
	}
	if row != nil {
		after = row.Count
	}
	if after-before != int64(winners) {
		f.c.Obs(l, "row.count", "race %s: %d racers reported a win, but count went %d → %d; every win adds one", s.Race.Name, winners, before, after)
	}
	if winners == 0 {
		for _, d := range results.DiffPaths("row", prev, row) {
			f.c.Obs(l, d.Path, "changed from %s to %s, but no racer says it won", d.A, d.B)
		}
		return
	}
	if row == nil {
		f.c.Obs(l, "row", "is missing, but %d racers say they won", winners)
		return
	}
	if prev == nil && row.FirstSeen != mark.EventMS {
		f.c.Obs(l, "row.first_seen", "is %d, but the row was inserted by this race, whose event time is %d", row.FirstSeen, mark.EventMS)
	}
	if prev != nil && row.FirstSeen != prev.FirstSeen {
		f.c.Obs(l, "row.first_seen", "changed from %d to %d; a re-claim keeps first_seen", prev.FirstSeen, row.FirstSeen)
	}
	if row.LastSeen != mark.EventMS {
		f.c.Obs(l, "row.last_seen", "is %d, but a winner of this race stamps its event time %d", row.LastSeen, mark.EventMS)
	}
	switch {
	case s.By == wc.Legacy || !o.ClaimedAtColumn:
		if prev != nil {
			f.c.Obs(l, "row.count", "grew, but the DO NOTHING claim only wins by inserting the row")
		}
		if row.ClaimedAt != nil {
			f.c.Obs(l, "row.claimed_at", "is %d, but the DO NOTHING claim does not write it", *row.ClaimedAt)
		}
	case row.ClaimedAt == nil || !containsInt64(mark.WinnerNows, *row.ClaimedAt):
		f.c.Obs(l, "row.claimed_at", "is %s, but the winners of this race say they claimed at %v", results.Compact(row.ClaimedAt), mark.WinnerNows)
	}
	if s.Race.FollowUp {
		if row.Classification == nil || *row.Classification != f.st.Classification {
			f.c.Obs(l, "row.classification", "is %s, but a winner of this follow-up race writes %q", results.Compact(row.Classification), f.st.Classification)
		}
		if row.ExternalID == nil || !containsString(mark.ExternalIDs, *row.ExternalID) {
			f.c.Obs(l, "row.external_id", "is %s, but the winners of this race say they wrote %v", results.Compact(row.ExternalID), mark.ExternalIDs)
		}
		return
	}
	var pc, pe *string
	if prev != nil {
		pc, pe = prev.Classification, prev.ExternalID
	}
	for _, d := range results.DiffPaths("row.classification", pc, row.Classification) {
		f.c.Obs(l, d.Path, "changed from %s to %s, but this race writes no downstream field", d.A, d.B)
	}
	for _, d := range results.DiffPaths("row.external_id", pe, row.ExternalID) {
		f.c.Obs(l, d.Path, "changed from %s to %s, but this race writes no downstream field", d.A, d.B)
	}
}

func (f *folder) release() ReleaseStats {
	r := ReleaseStats{Races: len(f.spreads), MaxWakeUS: f.wake}
	if len(f.spreads) == 0 {
		return r
	}
	s := append([]int64{}, f.spreads...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	r.MedianSpreadUS, r.MaxSpreadUS = s[len(s)/2], s[len(s)-1]
	return r
}
