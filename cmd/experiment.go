package cmd

import (
	"context"
	"fmt"
	"io"
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

// defaultInput is --input when not given.
const defaultInput = "input.json"

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
	// SummaryJSON and JUnit are files for CI, written on every exit.
	SummaryJSON string
	JUnit       string
	// Backend says where a PostgreSQL run's database lives.
	Backend backend.Options
	// Parallel is --parallel; 0 when not given.
	Parallel int
	hooks    Hooks
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
		Short: "Run the scenarios with real worker processes into a results folder",
		Long: `Run the scenarios, each worker in a fresh child process of this same binary,
and write DIR/results.json, DIR/observations.jsonl, DIR/raw-processes.jsonl
and DIR/input.json (a copy of the input file).

DIR must not exist, not even empty. The files are written into a hidden
sibling folder that is renamed to DIR only when all of them are complete.
A shard job (--shard i/n) is the exception, for engines that run a job
again (a requeue, a retried pod, a re-run CI job): when DIR holds a folder
that verifies as shard i/n of the same run (the same scenarios, input,
files read, flags but --parallel, and executable hash), it prints "shard
i/n already done in DIR" and runs nothing, exit 0 (1 if that run failed its
expectations); one that finds DIR published while it ran discards its own
results the same way. Anything else at DIR is still exit 2.

Scenario flags override the scenario's section of the input file; each must
belong to a chosen scenario ("idemlab list" shows them).

--summary-json and --junit are checked before anything runs (an unwritable
path is exit 2), then written on every exit, each through a rename, with
the run's status (pass, fail, error or interrupted) and its error line, so
they never describe an earlier run. --quiet prints only the one-line result
and the failures.

` + exitHelp("experiment"),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runExperiment(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Out, "out", "", "results folder to create (must not exist)")
	c.Flags().StringVar(&opts.Input, "input", defaultInput, "input file")
	c.Flags().BoolVar(&opts.Quiet, "quiet", false, "print only the one-line result and the failures: no progress, no tables, no next steps")
	c.Flags().BoolVar(&opts.Verbose, "verbose", false, "print the full expected-vs-observed diff of each failed condition")
	c.Flags().StringVar(&opts.SummaryJSON, "summary-json", "", "also write a machine-readable summary to FILE on every exit, with its status (idemlab help ci has a jq line)")
	c.Flags().StringVar(&opts.JUnit, "junit", "", "also write a JUnit XML report to FILE on every exit, one test case per condition")
	c.Flags().IntVar(&opts.Parallel, "parallel", 0, fmt.Sprintf("explore, pattern, durability: trials and races run at once, 1 to %d (default: the input's parallel, else runtime.GOMAXPROCS, the CPUs this process may use); recorded beside the settings, not in them, so shards run with different values merge", scenario.MaxParallel))
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
		fl := c.Flags().VarPF(&overrideFlag{name: name, into: opts.Overrides, bool: d.f.Bool}, name, "", flagUsage(d.owners, d.f.Usage))
		if d.f.Bool {
			fl.NoOptDefVal = "true"
		}
	}
	return c
}

// runExperiment checks the CI files' paths first, then runs, and writes
// the CI files on every exit after that, pass or not, so they never
// describe an earlier run.
// flagUsage is a scenario flag's help, led by the scenarios that take it.
// A usage that already names its scenario ("claim: racing processes")
// is not led twice.
func flagUsage(owners []string, usage string) string {
	for _, o := range owners {
		usage = strings.TrimPrefix(usage, o+": ")
	}
	return strings.Join(owners, ", ") + ": " + usage
}

func runExperiment(ctx context.Context, opts *ExperimentOptions) error {
	if err := checkCIPaths(opts); err != nil {
		return err
	}
	res, err := experiment(ctx, opts)
	if werr := writeCISummaries(opts, res, err); werr != nil {
		if err == nil {
			return werr
		}
		fmt.Fprintf(opts.Streams.Err, "idemlab: %v\n", werr)
	}
	return err
}

// experiment runs the suite and prints the result. res is nil when no
// folder was written.
func experiment(ctx context.Context, opts *ExperimentOptions) (*results.Results, error) {
	if opts.Out == "" {
		return nil, fmt.Errorf("%w: --out is required, e.g. --out results-local", errclass.ErrUsage)
	}
	if opts.Parallel < 0 || opts.Parallel > scenario.MaxParallel {
		return nil, fmt.Errorf("%w: --parallel %d: want 1 to %d", errclass.ErrUsage, opts.Parallel, scenario.MaxParallel)
	}
	exe, wd, err := selfAndWorkdir(opts.hooks.Executable)
	if err != nil {
		return nil, err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer teardownDeadline(ctx, opts.Streams.Err)()
	prog := progress.New(opts.Streams.Err, opts.Quiet, "experiment")
	so := suite.Options{
		Registry: opts.hooks.Registry, Out: opts.Out, InputPath: opts.Input, Scenarios: opts.Scenarios,
		Overrides: opts.Overrides, Executable: exe, Workdir: wd, TempDir: opts.hooks.TempDir,
		Backend: opts.Backend, Parallel: opts.Parallel, OnBackend: sayCleaned(opts.Streams.Err, opts.hooks.OnBackend),
		OnStart: prog.Start, OnScenario: prog.Scenario, OnProcess: prog.Process, Notice: opts.Streams.Err,
	}
	part := shardJob(opts)
	if _, lerr := os.Lstat(opts.Out); part != nil && lerr == nil {
		return shardAlreadyDone(ctx, opts, exe, part, nil)
	}
	res, plans, err := suite.Run(ctx, so)
	prog.Done(err)
	if t := takenBy(err); part != nil && t != nil {
		return shardAlreadyDone(ctx, opts, exe, part, t)
	}
	if res != nil {
		printSummary(opts, res, plans)
	}
	return res, err
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
	if !opts.Quiet {
		printTables(opts, res, plans)
	}
	suite.PrintFailures(opts.Streams.Err, suite.Failures(opts.hooks.Registry, res))
	if opts.Verbose {
		printDifferences(opts.Streams.Err, res)
	}
	fmt.Fprintln(w, resultLine(suite.Verdict(opts.hooks.Registry, res), "results in "+opts.Out))
	if opts.Quiet {
		return
	}
	self := selfName()
	fmt.Fprintf(w, "Check it:   %s verify %s\n", self, opts.Out)
	fmt.Fprintf(w, "            (add --rerun to run it again and compare)\n")
	fmt.Fprintf(w, "Read it:    %s report %s --html %s\n", self, opts.Out, filepath.Join(opts.Out, "report.html"))
	if res.Shard != nil {
		fmt.Fprintf(w, "Join it:    %s merge --out DIR, then the folders of shards 1/%d to %d/%d (this is %s)\n", self, res.Shard.Count, res.Shard.Count, res.Shard.Count, res.Shard)
	}
}

// printTables prints each scenario's tables and how the run compares with
// the article.
func printTables(opts *ExperimentOptions, res *results.Results, plans []suite.Planned) {
	w := opts.Streams.Out
	for i, sr := range res.Scenarios {
		sec, err := plans[i].Scenario.Report(sr)
		if err != nil {
			fmt.Fprintf(opts.Streams.Err, "idemlab: %s: tables not arranged: %v\n", sr.Name, err)
			continue
		}
		printHead(w, sr.Name, sr.Pass, sec)
		for _, t := range sec.Tables {
			printTable(w, t)
		}
		printReplays(w, sec, opts)
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
}

// printDifferences prints every raw difference of each failed condition,
// for --verbose.
func printDifferences(w io.Writer, res *results.Results) {
	for _, s := range res.Scenarios {
		for _, c := range s.Conditions {
			if c.Pass {
				continue
			}
			fmt.Fprintf(w, "%s/%s: every difference (expected → observed):\n", s.Name, c.Name)
			for _, d := range c.Differences {
				fmt.Fprintf(w, "  %s: %s → %s\n", d.Path, d.Expected, d.Observed)
			}
		}
	}
}

// resultLine is the one-line result: "PASS: results in DIR", or with what
// a pass rests on, "PASS: 1 class breaks as known_unsafe expects; results
// in DIR".
func resultLine(verdict, rest string) string {
	if strings.Contains(verdict, ": ") {
		return verdict + "; " + rest
	}
	return verdict + ": " + rest
}

func verdictWord(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

// selfName is how the user can run this binary again from here: the path
// they typed, or, when go run built it into a temporary folder, "go run"
// with the module's root.
func selfName() string {
	exe := os.Args[0]
	if results.TemporaryBuild(exe) {
		return "go run " + scenario.ShellQuote(moduleRoot())
	}
	return scenario.ShellQuote(exe)
}

// moduleRoot is the folder holding go.mod, relative to the working folder:
// "." when run from the root, as the README does.
func moduleRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if rel, err := filepath.Rel(wd, dir); err == nil {
				return rel
			}
			return dir
		}
		if filepath.Dir(dir) == dir {
			return "."
		}
	}
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

// rerunFunc runs scenarios through the suite for verify --rerun, on the
// PostgreSQL server bo names when the folder ran on PostgreSQL.
func rerunFunc(h Hooks, bo backend.Options, stderr io.Writer) review.RunFunc {
	return func(ctx context.Context, out, input string, scenarios []string, overrides map[string]string, files scenario.Files) error {
		exe, wd, err := selfAndWorkdir(h.Executable)
		if err != nil {
			return err
		}
		if overrides == nil {
			overrides = map[string]string{}
		}
		_, _, err = suite.Run(ctx, suite.Options{
			Registry: h.Registry, Out: out, InputPath: input, Scenarios: scenarios, Overrides: overrides,
			Executable: exe, Workdir: wd, TempDir: h.TempDir, Files: files, Backend: bo, OnBackend: sayCleaned(stderr, h.OnBackend),
			Notice: stderr,
		})
		return err
	}
}

// sayCleaned prints, a line each, what the run's start cleaned up after
// runs now gone (backend.Info.Cleaned), then calls next, when set.
func sayCleaned(w io.Writer, next func(backend.Info)) func(backend.Info) {
	return func(i backend.Info) {
		for _, line := range i.Cleaned {
			fmt.Fprintf(w, "idemlab: %s\n", line)
		}
		if next != nil {
			next(i)
		}
	}
}

// defaultNames lists the scenarios a run without --scenario runs: every
// one but the opt-in ones, which run only when named.
func defaultNames(reg scenario.Registry) []string {
	var out []string
	for _, s := range reg {
		if !s.Caps().OptIn {
			out = append(out, s.Name())
		}
	}
	return out
}
