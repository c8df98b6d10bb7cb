package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"idemlab/experiments/backend"
	"idemlab/experiments/errclass"
	"idemlab/experiments/progress"
	"idemlab/experiments/results"
	"idemlab/experiments/review"
	"idemlab/experiments/scenario"
	"idemlab/experiments/suite"
)

const experimentExitHelp = `Exit codes:
  0    every expectation met
  1    an expectation failed: one line per failed condition on stderr; results written with "pass": false
  2    usage or input error (bad flag, bad input file, --out exists); nothing is written
  3    the harness itself failed (e.g. a worker died in a way the protocol does not allow); nothing is written
  130  interrupted (Ctrl-C or SIGTERM); the workers are stopped and nothing is written`

// ExperimentOptions are the experiment command's flags.
type ExperimentOptions struct {
	Streams   Streams
	Out       string
	Input     string
	Scenarios []string
	// Overrides are the scenario flags that were given.
	Overrides map[string]string
	Quiet     bool
	Verbose   bool
	// SummaryJSON and JUnit are files for CI, written after the run.
	SummaryJSON string
	JUnit       string
	// Backend says where a PostgreSQL run's database lives.
	Backend backend.Options
	hooks   Hooks
}

// overrideFlag records the raw text of a scenario flag, so the scenario
// parses and validates it and the run records it as typed.
type overrideFlag struct {
	name string
	into map[string]string
	bool bool
	// single flags take one value; the last given wins.
	single bool
}

func (f *overrideFlag) String() string { return f.into[f.name] }

// Set records the value; a repeated flag joins its values with commas, so
// "--mode a --mode b" means "--mode a,b" and nothing is silently dropped.
func (f *overrideFlag) Set(v string) error {
	if old, ok := f.into[f.name]; ok && !f.bool && !f.single {
		v = old + "," + v
	}
	f.into[f.name] = v
	return nil
}
func (f *overrideFlag) Type() string {
	if f.bool {
		return "bool"
	}
	return "value"
}

func newExperimentCmd(s Streams, h Hooks) *cobra.Command {
	opts := &ExperimentOptions{Streams: s, hooks: h, Overrides: map[string]string{}}
	c := &cobra.Command{
		Use:   "experiment --out DIR [--scenario NAME ...] [--input FILE] [scenario flags]",
		Short: "Run the scenarios with real worker processes and write a results folder",
		Long: `Run the scenarios, each worker in a fresh child process of this same binary,
and write DIR/results.json, DIR/observations.jsonl, DIR/raw-processes.jsonl
and DIR/input.json (a copy of the input file).

DIR must not exist, not even empty. The files are written into a hidden
sibling folder that is renamed to DIR only when all of them are complete.
Scenario flags override the scenario's section of the input file; each must
belong to a chosen scenario ("idemlab list" shows them).

` + experimentExitHelp,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runExperiment(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Out, "out", "", "results folder to create (must not exist)")
	c.Flags().StringVar(&opts.Input, "input", "input.json", "input file")
	c.Flags().BoolVar(&opts.Quiet, "quiet", false, "print no progress")
	c.Flags().BoolVar(&opts.Verbose, "verbose", false, "print the full expected-vs-observed diff of each failed condition")
	c.Flags().StringVar(&opts.SummaryJSON, "summary-json", "", "also write a machine-readable summary to FILE (see README for a jq line)")
	c.Flags().StringVar(&opts.JUnit, "junit", "", "also write a JUnit XML report to FILE, one test case per condition")
	bindBackendFlags(c, opts)
	c.Flags().StringArrayVar(&opts.Scenarios, "scenario", nil, fmt.Sprintf("scenario to run, repeatable (default all but the opt-in ones: %s)", strings.Join(defaultNames(h.Registry), ", ")))
	// A flag several scenarios take is bound once; its help names them all.
	type decl struct {
		f      scenario.Flag
		owners []string
	}
	var order []string
	decls := map[string]*decl{}
	for _, sc := range h.Registry {
		for _, f := range sc.Flags() {
			d, ok := decls[f.Name]
			if !ok {
				d = &decl{f: f}
				decls[f.Name] = d
				order = append(order, f.Name)
			}
			d.owners = append(d.owners, sc.Name())
		}
	}
	for _, name := range order {
		d := decls[name]
		fl := c.Flags().VarPF(&overrideFlag{name: name, into: opts.Overrides, bool: d.f.Bool}, name, "", strings.Join(d.owners, ", ")+": "+d.f.Usage)
		if d.f.Bool {
			fl.NoOptDefVal = "true"
		}
	}
	return c
}

func runExperiment(ctx context.Context, opts *ExperimentOptions) error {
	if opts.Out == "" {
		return fmt.Errorf("%w: --out is required, e.g. --out results-local", errclass.ErrUsage)
	}
	for _, p := range []struct{ flag, path string }{{"--summary-json", opts.SummaryJSON}, {"--junit", opts.JUnit}} {
		if p.path == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(p.path)); err != nil || !st.IsDir() {
			return fmt.Errorf("%w: %s %s: folder %s does not exist", errclass.ErrUsage, p.flag, p.path, filepath.Dir(p.path))
		}
	}
	exe, wd, err := selfAndWorkdir(opts.hooks.Executable)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	prog := progress.New(opts.Streams.Err, opts.Quiet, "experiment")
	so := suite.Options{
		Registry: opts.hooks.Registry, Out: opts.Out, InputPath: opts.Input, Scenarios: opts.Scenarios,
		Overrides: opts.Overrides, Executable: exe, Workdir: wd, TempDir: opts.hooks.TempDir,
		Backend: opts.Backend, OnBackend: opts.hooks.OnBackend,
		OnStart: prog.Start, OnScenario: prog.Scenario, OnProcess: prog.Process,
	}
	res, plans, err := suite.Run(ctx, so)
	prog.Done()
	if res == nil {
		return err
	}
	printSummary(opts, res, plans)
	if werr := writeCISummaries(opts, res); werr != nil {
		return werr
	}
	return err
}

// bindBackendFlags declares the backend flags. --backend, --isolation and
// --synchronous-commit are recorded with the scenarios' overrides, since
// the settings say which backend ran; --dsn and --keep say only where.
func bindBackendFlags(c *cobra.Command, opts *ExperimentOptions) {
	for _, f := range []struct{ name, usage string }{
		{backend.FlagBackend, "sqlite (default) or postgres; overrides the input file's backend section"},
		{backend.FlagIsolation, "postgres: default_transaction_isolation, read-committed (default), repeatable-read or serializable"},
		{backend.FlagSynchronousCommit, "postgres: synchronous_commit, on (default), local or off"},
	} {
		c.Flags().Var(&overrideFlag{name: f.name, into: opts.Overrides, single: true}, f.name, f.usage)
	}
	c.Flags().StringVar(&opts.Backend.DSN, backend.FlagDSN, "", "postgres: an existing server's connection string; each run makes its own database idemlab_<run> there (default: start a throwaway cluster)")
	c.Flags().BoolVar(&opts.Backend.Keep, backend.FlagKeep, false, "postgres with --dsn: keep the run's database instead of dropping it")
}

// printSummary prints each scenario's tables, how the run compares with
// the article, the failures one line each, and what to do next.
func printSummary(opts *ExperimentOptions, res *results.Results, plans []suite.Planned) {
	w := opts.Streams.Out
	for i, sr := range res.Scenarios {
		sec, err := plans[i].Scenario.Report(sr)
		if err != nil {
			fmt.Fprintf(opts.Streams.Err, "idemlab: %s: tables not arranged: %v\n", sr.Name, err)
			continue
		}
		fmt.Fprintf(w, "== %s  %s\n", sr.Name, verdictWord(sr.Pass))
		for _, t := range sec.Tables {
			printTable(w, t)
		}
		if a := sec.Article; a != nil {
			fmt.Fprintf(w, "article %s: %d of %d published cells reproduced", a.ID, a.Matches, a.Cells)
			if a.Matches == a.Cells {
				fmt.Fprintln(w, " ✓")
			} else {
				fmt.Fprintln(w, " ✗ (see the report)")
			}
		}
		fmt.Fprintln(w)
	}
	fails := suite.Failures(res)
	for _, f := range fails {
		fmt.Fprintf(opts.Streams.Err, "FAIL %s\n", f)
	}
	if opts.Verbose {
		for _, s := range res.Scenarios {
			for _, c := range s.Conditions {
				if c.Pass {
					continue
				}
				fmt.Fprintf(opts.Streams.Err, "%s/%s: every difference (expected → observed):\n", s.Name, c.Name)
				for _, d := range c.Differences {
					fmt.Fprintf(opts.Streams.Err, "  %s: %s → %s\n", d.Path, d.Expected, d.Observed)
				}
			}
		}
	}
	self := selfName()
	fmt.Fprintf(w, "%s: results in %s\n", verdictWord(res.Pass), opts.Out)
	fmt.Fprintf(w, "Check it:   %s verify %s\n", self, opts.Out)
	fmt.Fprintf(w, "            (add --rerun to run it again and compare)\n")
	fmt.Fprintf(w, "Read it:    %s report %s --html %s\n", self, opts.Out, filepath.Join(opts.Out, "report.html"))
}

func verdictWord(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

// selfName is how the user can run this binary again: "go run ." when it
// was built by go run into a temporary folder.
func selfName() string {
	exe := os.Args[0]
	if strings.Contains(exe, string(filepath.Separator)+"go-build") || strings.HasPrefix(filepath.Base(exe), "__debug") {
		return "go run ."
	}
	if strings.HasSuffix(exe, ".test") {
		return "idemlab"
	}
	return exe
}

// selfAndWorkdir returns the binary that workers re-execute (exe, unless
// empty, in which case this process's own executable) and the working
// folder, where the source tree is looked for.
func selfAndWorkdir(exe string) (string, string, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", "", fmt.Errorf("%w: find own executable: %w", errclass.ErrHarness, err)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", "", fmt.Errorf("%w: find working folder: %w", errclass.ErrHarness, err)
	}
	return exe, wd, nil
}

// rerunFunc runs scenarios through the suite for verify --rerun.
func rerunFunc(h Hooks) review.RunFunc {
	return func(ctx context.Context, out, input string, scenarios []string, overrides map[string]string) error {
		exe, wd, err := selfAndWorkdir(h.Executable)
		if err != nil {
			return err
		}
		if overrides == nil {
			overrides = map[string]string{}
		}
		_, _, err = suite.Run(ctx, suite.Options{
			Registry: h.Registry, Out: out, InputPath: input, Scenarios: scenarios, Overrides: overrides,
			Executable: exe, Workdir: wd, TempDir: h.TempDir,
		})
		return err
	}
}

// defaultNames lists the scenarios a run without --scenario runs: every
// one but the opt-in ones, which run only when named.
func defaultNames(reg scenario.Registry) []string {
	var out []string
	for _, s := range reg {
		if !scenario.IsOptIn(s) {
			out = append(out, s.Name())
		}
	}
	return out
}
