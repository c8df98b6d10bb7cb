package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"idemlab/experiments/harness"
	"idemlab/experiments/powerlayer"
	"idemlab/experiments/results"
	"idemlab/worker/faultvfs"
	"idemlab/worker/powerfs"
)

// One PostgreSQL power trial, as every scenario runs it: a cluster of its
// own on a power-loss mount (PowerCluster) under a condition's server
// settings and cut, the scenario's tables made in a schema of their own
// and flushed whatever synchronous_commit says (Setup), a database its
// workers open, and the cut (Cut), after which the recovered server reads
// back its settings (ReadBackQuery) and amcheck and the checksum count
// run. A scenario adds only its own oracle and record fields.

// PowerTrial is one PostgreSQL power trial's cluster and the database its
// processes use.
type PowerTrial struct {
	Cluster *PowerCluster
	DB      Database
	rec     powerlayer.Recording
}

// StartPowerTrial starts a power trial's cluster beside the run's server
// (PowerTemp, or tmp), makes ddl in schema and returns the trial, whose
// sessions start with spec's settings; the postmaster the cut ends is
// recorded to rec. Close it on every path.
func (s *Server) StartPowerTrial(ctx context.Context, tmp string, cfg PowerConfig, spec Spec, schema, ddl string, rec powerlayer.Recording) (*PowerTrial, error) {
	pc, err := StartPowerCluster(ctx, s.PowerTemp(tmp), cfg)
	if err != nil {
		return nil, err
	}
	if err := pc.SetupIn(ctx, schema, ddl); err != nil {
		return nil, errors.Join(fmt.Errorf("prepare: %w", err), pc.Close())
	}
	return &PowerTrial{Cluster: pc, DB: pc.Database(spec, schema), rec: rec}, nil
}

// Cut cuts the power, restarts the server on the rebuilt folder and
// reads back its settings, with amcheck and the checksum count
// (PowerCluster.Cut with ReadBackQuery); the postmaster it SIGKILLed on
// the mount gets its process line, which the outcome names.
func (t *PowerTrial) Cut(ctx context.Context) (PowerOutcome, error) {
	o, err := t.Cluster.Cut(ctx, ReadBackQuery)
	if pm := t.Cluster.OnMount(); t.rec.Recorder != nil && !pm.Ended.IsZero() {
		id, rerr := recordPostmasterAs(pm, t.rec, PostmasterRole, syscall.SIGKILL)
		o.ServerProcessID = id
		err = errors.Join(err, rerr)
	}
	if t.rec.Recorder != nil && t.Cluster.mount != nil {
		id, rerr := powerlayer.RecordServer(t.Cluster.mount, t.rec)
		o.MountServerProcessID = id
		err = errors.Join(err, rerr)
	}
	return o, err
}

// PostmasterWorker is the worker name of a postmaster's process line.
const PostmasterWorker = harness.ServerWorker

// PostmasterRole ends the label of a postmaster's process line.
const PostmasterRole = "postmaster on the power-loss mount"

// recordPostmasterAs appends pm's process line to r's recorder, its
// label ending in role: started by pg_ctl, ended by the harness with sig
// (SIGKILL at the cut; an immediate shutdown for the restarted one). The
// harness is not the postmaster's parent, so its exit status is unseen
// (exit_code -1).
func recordPostmasterAs(pm Postmaster, r powerlayer.Recording, role string, sig syscall.Signal) (int, error) {
	started, ended, ms := harness.Window(pm.Started, pm.Ended)
	p := results.ProcessRecord{Scenario: r.Scenario, Condition: r.Condition,
		Label: strings.TrimSpace(r.Label + " " + role), Worker: PostmasterWorker,
		Argv: pm.Argv, Env: map[string]string{}, PID: pm.PID, StartedAt: started, EndedAt: ended, DurationMS: ms,
		ExitCode: -1, Signal: sig.String(), KilledBy: "harness"}
	if len(pm.Argv) > 0 {
		p.ExecutableSHA256 = r.Recorder.ExecutableSHA256("", pm.Argv[0])
	}
	if err := r.Recorder.AppendProcess(&p); err != nil {
		return 0, fmt.Errorf("record the postmaster: %w", err)
	}
	return p.ID, nil
}

// FoldPostmaster has checker c look up the process lines that power
// trial record o, on observation line l, names: the postmaster its cut
// ended (CheckPostmaster), the mount's server, and the postmaster the cut
// restarted (CheckRestarted), each against the settings want; a folder
// made before they were recorded names none. It also checks that the
// restarted server ran with data checksums (CheckChecksums) and that the
// cut names its op log's hash (powerlayer.CheckLogHash). Every fold
// of a PostgreSQL power trial calls it.
func FoldPostmaster(c *results.Checker, r results.Records, l results.Line, o PowerOutcome, want PowerSettings) {
	if field, text := CheckChecksums(o, r.Since(results.FormatPowerEvidence)); field != "" {
		c.Obs(l, "pg_power."+field, "%s", text)
	}
	if field, text := powerlayer.CheckLogHash(o.Cut, r.Since(results.FormatPowerEvidence)); field != "" {
		c.Obs(l, "pg_power.cut."+strings.TrimPrefix(field, "outcome."), "%s", text)
	}
	if o.ServerProcessID == 0 {
		return
	}
	pm, ok := c.Use(r, l, o.ServerProcessID)
	if ok {
		if field, text := CheckPostmaster(pm, want); field != "" {
			c.Proc(pm, field, "%s", text)
		}
	}
	var mount *results.Process
	if o.MountServerProcessID != 0 { // 0: a folder made before the mount's server was recorded
		if p, found := c.Use(r, l, o.MountServerProcessID); found {
			mount = &p
			// The mount is the postmaster's data folder (-D), and the
			// models are the cut's, which the fold derives again from its
			// log.
			params := powerfs.Params{Model: o.Cut.Model, DirModel: o.Cut.DirModel}
			if field, text := powerlayer.CheckServer(p, dataDirOf(pm.Argv), params); ok && field != "" {
				c.Proc(p, field, "%s", text)
			}
		}
	}
	if ok {
		checkRestartedIn(c, r, l, o, want, pm, mount)
	}
}

// CheckChecksums says whether power trial record o shows the recovered
// server checking its pages: a cluster without data checksums counts no
// checksum failure whatever the cut tore, so its "nothing corrupt" would
// be a pass that could not fail. A server that did not start again reads
// nothing; recorded says the folder is new enough to record the setting
// (results.FormatPowerEvidence), an older one is not asked for it. It
// returns the field that is wrong ("data_checksums"), or "".
func CheckChecksums(o PowerOutcome, recorded bool) (field, text string) {
	switch {
	case !o.Started, o.DataChecksums == "" && !recorded:
		return "", ""
	case o.DataChecksums == "":
		return "data_checksums", "missing: the recovered server's data_checksums is read back after every restart"
	case o.DataChecksums != "on":
		return "data_checksums", fmt.Sprintf("%q, but a power trial's cluster is made with data checksums (initdb -k), without which no torn page is found", o.DataChecksums)
	}
	return "", ""
}

// dataDirOf is the data folder a postmaster's command line names (-D).
func dataDirOf(argv []string) string {
	d, _ := powerlayer.ArgOf(argv, "-D")
	return d
}

// CheckPostmaster checks process line p, which a power trial's record
// names as the postmaster its cut ended: a postgres server, started with
// every setting the trial's server runs with (PowerQuiet and want's),
// and SIGKILLed by the harness. It returns the first field that is wrong,
// or "".
func CheckPostmaster(p results.Process, want PowerSettings) (field, text string) {
	if field, text := checkServerLine(p, want, "its cut ended"); field != "" {
		return field, text
	}
	if p.Signal != syscall.SIGKILL.String() || p.KilledBy != "harness" {
		return "signal", fmt.Sprintf("%q, killed by %q, but the cut SIGKILLs the postmaster (killed, by the harness)", p.Signal, p.KilledBy)
	}
	return "", ""
}

// checkServerLine checks what every postmaster line of a power trial
// holds: the postgres worker, started with every setting the trial's
// server runs with (PowerQuiet and want's); which names the line in the
// text ("its cut ended").
func checkServerLine(p results.Process, want PowerSettings, which string) (field, text string) {
	if p.Worker != PostmasterWorker {
		return "worker", fmt.Sprintf("is %q, but the record names it as the postmaster %s (%s)", p.Worker, which, PostmasterWorker)
	}
	var got []string
	for i := 0; i+1 < len(p.Argv); i++ {
		if p.Argv[i] == "-c" {
			got = append(got, p.Argv[i+1])
		}
	}
	if w := want.started(); !slices.Equal(got, w) {
		return "argv", fmt.Sprintf("sets %v, but the trial's server runs with %v", got, w)
	}
	return "", ""
}

// Close stops the server, unmounts and removes the cluster's folder.
func (t *PowerTrial) Close() error {
	if t == nil {
		return nil
	}
	return t.Cluster.Close()
}

// CutParams are a power cut's models as every PostgreSQL power trial
// and a program's power trial make them: model, strict POSIX directories,
// and under torn the seed and unit, the run's fault_unit (0, as a folder
// made before the setting recorded it, is the 512-byte sector). Every
// other model records the sector, which it never reads.
func CutParams(model string, seed int64, unit int) powerfs.Params {
	p := powerfs.Params{Model: model, DirModel: powerfs.DirPOSIX, Unit: faultvfs.UnitSector}
	if model == powerfs.ModelTorn {
		p.Seed = seed
		if unit != 0 {
			p.Unit = unit
		}
	}
	return p
}

// Name is s as conditions name it: "fsync=on,synchronous_commit=off,
// full_page_writes=on" (wal_sync_method is the run's, not named).
func (s PowerSettings) Name() string {
	return "fsync=" + s.Fsync + ",synchronous_commit=" + s.SynchronousCommit + ",full_page_writes=" + s.FullPageWrites
}

// PowerNamePrefix starts every Name.
const PowerNamePrefix = "fsync="

// ParsePowerName reads a Name back; names it does not know are ignored.
func ParsePowerName(name string) PowerSettings {
	var s PowerSettings
	for _, kv := range strings.Split(name, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "fsync":
			s.Fsync = v
		case "synchronous_commit":
			s.SynchronousCommit = v
		case "full_page_writes":
			s.FullPageWrites = v
		}
	}
	return s
}

// Damage is what a recorded power cut says the recovered server showed:
// a start that failed (with its log's first FATAL or PANIC line, else
// its last line), amcheck's rejections, checksum failures and the pages the
// server's log rejected; none for an undamaged cluster.
func (o PowerOutcome) Damage() []string {
	var out []string
	if !o.Started {
		why := ""
		for i := len(o.StartLog) - 1; i >= 0; i-- {
			if why == "" || strings.Contains(o.StartLog[i], "FATAL:") || strings.Contains(o.StartLog[i], "PANIC:") {
				why = ": " + o.StartLog[i]
			}
		}
		out = append(out, "the server did not start on the rebuilt folder"+why)
	}
	for _, a := range o.Amcheck {
		out = append(out, "amcheck: "+a)
	}
	if o.ChecksumFailures > 0 {
		out = append(out, fmt.Sprintf("checksum failures: %d", o.ChecksumFailures))
	}
	return append(out, o.Rejected...)
}
