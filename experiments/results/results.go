package results

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"idemlab/experiments/shard"
	"idemlab/worker/sqlitedb"
)

// FormatVersion is the version of the results-folder format this build
// writes. A folder without a format field is version 1.
const FormatVersion = 9

// FormatScheduled is the format that records which conditions the OS
// schedules (ConditionResult.Scheduled). A folder of an older format
// records none; verify --rerun reads it from such a folder's condition
// names, by the rule of its time.
const FormatScheduled = 6

// FormatPowerLines is the format from which a PostgreSQL power trial
// names the postmaster its cut restarted (pg_power.restarted_process_id)
// and a handler program's sync-point cuts are swept under keep and torn as
// well as drop: a folder of an older format is held to neither.
const FormatPowerLines = 8

// FormatPowerEvidence is the format from which a PostgreSQL power trial
// records whether its recovered server checked its pages
// (pg_power.data_checksums), and a power-loss mount's cut outcome names
// the hash of the op log it was planned from (log_sha256): a folder of an
// older format is asked for neither.
const FormatPowerEvidence = 9

// FormatChanges says what each version changed, so verify can tell a
// reviewer why an older folder reads as it does.
var FormatChanges = map[int]string{
	9: format9,
	8: format8,
	7: format7,
	6: format6,
	5: format5,
	2: "results.json gained format, and the findings a run's records give (a worker's report that the rows contradict, an exit outside the protocol) are stored with the conditions they fail, where version 1 stopped the run with exit 3 and wrote nothing; durability's matrix.severity ranks five classes (nothing lost, rolled back and redone, work lost, duplicate, corrupt or missing) where version 1 ranked four; durability's records carry each trial's VFS op log and its oracle predicts every power cut exactly, so a durability scenario of version 1 cannot be derived again; files a plan reads besides the input file (a pattern file) are carried in attachments/",
	4: "durability runs on --backend postgres: its settings gained backend, isolation and server_settings, its conditions synchronous_commit and the crash kind server; its observations gained server (the crash's frozen writers, the settings read back after recovery and the rows lost) and hold a connection string as db, no VFS op log, and amcheck's verdict as integrity; its trials gained lost_rows. A SQLite folder of version 3 derives as before",
	3: "results.json gained shard (a folder run with --shard i/n, whose process ids start at (i-1)×1,000,000,000+1), shards (a folder joined by idemlab merge: each shard's environment, times and block of records) and, in both, each split scenario's plan (its hash, its number of trials and, in a shard's folder, the trials it ran)",
}

// format9 is what version 9 changed, a clause per change, joined by
// "; " as a constant: nothing is built at every worker's start.
const format9 = "a PostgreSQL power trial records what its recovered server says of data_checksums (pg_power.data_checksums), which must be on: without it no page is checked and no checksum failure counted; a folder of format 8 or older records none and is not asked for it" +
	"; " + "a power-loss mount's cut outcome names the SHA-256 of the op log the server planned it from (fs.outcome.log_sha256 in durability, pg_power.cut.log_sha256 on PostgreSQL, powerfs.outcome.log_sha256 for a program), so a recorded log edited in any op, even one that changes no survivor, derives another cut; a folder of format 8 or older names none and is not asked for it"

// format8 is what version 8 changed, a clause per change, joined by
// "; " as a constant: nothing is built at every worker's start.
const format8 = "a PostgreSQL power trial names the postmaster its cut restarted on the rebuilt folder (pg_power.restarted_process_id), whose process line the harness writes when it stops that server after the trial's last read; a folder of format 7 or older names none and is not asked for it" +
	"; " + "a handler program's sync-point cuts (--sync-points) are swept under keep and torn as well as drop, their keys ending in the model (CONDITION@sync-N-before/keep); a folder of format 7 or older swept drop alone and is planned so" +
	"; " + "redelivery's --broker-faults gained the TTL claim under an AckWait shorter than the work (ttl-claim/ack-wait-shorter-than-work/ttl-shorter-than-work and ttl-longer-than-work, each with claim_ttl_ms), and --broker-power gained the keep and torn cuts of the broker's store (each with power_model); a folder of format 7 or older ran neither, so its settings read as recorded"

// format7 is what version 7 changed, a clause per change, joined by
// "; " as a constant: nothing is built at every worker's start.
const format7 = "the article patterns run from pattern files (issue 28, part 2)" +
	"; " + "explore runs separate-commit, single-transaction, claim-do-nothing and claim-ttl from their pattern files (testdata/patterns, embedded in the binary) through the pattern scenario's subject, fold and oracle: its settings gained articles (the pattern scenario's settings of the four files, under the faults points, random and concurrent, one per isolation level on PostgreSQL), those conditions are the pattern scenario's (kind pattern-file, judged by each file's invariants and known_unsafe), and its extra gained articles (the pattern scenario's extra); its settings' patterns and conditions list the built-in subjects alone (batch-journal, batch-rerun-all, the claim-ttl probe, lease-batch); on PostgreSQL the four files race under each level (PATTERN/LEVEL/concurrent, the pattern named after its level) where the hand-written racers raced, and not_run says so. A folder of format 6 or older, whose patterns name the hand-written separate-commit and single-transaction workers, is folded by them as before, and its settings are derived by this build as a change of format" +
	"; " + "power cuts made by the filesystem (issue 29, --power-layer fs)" +
	"; " + "durability's settings gained power_layer (\"fs\" where the power cuts were made by the power-loss filesystem, absent for the VFS), and each of its power trials on the fs layer an observation field fs (the mount the first process ran on, the models, the powerfs op log and the cut's outcome, which verify derives again from the log) in place of the VFS's recovery report; a folder of format 6 or older has neither and derives as before" +
	"; " + "a handler program's power class on the power-loss filesystem (issue 29)" +
	"; " + "on SQLite a pattern file's command gets the power class where the machine has FUSE: each power trial runs the program with its database on a powerfs mount of its own and the setting in IDEMLAB_JOURNAL_MODE and IDEMLAB_SYNCHRONOUS, cuts at a point, after the ACK or at ack-open (the last point the discovery announced, counted as the ACK) under drop, keep and torn, and records powerfs (the op log or its SHA-256 and size, the models and the outcome), which verify derives again with powerfs.Plan; a pattern records power_not_applicable where FUSE is missing; a folder of version 6 or older gave a program no power condition, so its settings read as recorded" +
	"; " + "the environment gained fuse (\"available\", or the one-line reason the machine had no FUSE when the run was planned), and verify, merge and report plan a program's power class and the fs layer with it rather than with the machine they run on; a folder of format 6 or older has none and is planned as on a machine with FUSE, which it never needed"

// format6 is what version 6 changed, a clause per change, joined by
// "; " as a constant: nothing is built at every worker's start.
const format6 = "one scenario contract (issue 28)" +
	"; " + "a condition records scheduled: true where the OS schedules it rather than the seed (explore's timing-kill and timing-race, pattern's random and concurrent classes), as the oracle states it from the settings, so verify derives it again like any figure; verify --rerun leaves those conditions' process records out by this flag, where it read a folder of format 5 or older by the conditions' names"

// format5 is what version 5 changed, a clause per change, joined by
// "; " as a constant: nothing is built at every worker's start.
const format5 = "verdicts you can bet on (issue 26) and bounded runs (issue 27)" +
	"; " + "a pattern delivery gained socket_cut, the bytes its program sent on the points socket past the socket's caps (64 KiB a line and of stray text, 256 KiB of point names), a finding; a stray line is kept cut at its cap and marked, and a last line with no newline is stray where it was dropped; every worker runs in its own process group, killed whole" +
	"; " + "a pattern observation's values record what each query invariant returned (rows, columns, type, null, text, or the error of a query that failed as it ran) where version 4 held an integer that counted no row and NULL as 0; no row, NULL, several rows or columns, a value that is not an integer or a query's error is a finding on the trial, and on PostgreSQL a column of another type is refused at plan time; a folder of version 4 or older reads its integers as before" +
	"; " + "code.working_tree_at_start hashes every file the build reads (cgo sources and headers, embedded files), so an older folder's is not compared; each process line records executable_sha256, the hash of the file it was started from, which verify checks against the run's executable and merge between shards, and which an older folder lacks (a notice); every scenario's process windows and the run's times are checked; attachments/ carries every regular file beside the files the plans read, up to 16 MiB, marked carried, and results.json attachments_left_out lists what it did not" +
	"; " + "every process that sends is given the receiver URL with a sender token of its own as a path prefix (/s/p<n>/, the trial's n-th process), the receiver logs it with each send (sender, or unknown without one), and sends are counted for the process that sent them, never by the time window it ran in; explore's observations list each process's token (senders), its receiver_log rows carry the sender as a seventh field, and its extra lists the late_sends the receiver logged after the parent saw their sender end; batch's run lines name their token (sender, p<run number>), a run's sends are the ones its token names in any line, and its extra lists late_sends too; pattern's observations say senders (the first deliveries or racers p1 onwards, redeliveries after them) and a delivery's reported sends are matched with its own. A folder of format 4, without tokens, is read by the time windows (and pattern's over the whole log) as before" +
	"; " + "pattern's power class cuts every setting under three models of what reaches the disk (drop, keep, and torn seeded from the run's seed), each a row of the setting (extra models) whose verdict is the worst of them, and adds the ack-open cut; its observations name their model, and a folder whose power trials name none is read as the drop-only plan of points and ack it ran; a handler program's kill trials are timed from its first point, its deliveries record each point's arrival (points_us), and the random condition's extra says where each kill landed (kills)" +
	"; " + "pattern: a condition's observed figures carry its first violation (trial, fault, point, and each broken invariant's want and got), a measurement where the OS schedules the trials, and a power condition's whether some power setting broke; a bare power in known_unsafe expects some power setting to break, power:SETTING that one (the settings record known_unsafe_rule; a folder without it keeps the older rule)"

// FormatDerivations lists, per version, the derived fields whose
// derivation that version changed, as path prefixes in results.json ("[*]"
// stands for any index). In a
// folder of an older format they were derived by the older rule, so verify
// reports a difference under them as a change of format, not a finding.
var FormatDerivations = map[int][]string{
	// explore's article patterns run from their files: a new run's
	// settings list the built-in subjects alone, and the files apart.
	7: {
		"scenarios[explore].settings.patterns",
		"scenarios[explore].settings.conditions",
		"scenarios[explore].settings.articles",
		"scenarios[explore].settings.not_run",
		// A program on SQLite gained power settings and conditions where
		// the machine has FUSE; an older folder recorded none.
		"scenarios[pattern].settings.patterns[*].power",
		"scenarios[pattern].settings.conditions",
	},
	// redelivery's broker conditions gained the TTL claims and the keep
	// and torn cuts of the broker's store.
	8: {"scenarios[redelivery].settings.conditions"},
	2: {"scenarios[durability].extra.matrix.severity"},
	// The first violation of a pattern condition was the first line's,
	// which parallel trials record in any order; it is the lowest trial's.
	3: {"scenarios[pattern].extra.patterns[*].conditions[*].first"},
	// A pattern condition's observed figures gained its first violation
	// and, on power, whether some power setting broke; the first
	// violation names each broken invariant's want and got, and a crash
	// at the k-th hit its point; from format 5 the settings record
	// known_unsafe_rule, and a folder without it keeps the rule that a
	// bare power asks every setting to break.
	5: {
		"scenarios[pattern].conditions[*].observed.first",
		"scenarios[pattern].conditions[*].observed.power_violated",
		"scenarios[pattern].extra.patterns[*].conditions[*].first",
		"scenarios[pattern].settings.known_unsafe_rule",
		// A power condition's rows per model; an older folder has none
		// recorded, and its records give the drop model's row alone.
		"scenarios[pattern].extra.patterns[*].conditions[*].models",
	},
}

// FormatRecords lists, per version, the scenarios whose records that
// version changed so that an older folder's cannot be derived again by
// this build's fold. verify says so in one line for such a scenario, and
// derives the others.
var FormatRecords = map[int]map[string]string{
	2: {"durability": "each trial carries its VFS op log, and the oracle predicts every power cut exactly"},
}

// Results is results.json.
type Results struct {
	// Format is the folder format's version; absent means 1.
	Format      int         `json:"format,omitempty"`
	Tool        Tool        `json:"tool"`
	StartedAt   string      `json:"started_at"`
	FinishedAt  string      `json:"finished_at"`
	Environment Environment `json:"environment"`
	Inputs      Inputs      `json:"inputs"`
	Code        Code        `json:"code"`
	// Attachments are the files the plans read besides the input file,
	// copied into the folder.
	Attachments []Attachment `json:"attachments,omitempty"`
	// AttachmentsLeftOut lists, a line a file, what the run did not
	// carry of the files beside the ones the plans read (over the budget,
	// a link): see Attachment.Carried.
	AttachmentsLeftOut []string `json:"attachments_left_out,omitempty"`
	// Shard is set in a folder that ran one part of the plans, with
	// --shard i/n.
	Shard *shard.Part `json:"shard,omitempty"`
	// Shards are set in a folder that idemlab merge joined: one per shard
	// folder, in order, each with its own environment and times and the
	// block of the records it holds.
	Shards    []ShardRun       `json:"shards,omitempty"`
	Scenarios []ScenarioResult `json:"scenarios"`
	Pass      bool             `json:"pass"`
}

// ShardRun is one shard folder of a merged folder. Its records are the
// next Observations lines of observations.jsonl and the next Processes
// lines of raw-processes.jsonl, in shard order; its process ids are its
// own, kept apart from the others' by shard.Stride.
type ShardRun struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Folder is the shard folder as merge was given it, and ResultsSHA256
	// the hash of its results.json.
	Folder        string      `json:"folder"`
	ResultsSHA256 string      `json:"results_sha256"`
	StartedAt     string      `json:"started_at"`
	FinishedAt    string      `json:"finished_at"`
	Environment   Environment `json:"environment"`
	Tool          Tool        `json:"tool"`
	Code          Code        `json:"code"`
	// Pass is the shard's own verdict, over its part alone.
	Pass         bool `json:"pass"`
	Observations int  `json:"observations"`
	Processes    int  `json:"processes"`
}

// Tool identifies the build that produced the results.
type Tool struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	VCSRevision string `json:"vcs_revision,omitempty"`
	VCSModified *bool  `json:"vcs_modified,omitempty"`
	// VCSFrom says where the revision came from: "build info" when the go
	// command stamped the binary, "git" when it was read from the source
	// tree (as under "go run", which does not stamp).
	VCSFrom string `json:"vcs_from,omitempty"`
}

// Environment describes the machine.
type Environment struct {
	GoVersion     string `json:"go_version"`
	GOOS          string `json:"goos"`
	GOARCH        string `json:"goarch"`
	SQLiteVersion string `json:"sqlite_version"`
	// PostgresVersion is the server's version as the parent read it
	// back, on a run on PostgreSQL.
	PostgresVersion string `json:"postgres_version,omitempty"`
	NumCPU          int    `json:"num_cpu"`
	// FUSE is FUSEAvailable where the machine had FUSE when the run was
	// planned, otherwise the one-line reason it had not; plans that depend
	// on it (a program's power class, the fs layer) are derived again
	// from this record, never from the machine verify runs on. A folder of
	// format 6 or older has none.
	FUSE string `json:"fuse,omitempty"`
}

// FUSEAvailable is Environment.FUSE on a machine that had FUSE.
const FUSEAvailable = "available"

// Inputs names the input file, its hash, and the copy the folder carries,
// so a folder handed over alone can still be verified.
type Inputs struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Copy   string `json:"copy"`
}

// InputCopyFile is the name of the input file's copy in a results folder.
const InputCopyFile = "input.json"

// Code says what ran. The executable's hash and its build information are
// what the binary can say about itself; the working tree hash only says
// what the source folder held when the run started, which need not be the
// code the binary was built from.
type Code struct {
	ExecutableSHA256 string    `json:"executable_sha256"`
	Build            BuildInfo `json:"build"`
	// WorkingTree is the hash of the working tree at start, when the run
	// started inside the idemlab module.
	WorkingTree     *SourceHash `json:"working_tree_at_start,omitempty"`
	WorkingTreeNote string      `json:"working_tree_note,omitempty"`
}

// BuildInfo is what runtime/debug.ReadBuildInfo reports about the binary.
// VCS holds the vcs.* settings when the go command stamped them (go build
// in a repository does; go run does not).
type BuildInfo struct {
	GoVersion string            `json:"go_version"`
	Path      string            `json:"path"`
	Version   string            `json:"version"`
	VCS       map[string]string `json:"vcs,omitempty"`
}

// ReadBuild reads this binary's build information.
func ReadBuild() BuildInfo {
	b := BuildInfo{GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.GoVersion, b.Path, b.Version = bi.GoVersion, bi.Path, bi.Main.Version
	for _, s := range bi.Settings {
		if strings.HasPrefix(s.Key, "vcs") {
			if b.VCS == nil {
				b.VCS = map[string]string{}
			}
			b.VCS[s.Key] = s.Value
		}
	}
	return b
}

// SourceHash is the hash of the module's source tree.
type SourceHash struct {
	SHA256 string `json:"sha256"`
	Files  int    `json:"files"`
	Method string `json:"method"`
}

// ScenarioResult is one scenario in results.json. Everything but Name,
// Overrides and Settings is derived from the records by the scenario's
// fold and oracle, in the run and again in verify.
type ScenarioResult struct {
	Name string `json:"name"`
	// Overrides are the experiment's flags that changed the input
	// section, by flag name without dashes.
	Overrides map[string]string `json:"overrides,omitempty"`
	// Settings are derived from the input section and the overrides.
	Settings json.RawMessage `json:"settings"`
	// Parallel is how many trials ran at once: how the run was
	// scheduled, not what it tested, so it stands outside the settings
	// (and the shard plan's hash), and verify does not derive it. Absent
	// for a scenario that does not run its trials side by side, in a
	// merged folder, and in folders made before it moved here, whose
	// settings held it.
	Parallel   int               `json:"parallel,omitempty"`
	Conditions []ConditionResult `json:"conditions"`
	// Extra holds scenario-specific derived tables, such as a mutant table.
	Extra json.RawMessage `json:"extra,omitempty"`
	// Findings are contradictions in the records that belong to no one
	// condition; each fails the scenario.
	Findings []Finding `json:"findings,omitempty"`
	// Plan is set for a scenario split into shards: in a shard's folder
	// and in the merged one.
	Plan *PlanResult `json:"plan,omitempty"`
	Pass bool        `json:"pass"`
}

// PlanResult is a split scenario's plan as the records give it.
type PlanResult struct {
	// SHA256 is shard.PlanHash: the settings but the shard, the points
	// the discovery runs passed, and every trial id.
	SHA256 string `json:"sha256"`
	// Trials counts the whole plan's trials.
	Trials int `json:"trials"`
	// Index and Count are the shard of a shard's folder; a merged folder
	// has Count alone.
	Index int `json:"index,omitempty"`
	Count int `json:"count"`
	// Ran are the trial ids a shard's folder holds, in plan order.
	Ran []string `json:"ran,omitempty"`
}

// ConditionResult compares what the oracle expected with what was observed.
type ConditionResult struct {
	Name string `json:"name"`
	// Scheduled says the OS schedules the condition rather than the seed
	// (kills after a delay, racing workers), as the oracle states it:
	// verify --rerun compares its derived figures but not its process
	// records. Format 6 records it; an older folder's reader takes it
	// from the condition's name (see review's rerun).
	Scheduled bool            `json:"scheduled,omitempty"`
	Expected  json.RawMessage `json:"expected"`
	Observed  json.RawMessage `json:"observed"`
	Pass      bool            `json:"pass"`
	// Differences lists each leaf where observed differs from expected.
	Differences []Difference `json:"differences,omitempty"`
	// Findings are contradictions in this condition's records, such as a
	// worker whose report disagrees with the rows; each fails it.
	Findings []Finding `json:"findings,omitempty"`
}

// Difference is one field where the observation missed the oracle.
type Difference struct {
	Path     string `json:"path"`
	Expected string `json:"expected"`
	Observed string `json:"observed"`
}

// Failures lists "scenario/condition" for every failing condition.
func (r *Results) Failures() []string {
	var out []string
	for _, s := range r.Scenarios {
		for _, c := range s.Conditions {
			if !c.Pass {
				out = append(out, s.Name+"/"+c.Name)
			}
		}
	}
	return out
}

// ToolInfo reads the build information embedded by the go command and,
// when the binary carries no revision, asks git in the source tree found
// from workdir.
func ToolInfo(workdir string) Tool {
	t := Tool{Name: "idemlab", Version: "unknown"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		t.Version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				t.VCSRevision, t.VCSFrom = s.Value, "build info"
			case "vcs.modified":
				m := s.Value == "true"
				t.VCSModified = &m
			}
		}
	}
	if t.VCSRevision != "" {
		return t
	}
	root, ok := FindModuleRoot(workdir)
	if !ok {
		return t
	}
	rev, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return t
	}
	status, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil {
		return t
	}
	m := len(bytes.TrimSpace(status)) > 0
	t.VCSRevision, t.VCSModified, t.VCSFrom = string(bytes.TrimSpace(rev)), &m, "git"
	return t
}

// Env describes this machine.
func HostEnvironment() Environment {
	return Environment{
		GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		SQLiteVersion: sqlitedb.Version(), NumCPU: runtime.NumCPU(),
	}
}

// HashFile returns the hex SHA-256 of a file.
func HashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// TemporaryBuild reports whether path is a binary the go command built in
// a temporary folder that it deletes afterwards (go run, go test), or a
// debugger's build.
func TemporaryBuild(path string) bool {
	for _, part := range strings.Split(filepath.ToSlash(path), "/") {
		if strings.HasPrefix(part, "go-build") {
			return true
		}
	}
	return strings.HasPrefix(filepath.Base(path), "__debug")
}

// FindModuleRoot walks up from dir to the folder whose go.mod declares
// module idemlab. ok is false when no such folder exists, as when a binary
// runs away from its source.
func FindModuleRoot(dir string) (string, bool) {
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if strings.TrimSpace(line) == "module idemlab" {
					return dir, true
				}
			}
			return "", false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// CodeHashes hashes the running executable, reads its build information
// and, when the working folder is inside the idemlab module, hashes the
// working tree.
func CodeHashes(executable, workdir string) (Code, error) {
	c := Code{Build: ReadBuild()}
	sum, err := HashFile(executable)
	if err != nil {
		return c, fmt.Errorf("hash executable: %w", err)
	}
	c.ExecutableSHA256 = sum
	root, ok := FindModuleRoot(workdir)
	if !ok {
		c.WorkingTreeNote = "no idemlab source tree in the working folder; only the executable is identified"
		return c, nil
	}
	src, err := SourceTreeHash(root)
	if err != nil {
		return c, err
	}
	c.WorkingTree = &src
	return c, nil
}

// AllFindings lists the scenario's findings, then each condition's, in
// order.
func (s ScenarioResult) AllFindings() []Finding {
	out := append([]Finding{}, s.Findings...)
	for _, c := range s.Conditions {
		out = append(out, c.Findings...)
	}
	return out
}
