package batch

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/receiver"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker"
	wb "idemlab/worker/batch"
	"idemlab/worker/wire"
)

func TestMain(m *testing.M) { worker.TestMain(m, breaks) }

type publishedFixture struct {
	Items    int `json:"items"`
	FailAt   int `json:"fail_at"`
	RerunAll map[string]struct {
		Steps      int `json:"steps"`
		Duplicates int `json:"duplicates"`
	} `json:"rerun_all"`
	Journal struct {
		SecondRun struct {
			Executed int      `json:"executed_steps"`
			Skipped  int      `json:"skipped_steps"`
			Held     []string `json:"held"`
			Status   string   `json:"status"`
		} `json:"second_run"`
		AfterResolve  map[string]int `json:"after_resolve_run"`
		Duplicates    int            `json:"duplicates"`
		SentOnceItems int            `json:"sent_once_items"`
	} `json:"journal"`
}

// TestOracleReproducesArticle checks the model against the article's
// publishedFixture figures, kept as data in testdata/publishedFixture.
func TestOracleReproducesArticle(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "published", "article002.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pub publishedFixture
	if err := json.Unmarshal(b, &pub); err != nil {
		t.Fatal(err)
	}
	for _, mode := range Modes {
		p := Params{Mode: mode, Job: "job-1", Items: pub.Items, FailAt: pub.FailAt}
		p.Condition = CondRerunAll
		ra := Expect(p)
		if ra.Steps != pub.RerunAll[mode].Steps || ra.Duplicates != pub.RerunAll[mode].Duplicates {
			t.Errorf("%s rerun-all: steps %d duplicates %d, publishedFixture %+v", mode, ra.Steps, ra.Duplicates, pub.RerunAll[mode])
		}
		p.Condition = CondJournal
		j := Expect(p)
		r2, r3 := j.Runs[1], j.Runs[2]
		sr := pub.Journal.SecondRun
		if r2.ExecutedSteps != sr.Executed || r2.SkippedSteps != sr.Skipped || r2.Status != sr.Status || !cmp.Equal(r2.Held, sr.Held) {
			t.Errorf("%s journal run 2: %+v, publishedFixture %+v", mode, r2, sr)
		}
		if r3.ExecutedSteps != pub.Journal.AfterResolve[mode] || j.Duplicates != pub.Journal.Duplicates || j.SentOnceItems != pub.Journal.SentOnceItems {
			t.Errorf("%s journal: run 3 %+v duplicates %d sent once %d", mode, r3, j.Duplicates, j.SentOnceItems)
		}
	}
}

// TestOracleHandMade checks the model at the edges against figures worked
// out by hand from the rules.
func TestOracleHandMade(t *testing.T) {
	type fig struct {
		run2Exec, run2Skip, run3Exec, dup, once, accepts int
		held                                             []string
	}
	cases := []struct {
		cond, mode string
		n, k       int
		want       fig
	}{
		{CondJournal, BeforeAccept, 20, 7, fig{39, 20, 1, 0, 20, 20, []string{"item-007:notify_external:unknown"}}},
		{CondJournal, AfterAccept, 20, 7, fig{39, 20, 0, 0, 20, 20, []string{"item-007:notify_external:unknown"}}},
		{CondJournal, BeforeAccept, 20, 1, fig{57, 2, 1, 0, 20, 20, []string{"item-001:notify_external:unknown"}}},
		{CondJournal, AfterAccept, 20, 20, fig{0, 59, 0, 0, 20, 20, []string{"item-020:notify_external:unknown"}}},
		{CondHardCrash, AfterAccept, 6, 4, fig{6, 11, 0, 0, 6, 6, []string{"item-004:notify_external:unknown"}}},
		{CondHardCrash, BeforeAccept, 6, 4, fig{6, 11, 1, 0, 6, 6, []string{"item-004:notify_external:unknown"}}},
		{CondRerunAll, BeforeAccept, 20, 7, fig{60, 0, -1, 6, 14, 26, nil}},
		{CondRerunAll, AfterAccept, 20, 20, fig{60, 0, -1, 20, 0, 40, nil}},
		{CondRerunAllKey, AfterAccept, 20, 7, fig{60, 0, -1, 0, 20, 20, nil}},
		{CondNewJobID, BeforeAccept, 20, 7, fig{60, 0, -1, 6, 14, 26, nil}},
		{CondNewJobID, AfterAccept, 20, 7, fig{60, 0, -1, 7, 13, 27, nil}},
		{CondInputChanged, BeforeAccept, 20, 7, fig{39, 18, 0, 0, 19, 19, []string{"item-007:validate:input_changed"}}},
		{CondInputChanged, AfterAccept, 20, 7, fig{39, 18, 0, 0, 20, 20, []string{"item-007:validate:input_changed"}}},
	}
	for _, c := range cases {
		t.Run(c.cond+"/"+c.mode+"/"+strconv.Itoa(c.n)+"/"+strconv.Itoa(c.k), func(t *testing.T) {
			o := Expect(Params{Condition: c.cond, Mode: c.mode, Job: "job-1", Items: c.n, FailAt: c.k})
			got := fig{o.Runs[1].ExecutedSteps, o.Runs[1].SkippedSteps, -1, o.Duplicates, o.SentOnceItems, o.Accepts, o.Runs[1].Held}
			if len(o.Runs) > 2 {
				got.run3Exec = o.Runs[2].ExecutedSteps
			}
			if d := cmp.Diff(c.want, got, cmp.AllowUnexported(fig{}), cmpEmptySlices); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

var cmpEmptySlices = cmp.FilterValues(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

func TestValidate(t *testing.T) {
	good := Input{JobID: "job-1", Items: 50, FailAt: 41, Modes: []string{BeforeAccept}, Trials: 1, LatencyMS: Latency{1.5, 1.5, 4}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(*Input){
		"batch.items":               func(in *Input) { in.Items = 0 },
		"batch.fail_at":             func(in *Input) { in.FailAt = 51 },
		"batch.fail_at (--fail-at)": func(in *Input) { in.FailAt = 0 },
		"batch.trials":              func(in *Input) { in.Trials = 0 },
		"batch.modes[0]":            func(in *Input) { in.Modes = []string{"sometimes"} },
		"batch.modes[1]":            func(in *Input) { in.Modes = []string{BeforeAccept, BeforeAccept} },
		"batch.modes (--mode)":      func(in *Input) { in.Modes = nil },
		"batch.latency_ms.send":     func(in *Input) { in.LatencyMS.Send = -1 },
		"batch.job_id":              func(in *Input) { in.JobID = " " },
		"batch.first_run_lanes":     func(in *Input) { in.FirstRunLanes = MaxFirstRunLanes + 1 },
	}
	for field, mutate := range cases {
		in := good
		mutate(&in)
		err := in.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), field) {
			t.Errorf("%s: error %v", field, err)
		}
	}
}

// TestPlanFlags checks that every flag reaches the settings and that a bad
// value is an error naming the flag or the field, never ignored.
func TestPlanFlags(t *testing.T) {
	section := json.RawMessage(`{"job_id":"job-1","items":50,"fail_at":41,"modes":["before_accept","after_accept"],"trials":5,"latency_ms":{"validate":1.5,"transform":1.5,"send":4}}`)
	p, err := New().Plan(context.Background(), scenario.PlanRequest{Section: section, Overrides: map[string]string{"items": "8", "fail-at": "3", "trials": "2", "mode": "after_accept", "first-run-lanes": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	st := p.Settings().(Settings)
	got := []any{st.Items, st.FailAt, st.Trials, st.Modes, len(st.Conditions), st.FirstRunLanes}
	if d := cmp.Diff([]any{8, 3, 2, []string{AfterAccept}, len(Conditions), 3}, got); d != "" {
		t.Errorf("settings (-want +got):\n%s", d)
	}
	bad := map[string]map[string]string{
		"--trials":          {"trials": "0"},
		"--items":           {"items": "many"},
		"--fail-at":         {"fail-at": "-1"},
		"batch.fail_at":     {"items": "20"},
		"batch.modes[0]":    {"mode": "sometimes"},
		"batch.modes[1]":    {"mode": "after_accept,after_accept"},
		"--mode":            {"mode": ""},
		"--items (zero)":    {"items": "0"},
		"--first-run-lanes": {"first-run-lanes": "17"},
	}
	for want, ov := range bad {
		_, err := New().Plan(context.Background(), scenario.PlanRequest{Section: section, Overrides: ov})
		if err == nil || !strings.Contains(err.Error(), strings.Fields(want)[0]) {
			t.Errorf("%v: error %v, want one naming %s", ov, err, want)
		}
	}
	if _, err := New().Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(`{"job_id":"job-1","items":"50"}`)}); err == nil || !strings.Contains(err.Error(), "batch.items") {
		t.Errorf("string items: error %v", err)
	}
	if _, err := New().Plan(context.Background(), scenario.PlanRequest{Section: json.RawMessage(`{"job_id":"job-1","itmes":50}`)}); err == nil || !strings.Contains(err.Error(), "itmes") {
		t.Errorf("misspelt field: error %v", err)
	}
}

// TestReceiverOverHTTP exercises the receiver's failure modes through the
// worker's real HTTP client.
func TestReceiverOverHTTP(t *testing.T) {
	ctx := context.Background()
	send := func(c *wire.Client, job, item, key string) (string, error) {
		return c.Send(ctx, wire.SendRequest{JobID: job, ItemID: item, Step: wb.StepNotify, Digest: "0123456789abcdef", IdempotencyKey: key})
	}
	k := func(job, item string) wire.Key { return wire.Key{Job: job, Item: item, Step: wb.StepNotify} }
	t.Run("before_accept", func(t *testing.T) {
		r := startReceiver(t, receiver.Config{FailItem: "item-002", FailMode: BeforeAccept})
		c := wire.NewClient(r.URL)
		if _, err := send(c, "job-1", "item-001", ""); err != nil {
			t.Fatal(err)
		}
		_, err := send(c, "job-1", "item-002", "")
		var ue *wire.UnavailableError
		if !errors.As(err, &ue) || ue.Status != 503 {
			t.Fatalf("error %v, want 503", err)
		}
		if _, found, _ := c.Lookup(ctx, k("job-1", "item-002")); found {
			t.Error("a refused send has a receipt")
		}
		rc, err := send(c, "job-1", "item-002", "")
		if err != nil || rc != "rcpt-item-002-01234567" {
			t.Fatalf("second send: %q %v", rc, err)
		}
		if st := r.Stats(); st.Accepts != 2 || st.Duplicates != 0 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("after_accept", func(t *testing.T) {
		r := startReceiver(t, receiver.Config{FailItem: "item-002", FailMode: AfterAccept})
		c := wire.NewClient(r.URL)
		send(c, "job-1", "item-001", "")
		_, err := send(c, "job-1", "item-002", "")
		var ne *wire.NoReplyError
		if !errors.As(err, &ne) {
			t.Fatalf("error %v, want no reply", err)
		}
		rc, found, err := c.Lookup(ctx, k("job-1", "item-002"))
		if err != nil || !found || rc != "rcpt-item-002-01234567" {
			t.Fatalf("lookup: %q %v %v", rc, found, err)
		}
		for _, other := range []wire.Key{k("job-2", "item-002"), {Job: "job-1", Item: "item-002", Step: wb.StepTransform}, k("job-1", "item-003")} {
			if _, found, _ := c.Lookup(ctx, other); found {
				t.Errorf("lookup %s found a receipt of another key", other)
			}
		}
		send(c, "job-1", "item-002", "")
		if st := r.Stats(); st.Accepts != 3 || st.Duplicates != 1 || st.SentOnceItems != 1 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("idempotency key and job ids", func(t *testing.T) {
		r := startReceiver(t, receiver.Config{})
		c := wire.NewClient(r.URL)
		first, _ := send(c, "job-1", "item-001", "job-1:item-001:notify_external")
		again, err := send(c, "job-1", "item-001", "job-1:item-001:notify_external")
		if err != nil || again != first {
			t.Fatalf("replay: %q vs %q, %v", again, first, err)
		}
		if st := r.Stats(); st.Accepts != 1 || st.Replays != 1 {
			t.Errorf("stats after replay %+v", st)
		}
		send(c, "job-2", "item-001", "")
		if st := r.Stats(); st.Accepts != 2 || st.Duplicates != 1 {
			t.Errorf("a new job id's send is not counted as a duplicate: %+v", st)
		}
	})
}

func startReceiver(t *testing.T, cfg receiver.Config) *receiver.Receiver {
	t.Helper()
	r, err := receiver.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestOracleMatchesPeer runs the article's own program for the same N and
// K, when python3 and the program are present, and compares its figures
// with the oracle's.
func TestOracleMatchesPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Python peer")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	peer := peerPath(t)
	const script = `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("peer", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
out = [m.run_experiment(s, trials=1, total=int(sys.argv[2]), fail_at=int(sys.argv[3])) for s in ("before_accept", "after_accept")]
print(json.dumps(out))`
	for _, nk := range [][2]int{{20, 7}, {20, 1}, {20, 20}} {
		b, err := exec.Command(py, "-c", script, peer, strconv.Itoa(nk[0]), strconv.Itoa(nk[1])).Output()
		if err != nil {
			t.Fatalf("peer N=%d K=%d: %v", nk[0], nk[1], err)
		}
		var res []struct {
			Scenario string `json:"scenario"`
			RerunAll struct {
				Steps, Duplicates int
			} `json:"rerun_all"`
			Journal struct {
				SecondRun struct {
					Status        string   `json:"status"`
					ExecutedSteps int      `json:"executed_steps"`
					SkippedSteps  int      `json:"skipped_steps"`
					Held          []string `json:"held"`
				} `json:"second_run"`
				AfterResolveRun struct {
					Status        string `json:"status"`
					ExecutedSteps int    `json:"executed_steps"`
					SkippedSteps  int    `json:"skipped_steps"`
				} `json:"after_resolve_run"`
				Duplicates    int `json:"duplicates"`
				SentOnceItems int `json:"sent_once_items"`
			} `json:"journal"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			p := Params{Mode: r.Scenario, Job: "job-1", Items: nk[0], FailAt: nk[1], Condition: CondRerunAll}
			ra := Expect(p)
			p.Condition = CondJournal
			j := Expect(p)
			type figs struct {
				Steps, Dup, Exec2, Skip2, Exec3, Skip3, JDup, Once int
				Status2, Status3                                   string
				Held                                               []string
			}
			ours := figs{ra.Steps, ra.Duplicates, j.Runs[1].ExecutedSteps, j.Runs[1].SkippedSteps, j.Runs[2].ExecutedSteps, j.Runs[2].SkippedSteps, j.Duplicates, j.SentOnceItems, j.Runs[1].Status, j.Runs[2].Status, j.Runs[1].Held}
			jr := r.Journal
			theirs := figs{r.RerunAll.Steps, r.RerunAll.Duplicates, jr.SecondRun.ExecutedSteps, jr.SecondRun.SkippedSteps, jr.AfterResolveRun.ExecutedSteps, jr.AfterResolveRun.SkippedSteps, jr.Duplicates, jr.SentOnceItems, jr.SecondRun.Status, jr.AfterResolveRun.Status, jr.SecondRun.Held}
			if d := cmp.Diff(theirs, ours); d != "" {
				t.Errorf("N=%d K=%d %s (-peer +oracle):\n%s", nk[0], nk[1], r.Scenario, d)
			}
		}
	}
}

// peerPath is $IDEMLAB_PEER, or the reference program beside the
// repository; the test is skipped when neither exists.
func peerPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("IDEMLAB_PEER"); p != "" {
		return p
	}
	wd, _ := os.Getwd()
	root, ok := results.FindModuleRoot(wd)
	if !ok {
		t.Skip("module root not found")
	}
	p := filepath.Join(root, "..", "shared", "reference", "resumable_runner.py")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("peer program not found at %s", p)
	}
	return p
}
