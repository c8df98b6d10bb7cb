package review

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"idemlab/experiments/harness"
	"idemlab/experiments/progress"
)

// VerifyConfig is the verify command's settings.
type VerifyConfig struct {
	Dir        string
	InputPath  string
	Rerun      bool
	Quiet      bool
	Executable string
	// Workdir is where the source tree is looked for.
	Workdir string
	Limits  Limits
	Stdout  io.Writer
	Stderr  io.Writer
}

// RunVerify verifies a folder, optionally reruns it, and prints what it
// found. A folder that does not verify gives an error wrapping
// harness.ErrExpectation (exit 1); bad arguments wrap harness.ErrUsage.
func RunVerify(ctx context.Context, cfg VerifyConfig) error {
	if cfg.Dir == "" {
		return fmt.Errorf("%w: verify: a results folder is required", harness.ErrUsage)
	}
	opts := Options{InputPath: cfg.InputPath, Limits: cfg.Limits}
	if root, ok := harness.FindModuleRoot(cfg.Workdir); ok {
		opts.SourceRoot = root
	}
	out, err := Verify(cfg.Dir, opts)
	if err != nil {
		return err
	}
	for _, n := range out.Notices {
		fmt.Fprintf(cfg.Stdout, "notice: %s\n", n)
	}
	for _, f := range out.Findings {
		fmt.Fprintf(cfg.Stdout, "✗ %s\n", f)
	}
	failures := len(out.Findings)
	if cfg.Rerun {
		if out.Folder == nil || out.Folder.Results == nil {
			fmt.Fprintln(cfg.Stdout, "rerun skipped: results.json is unreadable")
		} else {
			on, done := progress.New(cfg.Stderr, cfg.Quiet, "rerun")
			ro, err := Rerun(ctx, out.Folder, RerunOptions{
				InputPath: cfg.InputPath, Executable: cfg.Executable, Workdir: cfg.Workdir,
				OnProcess: on, Limits: cfg.Limits,
			})
			done()
			if err != nil {
				return err
			}
			names := make([]string, 0, len(ro.Diffs))
			for n := range ro.Diffs {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				fmt.Fprintf(cfg.Stdout, "✗ rerun: scenario %s differs from the folder (-recorded +rerun):\n%s\n", n, ro.Diffs[n])
			}
			failures += len(ro.Diffs)
			if ro.OK() {
				fmt.Fprintf(cfg.Stdout, "rerun: %s reproduced (row counts, exit codes, crash points and verdicts equal; times, pids and paths ignored)\n", strings.Join(ro.Scenarios, ", "))
			}
		}
	}
	if failures > 0 {
		return fmt.Errorf("%w: %s: %d finding(s); the folder does not verify", harness.ErrExpectation, cfg.Dir, failures)
	}
	fmt.Fprintf(cfg.Stdout, "OK: %s verifies (schema, input hash, code hash where present, observations, processes, exit codes, pass flags)\n", cfg.Dir)
	return nil
}

// ReportConfig is the report command's settings.
type ReportConfig struct {
	Dir    string
	HTML   string
	MD     string
	Limits Limits
	Stdout io.Writer
}

// RunReport renders a folder. Without --html or --md it prints the
// Markdown, without charts, on stdout.
func RunReport(cfg ReportConfig) error {
	if cfg.Dir == "" {
		return fmt.Errorf("%w: report: a results folder is required", harness.ErrUsage)
	}
	f, err := Load(cfg.Dir, cfg.Limits)
	if err != nil {
		return fmt.Errorf("%w: %v", harness.ErrUsage, err)
	}
	rep, err := BuildReport(f)
	if err != nil {
		return fmt.Errorf("%w: %v", harness.ErrExpectation, err)
	}
	if cfg.HTML == "" && cfg.MD == "" {
		return RenderMarkdown(cfg.Stdout, rep, func(Chart) string { return "" })
	}
	if cfg.HTML != "" {
		var b strings.Builder
		if err := RenderHTML(&b, rep); err != nil {
			return fmt.Errorf("%w: %v", harness.ErrHarness, err)
		}
		if err := writeFile(cfg.HTML, []byte(b.String())); err != nil {
			return err
		}
		fmt.Fprintf(cfg.Stdout, "wrote %s\n", cfg.HTML)
	}
	if cfg.MD != "" {
		stem := strings.TrimSuffix(filepath.Base(cfg.MD), filepath.Ext(cfg.MD))
		var werr error
		ref := func(c Chart) string {
			name := stem + "-" + c.Slug + ".svg"
			if err := writeFile(filepath.Join(filepath.Dir(cfg.MD), name), c.SVG); err != nil && werr == nil {
				werr = err
			}
			return name
		}
		var b strings.Builder
		if err := RenderMarkdown(&b, rep, ref); err != nil {
			return fmt.Errorf("%w: %v", harness.ErrHarness, err)
		}
		if werr != nil {
			return werr
		}
		if err := writeFile(cfg.MD, []byte(b.String())); err != nil {
			return err
		}
		fmt.Fprintf(cfg.Stdout, "wrote %s\n", cfg.MD)
	}
	if len(rep.Findings) > 0 {
		return fmt.Errorf("%w: %s: %d consistency finding(s), listed in the report; run idemlab verify", harness.ErrExpectation, cfg.Dir, len(rep.Findings))
	}
	return nil
}

// writeFile replaces path through a temporary sibling, so a reader never
// sees half a report.
func writeFile(path string, b []byte) error {
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%w: %s: folder %s does not exist", harness.ErrUsage, path, dir)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("%w: write %s: %v", harness.ErrUsage, path, errors.Unwrap(err))
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("%w: write %s: %v", harness.ErrHarness, path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("%w: write %s: %v", harness.ErrHarness, path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%w: write %s: %v", harness.ErrHarness, path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%w: write %s: %v", harness.ErrHarness, path, err)
	}
	return nil
}
