package merge

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
	"idemlab/experiments/suite"
)

// join writes the merged folder into staging: the input and the files the
// plans read, the shards' records block by block, and results.json with
// every scenario derived again over all the records, from the settings of
// the whole plan.
func join(ctx context.Context, cfg Config, parts []part, staging string) (*results.Results, error) {
	ref := parts[0]
	if err := writeNew(filepath.Join(staging, results.InputCopyFile), ref.o.Folder.Input); err != nil {
		return nil, fmt.Errorf("%w: copy the input: %w", errclass.ErrHarness, err)
	}
	for _, a := range ref.r.Attachments {
		b, err := ref.o.Folder.ReadFile(a.Name)
		if err == nil {
			err = writeNew(filepath.Join(staging, filepath.FromSlash(a.File)), b)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: copy %s: %w", errclass.ErrHarness, a.Name, err)
		}
	}
	blocks, err := joinRecords(parts, staging)
	if err != nil {
		return nil, fmt.Errorf("%w: join the records: %w", errclass.ErrHarness, err)
	}
	folder, err := results.LoadRecords(staging, cfg.Limits)
	if err != nil || len(folder.Findings) > 0 {
		return nil, fmt.Errorf("%w: the joined records do not read back: %v %v", errclass.ErrHarness, err, folder.Findings)
	}
	folder.Results = &results.Results{Shards: blocks}
	in, err := suite.ParseInput(results.InputCopyFile, ref.o.Folder.Input, cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	res := &results.Results{
		Format: results.FormatVersion, Tool: ref.r.Tool, StartedAt: ref.r.StartedAt, FinishedAt: ref.r.FinishedAt,
		Environment: ref.r.Environment, Inputs: ref.r.Inputs, Code: ref.r.Code, Attachments: ref.r.Attachments,
		Shards: blocks, Scenarios: []results.ScenarioResult{}, Pass: true,
	}
	for _, p := range parts {
		res.StartedAt, res.FinishedAt = min(res.StartedAt, p.r.StartedAt), max(res.FinishedAt, p.r.FinishedAt)
	}
	var problems []string
	for i, rs := range ref.r.Scenarios {
		sr, miss, err := joinScenario(ctx, cfg, parts, i, in, folder.Records(rs.Name))
		if err != nil {
			return nil, err
		}
		problems = append(problems, miss...)
		res.Scenarios = append(res.Scenarios, sr)
		res.Pass = res.Pass && sr.Pass
	}
	if len(problems) > 0 {
		return nil, refuse(cfg.Stdout, problems)
	}
	return res, (&results.Output{Staging: staging}).WriteResults(res)
}

// joinScenario derives scenario i of the shards over the merged records,
// from the whole plan's settings: the shards' overrides without --shard.
func joinScenario(ctx context.Context, cfg Config, parts []part, i int, in suite.Input, rec results.Records) (results.ScenarioResult, []string, error) {
	rs := parts[0].r.Scenarios[i]
	s, ok := cfg.Registry.Lookup(rs.Name)
	if !ok {
		return results.ScenarioResult{}, nil, fmt.Errorf("%w: scenario %s is not one of this idemlab", errclass.ErrHarness, rs.Name)
	}
	var ov map[string]string
	for k, v := range rs.Overrides {
		if k == scenario.ShardFlag.Name {
			continue
		}
		if ov == nil {
			ov = map[string]string{}
		}
		ov[k] = v
	}
	plans, err := suite.PlanAll(ctx, []scenario.Scenario{s}, in, ov, parts[0].o.Folder, suite.RecordedMachine(parts[0].r.Environment))
	if err != nil {
		return results.ScenarioResult{}, nil, fmt.Errorf("%w: plan %s without --shard: %w", errclass.ErrHarness, rs.Name, err)
	}
	// The plan's trials, as the first shard's records give them; every
	// shard's plan hashes alike, so any would do.
	folded, _ := s.Fold(rs.Settings, parts[0].o.Folder.Records(rs.Name))
	problems := union(rs.Name, folded.Plan, parts, i)
	return scenario.Evaluate(s, ov, scenario.Marshal(plans[0].Plan.Settings()), rec), problems, nil
}

// union checks that the shards' trials are the plan's: each once, none
// foreign, none missing; it names the shard at fault.
func union(name string, plan []shard.Trial, parts []part, i int) []string {
	n := parts[0].r.Shard.Count
	inPlan := map[string]bool{}
	for _, t := range plan {
		inPlan[t.ID] = true
	}
	seen := map[string]string{}
	var out []string
	for _, p := range parts {
		pr := p.o.Derived.Scenarios[i].Plan
		if pr == nil {
			out = append(out, fmt.Sprintf("%s has no plan of scenario %s", p.name(), name))
			continue
		}
		for _, id := range pr.Ran {
			switch prev, dup := seen[id]; {
			case dup:
				out = append(out, fmt.Sprintf("%s trial %s is in both %s and %s", name, id, prev, p.name()))
			case !inPlan[id]:
				out = append(out, fmt.Sprintf("%s ran %s trial %s, which is not in the plan", p.name(), name, id))
			}
			seen[id] = p.name()
		}
	}
	missing := map[int][]string{}
	for _, t := range plan {
		if _, ok := seen[t.ID]; !ok {
			k := shard.Of(t.ID, n)
			missing[k] = append(missing[k], t.ID)
		}
	}
	for _, p := range parts {
		if ids := missing[p.r.Shard.Index]; len(ids) > 0 {
			out = append(out, fmt.Sprintf("%s lacks %d %s trial(s) of the plan: %s", p.name(), len(ids), name, strings.Join(ids[:min(5, len(ids))], ", ")))
		}
	}
	return out
}

// joinRecords appends each shard's record files, in shard order, and
// says where each shard's block is. The files are copied through, not
// held: at 100,000 trials they are hundreds of MB, which the merged
// folder's loader reads again anyway.
func joinRecords(parts []part, staging string) ([]results.ShardRun, error) {
	obs, err := createNew(filepath.Join(staging, results.ObservationsFile))
	if err != nil {
		return nil, err
	}
	defer obs.Close()
	procs, err := createNew(filepath.Join(staging, results.ProcessesFile))
	if err != nil {
		return nil, err
	}
	defer procs.Close()
	var blocks []results.ShardRun
	for _, p := range parts {
		o, err := appendLines(obs, filepath.Join(p.dir, results.ObservationsFile))
		if err != nil {
			return nil, err
		}
		pr, err := appendLines(procs, filepath.Join(p.dir, results.ProcessesFile))
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, results.ShardRun{
			Index: p.r.Shard.Index, Count: p.r.Shard.Count, Folder: p.dir, ResultsSHA256: results.SHA256Hex(p.o.Folder.ResultsRaw),
			StartedAt: p.r.StartedAt, FinishedAt: p.r.FinishedAt, Environment: p.r.Environment, Tool: p.r.Tool, Code: p.r.Code,
			Pass: p.r.Pass, Observations: o, Processes: pr,
		})
	}
	for _, f := range []*os.File{obs, procs} {
		if err := f.Sync(); err != nil {
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
	}
	return blocks, nil
}

// createNew creates a file of the merged folder that must not exist.
func createNew(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
}

// appendLines copies the file at src to the end of dst and returns the
// number of lines it held.
func appendLines(dst *os.File, src string) (int, error) {
	f, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w := &lineCounter{w: dst}
	_, err = io.Copy(w, f)
	return w.n, err
}

// lineCounter counts the newlines written through it.
type lineCounter struct {
	w io.Writer
	n int
}

func (c *lineCounter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += bytes.Count(b[:n], []byte("\n"))
	return n, err
}
