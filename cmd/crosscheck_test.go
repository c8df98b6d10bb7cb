package cmd

// The cross-check of issue 19 (section 4) and issue 20: the shipped
// pattern files and Python handlers of articles 000 and 003 are a second,
// independent implementation of what explore's and durability's
// hand-written workers do. Put through the same faults, the two must agree
// on which crash points violate, on which power cuts lose or duplicate
// work, and on whether races break the pattern. Two implementations that
// agree are the evidence that the pattern engine is right.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/durability"
	"idemlab/experiments/explore"
	"idemlab/experiments/pattern"
	"idemlab/experiments/results"
	we "idemlab/worker/explore"
	"idemlab/worker/faultvfs"
	wp "idemlab/worker/pattern"
	wr "idemlab/worker/redelivery"
)

const handlers = "../testdata/handlers/"

// exploreClaim is explore's name of its claiming worker's pattern.
const exploreClaim = "claim-ttl"

// The races. Every implementation races crossRacers deliveries of one
// event, in batches of rounds without faults and as many with them (the
// pattern crashes racers at seeded points, explore kills them after seeded
// delays). Three racers find the separate-commit duplicate in the fewest
// processes: explore's two-racer rounds without kills almost never show it
// (1 in 110). Measured over ten runs of this test under -race, per round:
// explore showed it in 8 of 132 rounds without kills and 9 of 132 with
// them, the pattern file in 7 of 80 and 35 of 80, the Python handler in 3
// of 80 and 15 of 80. A batch then misses it about 1 time in 5 for
// explore (it did in 1 of the 10 runs), 1 in 250 for the file and 1 in 8
// for Python.
const (
	crossRacers   = 3
	exploreRounds = 12
	patternRounds = 8
)

// sameState maps each of a hand-written worker's named points to the step
// points of the pattern file at which the same writes are committed. The
// first step point is the one at the worker's point in the code; the
// others are the points around it where nothing more is committed, so a
// crash there leaves the file the same. Every point either side discovers
// must be in it: a worker or a pattern that gains a point fails the test
// until the mapping says where the point goes.
type sameState []struct {
	worker string
	steps  []string
}

// The mappings. Step points are before-N-KIND and after-N-KIND of the
// files' handler steps.
var (
	// testdata/patterns/separate-commit.json: 1 begin, 2 query (stop if
	// processed), 3 exec job, 4 commit, 5 begin, 6 exec processed, 7 commit.
	separateCommitSteps = sameState{
		{wr.PointAfterJobInsert, []string{"after-3-exec", "before-1-begin", "after-1-begin", "before-2-query", "after-2-query", "before-3-exec", "before-4-commit"}},
		{wr.PointAfterJobCommit, []string{"after-4-commit", "before-5-begin", "after-5-begin", "before-6-exec", "after-6-exec", "before-7-commit"}},
		{wr.PointAfterProcessedCommit, []string{"after-7-commit"}},
	}
	// testdata/patterns/single-transaction.json: 1 begin, 2 exec INSERT …
	// ON CONFLICT DO NOTHING processed (stop unless changed), 3 exec job,
	// 4 commit.
	singleTransactionSteps = sameState{
		{wr.PointAfterProcessedInsert, []string{"after-2-exec", "before-1-begin", "after-1-begin", "before-2-exec", "before-3-exec"}},
		{wr.PointBeforeCommit, []string{"before-4-commit", "after-3-exec"}},
		{wr.PointAfterCommit, []string{"after-4-commit"}},
	}
	// testdata/patterns/claim-ttl.json against explore's claiming worker,
	// which explore's sweep and durability's claim-ttl both run: 1 exec
	// the TTL claim (stop unless changed), 2 exec the incident. The
	// worker's schema-ready is after its own CREATE TABLE, which the
	// pattern's harness runs before the first delivery.
	claimTTLSteps = sameState{
		{we.PointClaimSchema, []string{"before-1-exec"}},
		{we.PointClaimed, []string{"after-1-exec", "before-2-exec"}},
		{we.PointClaimFollowUp, []string{"after-2-exec"}},
	}
	// The Python handlers announce the workers' own names; the
	// single-transaction one first announces "ready", its barrier, before
	// anything is written.
	separateCommitPython = sameState{
		{wr.PointAfterJobInsert, []string{wr.PointAfterJobInsert}},
		{wr.PointAfterJobCommit, []string{wr.PointAfterJobCommit}},
		{wr.PointAfterProcessedCommit, []string{wr.PointAfterProcessedCommit}},
	}
	singleTransactionPython = sameState{
		{wr.PointAfterProcessedInsert, []string{wr.PointAfterProcessedInsert, wp.PointReady}},
		{wr.PointBeforeCommit, []string{wr.PointBeforeCommit}},
		{wr.PointAfterCommit, []string{wr.PointAfterCommit}},
	}
)

// carry checks that m covers exactly the points both sides discovered and
// returns each step point's worker point.
func (m sameState) carry(t *testing.T, what string, workerPoints, stepPoints []string) map[string]string {
	t.Helper()
	workerOf := map[string]string{}
	var workers []string
	for _, c := range m {
		workers = append(workers, c.worker)
		for _, s := range c.steps {
			workerOf[s] = c.worker
		}
	}
	if diff := cmp.Diff(sortedSet(workers), sortedSet(workerPoints)); diff != "" {
		t.Errorf("%s: the mapping's worker points are not the ones the worker passed (-mapping +discovered):\n%s", what, diff)
	}
	var steps []string
	for s := range workerOf {
		steps = append(steps, s)
	}
	if diff := cmp.Diff(sortedSet(steps), sortedSet(stepPoints)); diff != "" {
		t.Errorf("%s: the mapping's step points are not the ones the pattern passed (-mapping +discovered):\n%s", what, diff)
	}
	return workerOf
}

func sortedSet(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

// crossRun runs one scenario through the command and reads its result
// back from the folder's results.json. A run whose fold found
// contradictions in its own records is no evidence, so it stops the test;
// a failed expectation (exit 1) is a verdict like any other here.
func crossRun(t *testing.T, name string, args ...string) results.ScenarioResult {
	t.Helper()
	out := filepath.Join(t.TempDir(), "results")
	r := execIn(t, Hooks{}, append([]string{"experiment", "--quiet", "--scenario", name, "--out", out}, args...)...)
	if r.code != 0 && r.code != 1 {
		t.Fatalf("%s %s: exit %d:\n%s%s", name, strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res results.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("%s results.json: %v", name, err)
	}
	for _, s := range res.Scenarios {
		if s.Name != name {
			continue
		}
		if f := s.AllFindings(); len(f) > 0 {
			t.Fatalf("%s %s: the fold found contradictions, so its figures are no evidence: %v", name, strings.Join(args, " "), f)
		}
		return s
	}
	t.Fatalf("%s: no such scenario in results.json", name)
	return results.ScenarioResult{}
}

// decodeAs decodes one JSON value of a result into v.
func decodeAs(t *testing.T, what string, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// observedOf decodes the observed value of the named condition.
func observedOf(t *testing.T, s results.ScenarioResult, name string, v any) {
	t.Helper()
	for _, c := range s.Conditions {
		if c.Name == name {
			decodeAs(t, s.Name+" "+name, c.Observed, v)
			return
		}
	}
	t.Fatalf("%s has no condition %s", s.Name, name)
}

// patternRun is one pattern file's run as the cross-check reads it.
type patternRun struct {
	settings pattern.Settings
	extra    pattern.PatternExtra
}

func readPatternRun(t *testing.T, s results.ScenarioResult) patternRun {
	t.Helper()
	var p patternRun
	var x pattern.Extra
	decodeAs(t, "pattern settings", s.Settings, &p.settings)
	decodeAs(t, "pattern extra", s.Extra, &x)
	if len(x.Patterns) != 1 {
		t.Fatalf("pattern extra: %d patterns, want 1", len(x.Patterns))
	}
	p.extra = x.Patterns[0]
	return p
}

// condition is the pattern's condition of one fault class, or of one
// power setting.
func (p patternRun) condition(t *testing.T, fault, power string) pattern.ConditionExtra {
	t.Helper()
	for _, c := range p.extra.Conditions {
		if c.Fault == fault && c.Power == power {
			return c
		}
	}
	t.Fatalf("pattern %s has no %s %s condition", p.extra.Name, fault, power)
	return pattern.ConditionExtra{}
}

// violatingPoints names the points of a points or power condition's
// violating trials: trial i is the i-th discovered point, or for power the
// i-th cut of the power plan, of which only the drop model's are
// durability's (its oracle's model): the cuts at the points, after the ACK
// and at ack-open.
func (p patternRun) violatingPoints(c pattern.ConditionExtra) map[string]bool {
	out := map[string]bool{}
	if c.Fault != wp.FaultPower {
		for _, i := range c.ViolatingTrials {
			out[p.extra.Points[i]] = true
		}
		return out
	}
	plan := pattern.PowerPlan(p.extra.Points, false)
	for _, i := range c.ViolatingTrials {
		if plan[i].Model == faultvfs.FaultDrop {
			out[plan[i].Point] = true
		}
	}
	return out
}

func requirePython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skipf("skipped: python3 is not on PATH (%v), so the Python handlers cannot run", err)
	}
}

// raceTally counts one implementation's race rounds of one pattern:
// without faults, and with them (crashing racers in a pattern run, killed
// ones in explore's).
type raceTally struct {
	plain, plainBroke, faulty, faultyBroke int
}

func (a raceTally) add(b raceTally) raceTally {
	return raceTally{a.plain + b.plain, a.plainBroke + b.plainBroke, a.faulty + b.faulty, a.faultyBroke + b.faultyBroke}
}

func (a raceTally) broke() bool { return a.plainBroke+a.faultyBroke > 0 }

func (a raceTally) String() string {
	return fmt.Sprintf("%d of %d rounds without faults and %d of %d with faults broke an invariant", a.plainBroke, a.plain, a.faultyBroke, a.faulty)
}

// exploreRaces reads explore's race rounds of one pattern.
func exploreRaces(t *testing.T, s results.ScenarioResult, pat string) raceTally {
	t.Helper()
	var out raceTally
	for _, kills := range []bool{false, true} {
		name := fmt.Sprintf("%s/%s-%d", pat, explore.KindRace, crossRacers)
		if kills {
			name += "-kill"
		}
		var o explore.TimingObserved
		observedOf(t, s, name, &o)
		if kills {
			out.faulty, out.faultyBroke = o.Trials, o.Timing.ViolatingTrials
		} else {
			out.plain, out.plainBroke = o.Trials, o.Timing.ViolatingTrials
		}
	}
	return out
}

// races reads a pattern run's concurrent class, telling the rounds with
// crashing racers from those without by the run's own race plan.
func (p patternRun) races(t *testing.T) raceTally {
	t.Helper()
	c := p.condition(t, wp.FaultConcurrent, "")
	plan := pattern.RacePlan(p.settings, c.Name, len(p.extra.Points))
	var out raceTally
	for _, r := range plan {
		if r.CrashK == nil {
			out.plain++
		} else {
			out.faulty++
		}
	}
	for _, i := range c.ViolatingTrials {
		if plan[i].CrashK == nil {
			out.plainBroke++
		} else {
			out.faultyBroke++
		}
	}
	return out
}

// untilBroken runs batches of races, the first with the rest of the run,
// each later one with the next seed, until the tally of the known unsafe
// pattern shows a violation or maxBatches ran. A verdict of "any
// violation in the rounds" is the same as after all the batches at once:
// only rounds that could not change it are left out.
func untilBroken(t *testing.T, maxBatches int, batch func(i int) raceTally) raceTally {
	t.Helper()
	var sum raceTally
	for i := 0; i < maxBatches && !sum.broke(); i++ {
		sum = sum.add(batch(i))
	}
	return sum
}

// crossRuns are every run the comparisons read, made once.
type crossRuns struct {
	explore                 results.ScenarioResult
	durability              []results.ScenarioResult
	separate, single, claim patternRun
	pySeparate, pySingle    *patternRun
	// races are each implementation's race rounds, by pattern.
	races map[string]map[string]raceTally
}

// At most this many batches are run, so the known unsafe pattern misses
// in all of them about 1 time in 3,000 (explore's 60 rounds), in 4,000
// (Python's 32) and far less for the file.
const (
	exploreBatches = 5
	patternBatches = 4
)

// TestCrossCheck runs the hand-written workers (explore, durability) and
// the pattern files and Python handlers on the same faults, then compares
// them: sweep points, power cells, races.
func TestCrossCheck(t *testing.T) {
	in := filepath.Join(t.TempDir(), "input.json")
	section := fmt.Sprintf(`{
  "explore": {"event_id": "evt-1", "job_key": "review-evt-1", "seed": 1, "trials": 0, "racers": [%d], "rounds": %d, "parallel": 2, "max_attempts": 3, "items": 1},
  "pattern": {"racers": [%d], "rounds": %d, "parallel": 2}
}`, crossRacers, exploreRounds, crossRacers, patternRounds)
	if err := os.WriteFile(in, []byte(section), 0o644); err != nil {
		t.Fatal(err)
	}
	r := crossRuns{races: map[string]map[string]raceTally{string(wr.SeparateCommit): {}, string(wr.SingleTransaction): {}}}
	var mu sync.Mutex
	tally := func(pat, impl string, x raceTally) {
		mu.Lock()
		defer mu.Unlock()
		r.races[pat][impl] = x
	}
	sep, single := string(wr.SeparateCommit), string(wr.SingleTransaction)
	t.Run("runs", func(t *testing.T) {
		t.Run("explore", func(t *testing.T) {
			t.Parallel()
			var other raceTally
			x := untilBroken(t, exploreBatches, func(i int) raceTally {
				s := crossRun(t, explore.Name, "--input", in, "--seed", fmt.Sprint(i+1))
				if i == 0 {
					r.explore = s
				}
				other = other.add(exploreRaces(t, s, single))
				return exploreRaces(t, s, sep)
			})
			tally(sep, "explore", x)
			tally(single, "explore", other)
		})
		t.Run("durability", func(t *testing.T) {
			t.Parallel()
			// Two runs, since durability crosses its lists: the four
			// settings the pattern files run by default.
			for _, set := range [][2]string{{"DELETE", "FULL,EXTRA"}, {"WAL", "NORMAL,FULL"}} {
				r.durability = append(r.durability, crossRun(t, durability.Name, "--input", in, "--kind", durability.KindPower,
					"--pattern", strings.Join([]string{durability.PatternSeparate, durability.PatternSingle, durability.PatternClaim}, ","),
					"--journal-mode", set[0], "--synchronous", set[1]))
			}
		})
		t.Run("patterns", func(t *testing.T) {
			t.Parallel()
			r.claim = readPatternRun(t, crossRun(t, pattern.Name, "--input", in, "--pattern-file", patterns+"claim-ttl.json", "--faults", "points,power"))
			r.single = readPatternRun(t, crossRun(t, pattern.Name, "--input", in, "--pattern-file", patterns+"single-transaction.json", "--faults", "points,concurrent,power"))
			tally(single, "pattern file", r.single.races(t))
			tally(sep, "pattern file", untilBroken(t, patternBatches, func(i int) raceTally {
				if i == 0 {
					r.separate = readPatternRun(t, crossRun(t, pattern.Name, "--input", in, "--pattern-file", patterns+"separate-commit.json", "--faults", "points,concurrent,power"))
					return r.separate.races(t)
				}
				return readPatternRun(t, crossRun(t, pattern.Name, "--input", in, "--pattern-file", patterns+"separate-commit.json", "--faults", "concurrent", "--seed", fmt.Sprint(i+1))).races(t)
			}))
		})
		t.Run("python", func(t *testing.T) {
			t.Parallel()
			requirePython(t)
			p := readPatternRun(t, crossRun(t, pattern.Name, "--input", in, "--pattern-file", handlers+"single-transaction.json", "--faults", "points,concurrent"))
			r.pySingle = &p
			tally(single, "Python handler", p.races(t))
			tally(sep, "Python handler", untilBroken(t, patternBatches, func(i int) raceTally {
				faults := "points,concurrent"
				if i > 0 {
					faults = "concurrent"
				}
				p := readPatternRun(t, crossRun(t, pattern.Name, "--input", in, "--pattern-file", handlers+"separate-commit.json", "--faults", faults, "--seed", fmt.Sprint(i+1)))
				if i == 0 {
					r.pySeparate = &p
				}
				return p.races(t)
			}))
		})
	})
	if t.Failed() {
		t.FailNow()
	}
	t.Run("sweep", func(t *testing.T) { crossSweep(t, r) })
	t.Run("power", func(t *testing.T) { crossPower(t, r) })
	t.Run("concurrency", func(t *testing.T) { crossConcurrency(t, r) })
}

// crossSweep: the points at which a crash (then redeliveries) breaks an
// invariant agree between explore's sweep of the hand-written worker and
// the pattern file's points class, through the mapping.
func crossSweep(t *testing.T, r crossRuns) {
	cases := []struct {
		worker string
		run    *patternRun
		m      sameState
	}{
		{string(wr.SeparateCommit), &r.separate, separateCommitSteps},
		{string(wr.SingleTransaction), &r.single, singleTransactionSteps},
		{exploreClaim, &r.claim, claimTTLSteps},
		{string(wr.SeparateCommit), r.pySeparate, separateCommitPython},
		{string(wr.SingleTransaction), r.pySingle, singleTransactionPython},
	}
	for _, tc := range cases {
		if tc.run == nil {
			t.Logf("%s: the Python handler was skipped: python3 is not on PATH", tc.worker)
			continue
		}
		name := tc.worker + " vs " + tc.run.extra.Name
		var sw explore.SweepObserved
		observedOf(t, r.explore, tc.worker+"/"+explore.KindSweep, &sw)
		workerOf := tc.m.carry(t, name, sw.Points, tc.run.extra.Points)
		workerBad := map[string]bool{}
		for _, p := range sw.ViolatingPoints {
			workerBad[p] = true
		}
		stepBad := tc.run.violatingPoints(tc.run.condition(t, wp.FaultPoints, ""))
		want, got := map[string]bool{}, map[string]bool{}
		for s, w := range workerOf {
			want[s+" ~ "+w] = workerBad[w]
			got[s+" ~ "+w] = stepBad[s]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: the violating crash points disagree (step ~ worker point: -explore's worker +the pattern):\n%s", name, diff)
		}
		t.Logf("%s: worker violates at %v, pattern at %v", name, sw.ViolatingPoints, sortedKeys(stepBad))
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Durability's tags that a pattern file's invariants can see. The
// redelivery files count jobs and processed records after the last
// delivery, so they see two jobs (duplicate), none (missing) and an ACKed
// row lost to a cut after the ACK, which no delivery redoes in a pattern
// trial (lost-acked). The claim-ttl file counts incidents only, written by
// an upsert and redelivered after the TTL: it cannot see a claim lost to
// the cut (lost-claim), a second winner inside the TTL (duplicate: its
// redelivery is never inside it), or committed downstream writes lost and
// redone (lost-downstream). The README's pattern section says so.
var (
	// durabilityACKs are durability's cuts after a worker reported
	// success. A pattern delivery closes its connection before it ACKs, as
	// durability's "ack" worker does, and its "ack-open" cut is
	// durability's (the worker cut with its connection open); "ack-reader"
	// (another connection open) has no pattern counterpart.
	durabilityACKs    = []string{durability.PointACK, durability.PointACKOpen, durability.PointACKReader}
	redeliveryVisible = []string{durability.TagDuplicate, durability.TagMissing, durability.TagLostAcked, durability.TagCorrupt, durability.TagError}
	claimVisible      = []string{durability.TagMissing, durability.TagLostAcked, durability.TagCorrupt, durability.TagError}
)

// durabilityCells reads durability's power cells of one pattern: setting
// ("MODE/SYNC") → point → whether the outcome has a visible tag, and the
// outcome itself. It reads only each condition's name fields and each
// trial's outcome, so changes elsewhere in durability's output do not
// touch it.
func durabilityCells(t *testing.T, runs []results.ScenarioResult, pat string, visible []string) (map[string]map[string]bool, map[string]map[string]string) {
	t.Helper()
	breaks, outcomes := map[string]map[string]bool{}, map[string]map[string]string{}
	for _, s := range runs {
		var st struct {
			Conditions []struct {
				Name, Pattern, Kind string
				JournalMode         string `json:"journal_mode"`
				Synchronous         string `json:"synchronous"`
			} `json:"conditions"`
		}
		decodeAs(t, "durability settings", s.Settings, &st)
		for _, c := range st.Conditions {
			if c.Pattern != pat || c.Kind != durability.KindPower {
				continue
			}
			var trials map[string]struct {
				Outcome string `json:"outcome"`
			}
			observedOf(t, s, c.Name, &trials)
			set := c.JournalMode + "/" + c.Synchronous
			breaks[set], outcomes[set] = map[string]bool{}, map[string]string{}
			for pt, tr := range trials {
				outcomes[set][pt] = tr.Outcome
				for _, tag := range strings.Split(tr.Outcome, "+") {
					breaks[set][pt] = breaks[set][pt] || slices.Contains(visible, tag)
				}
			}
		}
	}
	return breaks, outcomes
}

// crossPower: for every power setting the pattern file ran, and every cut
// point carried through the mapping (and the cut after the ACK), the
// pattern breaks an invariant exactly where durability's outcome has a tag
// the pattern's invariants can see.
func crossPower(t *testing.T, r crossRuns) {
	cases := []struct {
		durPattern string
		run        patternRun
		m          sameState
		visible    []string
	}{
		{durability.PatternSeparate, r.separate, separateCommitSteps, redeliveryVisible},
		{durability.PatternSingle, r.single, singleTransactionSteps, redeliveryVisible},
		{durability.PatternClaim, r.claim, claimTTLSteps, claimVisible},
	}
	for _, tc := range cases {
		name := tc.durPattern + " vs " + tc.run.extra.Name
		breaks, outcomes := durabilityCells(t, r.durability, tc.durPattern, tc.visible)
		want, got := map[string]bool{}, map[string]bool{}
		for _, c := range tc.run.extra.Conditions {
			if c.Fault != wp.FaultPower {
				continue
			}
			cells, ok := breaks[c.Power]
			if !ok {
				t.Errorf("%s: durability did not run %s", name, c.Power)
				continue
			}
			var workerPoints []string
			for pt := range cells {
				if !slices.Contains(durabilityACKs, pt) {
					workerPoints = append(workerPoints, pt)
				}
			}
			workerOf := tc.m.carry(t, name+" "+c.Power, workerPoints, tc.run.extra.Points)
			workerOf[pattern.PointACK] = durability.PointACK
			if _, ok := cells[durability.PointACKOpen]; ok {
				workerOf[pattern.PointACKOpen] = durability.PointACKOpen
			}
			bad := tc.run.violatingPoints(c)
			for s, w := range workerOf {
				k := fmt.Sprintf("%s %s ~ %s (%s)", c.Power, s, w, outcomes[c.Power][w])
				want[k], got[k] = cells[w], bad[s]
			}
		}
		if len(want) == 0 {
			t.Errorf("%s: no power cell was compared", name)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: the power cells disagree (setting step ~ worker point (durability's outcome): -durability +the pattern):\n%s", name, diff)
		}
	}
}

// crossConcurrency: whether any round of races breaks an invariant
// agrees between explore's races of the hand-written worker, the pattern
// file's concurrent class and the Python handler; the pattern known unsafe
// under races (explore admits duplicates only for separate commits, and
// the file lists "concurrent") shows it in every one of them.
func crossConcurrency(t *testing.T, r crossRuns) {
	for _, tc := range []struct {
		pat    string
		unsafe bool
	}{{string(wr.SeparateCommit), true}, {string(wr.SingleTransaction), false}} {
		want, got := map[string]bool{}, map[string]bool{}
		for impl, x := range r.races[tc.pat] {
			want[impl], got[impl] = tc.unsafe, x.broke()
			t.Logf("%s, %d racers, %s: %s", tc.pat, crossRacers, impl, x)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: whether a race broke an invariant (-%v in every implementation +seen):\n%s", tc.pat, tc.unsafe, diff)
		}
	}
}
