package merge

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"idemlab/experiments/results"
	"idemlab/experiments/review"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
)

// SchedulingOverride is the flag that says how a run was scheduled, not
// what it tested: two runs that differ in it alone are the same run.
const SchedulingOverride = "parallel"

// Job is what makes a shard's folder the work of one job: the part, the
// scenarios chosen, the flags given (--shard among them), the input's
// hash and the executable's.
type Job struct {
	Part             shard.Part
	Scenarios        []string
	Overrides        map[string]string
	InputSHA256      string
	ExecutableSHA256 string
}

// Done says whether dir holds a finished run of job: a folder that
// verifies, recorded as shard job.Part of the same scenarios, input,
// flags (but --parallel) and executable, whose plans read files that
// still hash as they did. It returns the folder's results when so, and
// otherwise the reasons it is not, for a job retried by an at-least-once
// engine (a Kubernetes Indexed Job, Slurm's requeue, a CI re-run) that
// finds its --out taken. The points discovered are merge's to check, as
// they are for shards run once.
func Done(ctx context.Context, reg scenario.Registry, dir string, job Job) (*results.Results, []string, error) {
	st, err := os.Lstat(dir)
	if err != nil {
		return nil, []string{err.Error()}, nil
	}
	if !st.IsDir() {
		return nil, []string{"it is not a folder"}, nil
	}
	o, err := review.Verify(ctx, dir, review.Options{Registry: reg})
	if err != nil {
		return nil, []string{err.Error()}, nil
	}
	if !o.OK() {
		return nil, []string{fmt.Sprintf("it does not verify (%d finding(s)): %s", len(o.Findings), o.Findings[0])}, nil
	}
	r := o.Folder.Results
	if why := sameJob(r, job); len(why) > 0 {
		return nil, why, nil
	}
	return r, nil, nil
}

// sameJob lists how a verified folder's run differs from job.
func sameJob(r *results.Results, job Job) []string {
	var out []string
	switch {
	case len(r.Shards) > 0:
		return []string{fmt.Sprintf("it is a folder merged from %d shards", len(r.Shards))}
	case r.Shard == nil:
		return []string{"it is a run without --shard"}
	case *r.Shard != job.Part:
		return []string{fmt.Sprintf("it is shard %s", r.Shard)}
	}
	var names []string
	ov := map[string]string{}
	for _, s := range r.Scenarios {
		names = append(names, s.Name)
		maps.Copy(ov, s.Overrides)
	}
	if !slices.Equal(names, job.Scenarios) {
		out = append(out, fmt.Sprintf("it ran the scenarios %s, this run %s", strings.Join(names, ", "), strings.Join(job.Scenarios, ", ")))
	}
	if a, b := flagsText(ov), flagsText(job.Overrides); a != b {
		out = append(out, fmt.Sprintf("it ran with the flags %s, this run with %s", a, b))
	}
	if r.Inputs.SHA256 != job.InputSHA256 {
		out = append(out, fmt.Sprintf("its input hashes to %s, this run's to %s", r.Inputs.SHA256, job.InputSHA256))
	}
	for _, a := range r.Attachments {
		if a.Carried {
			continue
		}
		if sum, err := results.HashFile(a.Name); err != nil || sum != a.SHA256 {
			out = append(out, fmt.Sprintf("the file %s its plans read hashed to %s, and here %s", a.Name, a.SHA256, hashOrError(sum, err)))
		}
	}
	if r.Code.ExecutableSHA256 != job.ExecutableSHA256 {
		out = append(out, fmt.Sprintf("its executable hashed to %s, this one to %s", r.Code.ExecutableSHA256, job.ExecutableSHA256))
	}
	return out
}

// flagsText is the flags as --name value, sorted, without the
// scheduling one.
func flagsText(ov map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(ov)) {
		if k != SchedulingOverride {
			out = append(out, fmt.Sprintf("--%s %s", k, scenario.ShellQuote(ov[k])))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

func hashOrError(sum string, err error) string {
	if err != nil {
		return err.Error()
	}
	return "hashes to " + sum
}
