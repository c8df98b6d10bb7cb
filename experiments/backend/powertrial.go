package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
}

// StartPowerTrial starts a power trial's cluster beside the run's server
// (PowerTemp, or tmp), makes ddl in schema and returns the trial, whose
// sessions start with spec's settings. Close it on every path.
func (s *Server) StartPowerTrial(ctx context.Context, tmp string, cfg PowerConfig, spec Spec, schema, ddl string) (*PowerTrial, error) {
	pc, err := StartPowerCluster(ctx, s.PowerTemp(tmp), cfg)
	if err != nil {
		return nil, err
	}
	if err := pc.SetupIn(ctx, schema, ddl); err != nil {
		return nil, errors.Join(fmt.Errorf("prepare: %w", err), pc.Close())
	}
	return &PowerTrial{Cluster: pc, DB: pc.Database(spec, schema)}, nil
}

// Cut cuts the power, restarts the server on the rebuilt folder and
// reads back its settings, with amcheck and the checksum count
// (PowerCluster.Cut with ReadBackQuery).
func (t *PowerTrial) Cut(ctx context.Context) (PowerOutcome, error) {
	return t.Cluster.Cut(ctx, ReadBackQuery)
}

// Close stops the server, unmounts and removes the cluster's folder.
func (t *PowerTrial) Close() error {
	if t == nil {
		return nil
	}
	return t.Cluster.Close()
}

// CutParams are a power cut's models as every PostgreSQL power trial
// makes them: model, strict POSIX directories, 512-byte units, and under
// torn the seed.
func CutParams(model string, seed int64) powerfs.Params {
	p := powerfs.Params{Model: model, DirModel: powerfs.DirPOSIX, Unit: faultvfs.UnitSector}
	if model == powerfs.ModelTorn {
		p.Seed = seed
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
