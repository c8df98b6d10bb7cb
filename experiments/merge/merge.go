// Package merge joins the folders of a plan run in shards (--shard i/n,
// one per job of a CI matrix or batch system) into one results folder that
// verify accepts as a whole. Every shard folder is verified first, as
// verify does; the folders must be the n parts of one plan (one binary,
// one input, one plan hash, every i once); then the records are joined
// unchanged, block by block, and every verdict is derived again over all
// of them, so a condition judged over the whole plan (a known-unsafe class
// that must break somewhere) is judged over every shard's trials.
package merge

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
	"idemlab/experiments/review"
	"idemlab/experiments/scenario"
)

// Config is the merge command's settings.
type Config struct {
	Registry scenario.Registry
	Out      string
	Dirs     []string
	Limits   results.Limits
	// Stdout gets one line per refusal, and the result.
	Stdout io.Writer
}

// part is one shard folder as verify read it.
type part struct {
	dir string
	o   *review.Outcome
	r   *results.Results
}

func (p part) name() string {
	if p.r == nil || p.r.Shard == nil {
		return p.dir
	}
	return fmt.Sprintf("%s (shard %s)", p.dir, p.r.Shard)
}

// Run merges the folders into cfg.Out. The error's class gives the exit
// code: a usage error (2) before anything is read, a mismatch (1) with
// nothing written, or a failed merged run (1) with the folder written.
func Run(ctx context.Context, cfg Config) (*results.Results, error) {
	if cfg.Out == "" {
		return nil, fmt.Errorf("%w: --out is required, e.g. --out merged", errclass.ErrUsage)
	}
	if len(cfg.Dirs) == 0 {
		return nil, fmt.Errorf("%w: merge needs the shard folders, e.g. idemlab merge --out merged shard-1 shard-2", errclass.ErrUsage)
	}
	out, err := results.PrepareOutput(cfg.Out)
	if err != nil {
		return nil, err
	}
	res, err := run(ctx, cfg, out)
	if err == nil {
		err = out.Commit()
	}
	if err != nil {
		out.Abort()
		return nil, err
	}
	if !res.Pass {
		return res, fmt.Errorf("%w: the merged run failed its expectations; results written to %s with pass: false", errclass.ErrExpectation, cfg.Out)
	}
	return res, nil
}

func run(ctx context.Context, cfg Config, out *results.Output) (*results.Results, error) {
	parts, err := load(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if problems := fit(parts); len(problems) > 0 {
		return nil, refuse(cfg.Stdout, problems)
	}
	slices.SortFunc(parts, func(a, b part) int { return a.r.Shard.Index - b.r.Shard.Index })
	// The verdicts are derived over the joined records as read back from
	// the merged folder by the loader verify uses, as a run's are.
	return join(ctx, cfg, parts, out.Staging)
}

// load verifies every folder, a few at a time. A folder that is not one
// is a usage error; one that does not verify, or is no shard's, is
// refused.
func load(ctx context.Context, cfg Config) ([]part, error) {
	parts := make([]part, len(cfg.Dirs))
	errs := make([]error, len(cfg.Dirs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, dir := range cfg.Dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			o, err := review.Verify(ctx, dir, review.Options{Registry: cfg.Registry, Limits: cfg.Limits})
			parts[i], errs[i] = part{dir: dir, o: o}, err
			if o != nil && o.Folder != nil {
				parts[i].r = o.Folder.Results
				// Merge reads shard 1's records again for the plan; the
				// others' are read from their files when joined, so a
				// plan of many trials is held once, not twice.
				if r := o.Folder.Results; r == nil || r.Shard == nil || r.Shard.Index != 1 {
					o.Folder.Observations, o.Folder.Processes = nil, nil
				}
			}
		}()
	}
	wg.Wait()
	var problems []string
	for i, p := range parts {
		switch {
		case errs[i] != nil:
			return nil, errs[i]
		case !p.o.OK():
			problems = append(problems, fmt.Sprintf("%s does not verify (%d finding(s)): %s; run idemlab verify %s", p.dir, len(p.o.Findings), p.o.Findings[0], p.dir))
		case len(p.r.Shards) > 0:
			problems = append(problems, fmt.Sprintf("%s is a merged folder, not a shard's; merge the shard folders themselves", p.dir))
		case p.r.Shard == nil:
			problems = append(problems, fmt.Sprintf("%s is not a shard folder: it ran without --shard i/n", p.dir))
		}
	}
	if len(problems) > 0 {
		return nil, refuse(cfg.Stdout, problems)
	}
	return parts, nil
}

// refuse prints each problem and returns the mismatch.
func refuse(w io.Writer, problems []string) error {
	for _, p := range problems {
		fmt.Fprintf(w, "✗ %s\n", p)
	}
	more := ""
	if len(problems) > 1 {
		more = fmt.Sprintf(" (and %d more, listed above)", len(problems)-1)
	}
	return fmt.Errorf("%w: %s%s; nothing was written", errclass.ErrShardsMismatch, problems[0], more)
}

// writeNew writes a new file of the merged folder, making its folder
// (attachments/) first.
func writeNew(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return results.WriteNew(path, b)
}
