package review

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/suite"
)

// VerifyConfig is the verify command's settings.
type VerifyConfig struct {
	Registry  scenario.Registry
	Dir       string
	InputPath string
	ExePath   string
	Rerun     bool
	// DSN names the PostgreSQL server a rerun of a folder made on
	// PostgreSQL uses instead of a throwaway cluster; Run must use it
	// too.
	DSN string
	// FindBinaries finds the PostgreSQL server's binaries for a throwaway
	// cluster; nil means backend.FindBinaries. Tests make it fail.
	FindBinaries func() (string, error)
	// Run runs scenarios for --rerun.
	Run RunFunc
	// Workdir is where the source tree is looked for.
	Workdir string
	TempDir string
	Limits  results.Limits
	Stdout  io.Writer
}

// RunVerify verifies a folder, optionally reruns it, prints what it found
// and returns an error whose class decides the exit code: findings or a
// rerun that differs (1), a consistent folder of a failed run (4), a folder
// that verifies but whose code changed (5).
func RunVerify(ctx context.Context, cfg VerifyConfig) error {
	opts := Options{Registry: cfg.Registry, InputPath: cfg.InputPath, ExePath: cfg.ExePath, Limits: cfg.Limits, SourceRoot: SourceRoot(cfg.Workdir)}
	if cfg.InputPath != "" {
		if _, err := readRegular(cfg.InputPath); err != nil {
			return fmt.Errorf("%w: --input %s: %w; leave --input out to use the folder's own %s", errclass.ErrUsage, cfg.InputPath, unwrapPath(err), results.InputCopyFile)
		}
	}
	if cfg.ExePath != "" {
		if _, err := readRegular(cfg.ExePath); err != nil {
			return fmt.Errorf("%w: --exe %s: %w", errclass.ErrUsage, cfg.ExePath, unwrapPath(err))
		}
	}
	if cfg.DSN != "" && !cfg.Rerun {
		return fmt.Errorf("%w: --%s names the server for --rerun; add --rerun or leave --%s out", errclass.ErrUsage, backend.FlagDSN, backend.FlagDSN)
	}
	out, err := Verify(ctx, cfg.Dir, opts)
	if err != nil {
		return err
	}
	if cfg.Rerun && out.OK() {
		pg, err := OnPostgres(out.Folder, cfg.Registry)
		if err != nil {
			return fmt.Errorf("%w: %s: the backend of its scenarios: %w", errclass.ErrFindings, cfg.Dir, err)
		}
		if err := CheckRerunServer(cfg.Dir, pg, cfg.DSN, cfg.FindBinaries); err != nil {
			return err
		}
		if err := CheckRerunMachine(ctx, cfg.Dir, out.Folder, cfg.Registry); err != nil {
			return err
		}
	}
	w := cfg.Stdout
	for _, n := range out.Notices {
		fmt.Fprintf(w, "notice: %s\n", n)
	}
	for _, f := range out.Findings {
		fmt.Fprintf(w, "✗ %s\n", f)
	}
	if out.Derived != nil && out.OK() {
		// The failure lines and the verdict the run printed, derived
		// again from the records.
		suite.PrintFailures(w, suite.Failures(cfg.Registry, out.Derived))
		fmt.Fprintf(w, "run verdict, derived from the records: %s\n", suite.Verdict(cfg.Registry, out.Derived))
	}
	if cfg.Rerun && out.OK() {
		ro, err := Rerun(ctx, out, cfg.Run, opts, cfg.TempDir)
		if err != nil {
			return err
		}
		for _, name := range ro.Scenarios {
			for _, d := range ro.Differences[name] {
				fmt.Fprintf(w, "✗ rerun: %s\n", d)
			}
		}
		if !ro.OK() {
			return fmt.Errorf("%w: %s: the rerun observed differently in %d scenario(s), listed above", errclass.ErrResultsDiffer, cfg.Dir, len(ro.Differences))
		}
		if ro.Merged {
			fmt.Fprintf(w, "notice: the folder was merged from shards and the rerun ran the whole plan here, so the process records are not compared, only what they give\n")
		}
		fmt.Fprintf(w, "rerun: %s reproduced (settings, figures, verdicts, exit codes and crash points equal; times, pids and paths ignored)\n", strings.Join(ro.Scenarios, ", "))
		out.CodeChanged = append(out.CodeChanged, ro.CodeChanged...)
	}
	for _, c := range out.CodeChanged {
		fmt.Fprintf(w, "code changed: %s\n", c)
	}
	if err := Verdict(out, cfg.Dir); err != nil {
		return err
	}
	fmt.Fprintf(w, "OK: %s verifies: every figure, verdict and setting derives from its records and its input\n", cfg.Dir)
	return nil
}

// SourceRoot is the idemlab source tree that holds workdir, which verify
// and report compare with the run's working tree hash; "" when there is
// none.
func SourceRoot(workdir string) string {
	if workdir == "" {
		return ""
	}
	root, _ := results.FindModuleRoot(workdir)
	return root
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ReportConfig is the report command's settings.
type ReportConfig struct {
	Registry scenario.Registry
	Dir      string
	HTML     string
	MD       string
	Limits   results.Limits
	Stdout   io.Writer
	// Self is how the user runs idemlab, for the replay commands.
	Self string
	// Workdir is where the source tree is looked for, as verify's.
	Workdir string
}

// RunReport renders a folder. Without --html or --md it prints the
// Markdown, without charts, on stdout.
func RunReport(ctx context.Context, cfg ReportConfig) error {
	for _, p := range []struct{ flag, path string }{{"--html", cfg.HTML}, {"--md", cfg.MD}} {
		if err := CheckWritable(p.flag, p.path); err != nil {
			return err
		}
	}
	out, err := Verify(ctx, cfg.Dir, Options{Registry: cfg.Registry, Limits: cfg.Limits, SourceRoot: SourceRoot(cfg.Workdir)})
	if err != nil {
		return err
	}
	rep, err := BuildReport(out, cfg.Registry)
	if err != nil {
		return fmt.Errorf("%w: %s: %v; run idemlab verify %s", errclass.ErrFindings, cfg.Dir, err, cfg.Dir)
	}
	rep.AddReplays(cfg.Self)
	if cfg.HTML == "" && cfg.MD == "" {
		return RenderMarkdown(cfg.Stdout, rep, func(scenario.Chart) string { return "" })
	}
	if cfg.HTML != "" {
		var b strings.Builder
		if err := RenderHTML(&b, rep); err != nil {
			return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
		if err := WriteFile(cfg.HTML, []byte(b.String())); err != nil {
			return err
		}
		fmt.Fprintf(cfg.Stdout, "wrote %s\n", cfg.HTML)
	}
	if cfg.MD != "" {
		stem := strings.TrimSuffix(filepath.Base(cfg.MD), filepath.Ext(cfg.MD))
		var werr error
		ref := func(c scenario.Chart) string {
			name := stem + "-" + c.Slug + ".svg"
			if err := WriteFile(filepath.Join(filepath.Dir(cfg.MD), name), c.SVG); err != nil && werr == nil {
				werr = err
			}
			return name
		}
		var b strings.Builder
		if err := RenderMarkdown(&b, rep, ref); err != nil {
			return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
		if werr != nil {
			return werr
		}
		if err := WriteFile(cfg.MD, []byte(b.String())); err != nil {
			return err
		}
		fmt.Fprintf(cfg.Stdout, "wrote %s\n", cfg.MD)
	}
	if len(rep.Findings) > 0 {
		return fmt.Errorf("%w: %s: the report was written, with its %d finding(s) under a DOES NOT VERIFY badge; run idemlab verify %s for the list", errclass.ErrFindings, cfg.Dir, len(rep.Findings), cfg.Dir)
	}
	return nil
}

// CompareConfig is the report command's settings for several folders.
type CompareConfig struct {
	Registry scenario.Registry
	Dirs     []string
	HTML     string
	MD       string
	Limits   results.Limits
	Stdout   io.Writer
}

// RunCompare verifies every folder, then sets them side by side. Without
// --html or --md it prints the Markdown on stdout. A folder that does not
// verify is named, nothing is written, and the error has verify's class.
func RunCompare(ctx context.Context, cfg CompareConfig) error {
	for _, p := range []struct{ flag, path string }{{"--html", cfg.HTML}, {"--md", cfg.MD}} {
		if err := CheckWritable(p.flag, p.path); err != nil {
			return err
		}
	}
	outs, err := verifyAll(ctx, cfg.Dirs, cfg.Registry, cfg.Limits)
	if err != nil {
		return err
	}
	cmp, err := BuildComparison(outs, cfg.Registry)
	if err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrFindings, err)
	}
	var md strings.Builder
	RenderComparisonMarkdown(&md, cmp)
	if cfg.HTML == "" && cfg.MD == "" {
		_, err := io.WriteString(cfg.Stdout, md.String())
		return err
	}
	if cfg.HTML != "" {
		var b strings.Builder
		if err := RenderComparisonHTML(&b, cmp); err != nil {
			return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
		}
		if err := WriteFile(cfg.HTML, []byte(b.String())); err != nil {
			return err
		}
		fmt.Fprintf(cfg.Stdout, "wrote %s\n", cfg.HTML)
	}
	if cfg.MD != "" {
		if err := WriteFile(cfg.MD, []byte(md.String())); err != nil {
			return err
		}
		fmt.Fprintf(cfg.Stdout, "wrote %s\n", cfg.MD)
	}
	return nil
}
