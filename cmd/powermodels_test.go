package cmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"idemlab/experiments/pattern"
	"idemlab/experiments/results"
	"idemlab/experiments/seed"
	"idemlab/worker/faultvfs"
)

// patternObservations reads a pattern folder's observations.
func patternObservations(t *testing.T, dir string) []pattern.Observation {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "observations.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []pattern.Observation
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var o pattern.Observation
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

// patternResult reads the pattern scenario's result from a folder; the
// fold must have found no contradiction.
func patternResult(t *testing.T, dir string) results.ScenarioResult {
	t.Helper()
	for _, s := range readResults(t, dir).Scenarios {
		if s.Name == pattern.Name {
			if f := s.AllFindings(); len(f) > 0 {
				t.Fatalf("the fold found contradictions: %v", f)
			}
			return s
		}
	}
	t.Fatalf("%s has no pattern scenario", dir)
	return results.ScenarioResult{}
}

// TestPatternPowerModels runs separate-commit's points and power classes
// under WAL/NORMAL and WAL/FULL and checks each power row against what its
// model says:
//   - keep leaves every write, as a process crash does, so its cut at each
//     point breaks exactly where the points class's crash there breaks;
//   - under WAL/NORMAL, where no commit syncs the WAL, drop held at some
//     point where keep broke: the drop row alone read as safe;
//   - ack-open, the ACK with the connection open: under WAL/NORMAL the drop
//     cut loses the ACKed commits (no close, no checkpoint, so no sync);
//     under WAL/FULL every commit synced, so it loses nothing;
//   - each setting's verdict is the worst of its models, and torn cuts
//     carry the seed the settings give for their trial.
func TestPatternPowerModels(t *testing.T) {
	t.Parallel()
	file := patternFile(t, "separate-commit", func(m map[string]any) {
		m["power"] = []any{"WAL/NORMAL", "WAL/FULL"}
		m["known_unsafe"] = []any{"points", "power"}
	})
	r, out := runPattern(t, file, "--faults", "points,power")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0:\n%s%s", r.code, r.stdout, r.stderr)
	}
	s := patternResult(t, out)
	run := readPatternRun(t, s)
	points := run.extra.Points
	crashBroke := map[string]bool{}
	for _, i := range run.condition(t, "points", "").ViolatingTrials {
		crashBroke[points[i]] = true
	}
	if len(crashBroke) == 0 {
		t.Fatalf("the points class broke nowhere; separate-commit duplicates after its first commit")
	}
	plan := pattern.PowerPlan(points, false)
	for _, setting := range []string{"WAL/NORMAL", "WAL/FULL"} {
		c := run.condition(t, "power", setting)
		if got := len(c.Models); got != len(pattern.PowerModels) {
			t.Fatalf("%s: %d model rows, want %d", setting, got, len(pattern.PowerModels))
		}
		broke := map[string]map[string]bool{}
		worst := false
		for _, m := range c.Models {
			worst = worst || m.Violated
			broke[m.Model] = map[string]bool{}
		}
		for _, i := range c.ViolatingTrials {
			broke[plan[i].Model][plan[i].Point] = true
		}
		var observed pattern.Verdict
		observedOf(t, s, run.extra.Name+"/power:"+setting, &observed)
		if observed.Violated != worst || (c.Violating > 0) != worst {
			t.Errorf("%s: verdict violated=%v, the models' worst is %v", setting, observed.Violated, worst)
		}
		for _, pt := range points {
			if broke[faultvfs.FaultKeep][pt] != crashBroke[pt] {
				t.Errorf("%s: keep cut at %s broke=%v, the crash there broke=%v", setting, pt, broke[faultvfs.FaultKeep][pt], crashBroke[pt])
			}
		}
		heldWhereKeepBroke := slices.ContainsFunc(points, func(pt string) bool {
			return broke[faultvfs.FaultKeep][pt] && !broke[faultvfs.FaultDrop][pt]
		})
		if setting == "WAL/NORMAL" && !heldWhereKeepBroke {
			t.Errorf("%s: drop broke wherever keep did (%v, %v); with no WAL sync before the close, drop loses the first commit", setting, broke[faultvfs.FaultDrop], broke[faultvfs.FaultKeep])
		}
		if got, want := broke[faultvfs.FaultDrop][pattern.PointACKOpen], setting == "WAL/NORMAL"; got != want {
			t.Errorf("%s: drop cut at ack-open broke=%v, want %v (the ACKed commits are synced only under FULL)", setting, got, want)
		}
	}
	for _, o := range patternObservations(t, out) {
		if o.Kind != pattern.KindPower {
			continue
		}
		if o.Model == "" || o.Recovery == nil || o.Recovery.Fault != o.Model {
			t.Errorf("%s trial %d: model %q, cut under %v", o.Condition, o.Trial, o.Model, o.Recovery)
			continue
		}
		if o.Model == faultvfs.FaultTorn && o.Recovery.Seed != seed.TornSeed(run.settings.Seed, o.Condition, o.Trial) {
			t.Errorf("%s trial %d: torn seed %d, the settings give %d", o.Condition, o.Trial, o.Recovery.Seed, seed.TornSeed(run.settings.Seed, o.Condition, o.Trial))
		}
		if o.Point == pattern.PointACKOpen && o.Model == faultvfs.FaultDrop && strings.HasPrefix(o.Condition, run.extra.Name+"/power:WAL/NORMAL") {
			if n, err := o.Values["processed"].Int(); err != nil || n != 0 {
				t.Errorf("%s ack-open under drop: processed %d (%v) after the cut; the ACKed commit was never synced", o.Condition, n, err)
			}
		}
	}
}

// TestPatternTornRerun: the torn rows are seeded from the settings, so
// verify --rerun runs them again and reproduces every model's verdict;
// and a torn cut's recorded seed that is not the settings' fails verify.
func TestPatternTornRerun(t *testing.T) {
	t.Parallel()
	file := patternFile(t, "separate-commit", func(m map[string]any) { m["power"] = []any{"WAL/NORMAL"} })
	r, out := runPattern(t, file, "--faults", "power")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if v := execIn(t, Hooks{}, "verify", "--rerun", out); v.code != 0 || !strings.Contains(v.stdout, "rerun: pattern reproduced") {
		t.Errorf("verify --rerun: exit %d, want 0:\n%s%s", v.code, v.stdout, v.stderr)
	}
	dir := copyFolder(t, out)
	p := filepath.Join(dir, "observations.jsonl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var torn pattern.Observation
	for _, o := range patternObservations(t, dir) {
		if o.Model == faultvfs.FaultTorn {
			torn = o
			break
		}
	}
	if torn.Recovery == nil {
		t.Fatal("no torn trial recorded")
	}
	old := `"seed":` + strconv.FormatInt(torn.Recovery.Seed, 10)
	if !strings.Contains(string(b), old) {
		t.Fatalf("observations have no %s", old)
	}
	os.WriteFile(p, []byte(strings.Replace(string(b), old, `"seed":7`, 1)), 0o644)
	if v := execIn(t, Hooks{}, "verify", dir); v.code != 1 || !strings.Contains(v.stdout+v.stderr, "but the trial's is torn") {
		t.Errorf("verify of an edited torn seed: exit %d, want 1 naming the recovery:\n%s%s", v.code, v.stdout, v.stderr)
	}
}

// TestProgramKillsLandAfterFirstPoint: the kill trials of a Python handler
// are timed from its first point ("ready"), so none lands in the
// interpreter's start-up, and the folder and the table say where each
// landed, as derived from the arrivals the parent recorded.
func TestProgramKillsLandAfterFirstPoint(t *testing.T) {
	t.Parallel()
	needPython(t)
	r, out := runPattern(t, "../testdata/handlers/single-transaction.json", "--faults", "random", "--trials", "8")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0:\n%s%s", r.code, r.stdout, r.stderr)
	}
	run := readPatternRun(t, patternResult(t, out))
	c := run.condition(t, "random", "")
	if len(c.Kills) != run.settings.KillTrials {
		t.Fatalf("%d kills placed, %d kill trials: %+v", len(c.Kills), run.settings.KillTrials, c.Kills)
	}
	table := strings.Join(strings.Fields(r.stdout), " ")
	for _, k := range c.Kills {
		if k.Landing == pattern.LandedBeforeFirst || k.Landing == "" {
			t.Errorf("trial %d landed %q", k.Trial, k.Landing)
		}
		if !strings.Contains(table, fmt.Sprintf("trial %d %s", k.Trial, k.Landing)) {
			t.Errorf("the table does not say trial %d landed %s:\n%s", k.Trial, k.Landing, r.stdout)
		}
	}
	for _, o := range patternObservations(t, out) {
		if o.Kind == pattern.KindKill && len(o.Deliveries[0].PointsUS) != len(o.Deliveries[0].Points) {
			t.Errorf("trial %d: %d arrivals for %d points", o.Trial, len(o.Deliveries[0].PointsUS), len(o.Deliveries[0].Points))
		}
	}
	if v := execIn(t, Hooks{}, "verify", out); v.code != 0 {
		t.Errorf("verify: exit %d:\n%s%s", v.code, v.stdout, v.stderr)
	}
}
