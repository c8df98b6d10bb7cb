// Package redelivery reproduces article 000: a completion event whose
// follow-up job and processed record are written in two commits or in one
// transaction, a worker that dies at a chosen point, and the same event
// redelivered to a fresh process.
package redelivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"idemlab/worker/protocol"
	"strings"
	"time"

	"idemlab/experiments/backend"
	"idemlab/experiments/broker"
	"idemlab/experiments/engine"
	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	wr "idemlab/worker/redelivery"
	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// Name is the scenario's name on the command line.
const Name = "redelivery"

// DBName is the database file's name inside each condition's folder.
const DBName = "events.sqlite3"

// Input is the redelivery section of input.json.
type Input struct {
	// EventID is the delivered event's id.
	EventID string `json:"event_id"`
	// JobKey is the key of the follow-up job the handler inserts.
	JobKey string `json:"job_key"`
}

// Validate names the first bad field.
func (in Input) Validate() error {
	if err := protocol.CheckFields(Name, "event_id", in.EventID, "job_key", in.JobKey); err != nil {
		return err
	}
	if strings.TrimSpace(in.EventID) == "" {
		return errors.New("redelivery.event_id: must not be empty")
	}
	if strings.TrimSpace(in.JobKey) == "" {
		return errors.New("redelivery.job_key: must not be empty")
	}
	return nil
}

// Condition is one pattern with an optional crash point on delivery 1.
type Condition struct {
	Name    string     `json:"name"`
	Pattern wr.Pattern `json:"pattern"`
	CrashAt string     `json:"crash_at,omitempty"`
	// ServerCrash crashes the PostgreSQL server after delivery 1, at its
	// crash point or after its ACK, and lets it recover before the
	// redelivery (--server-crash).
	ServerCrash bool `json:"server_crash,omitempty"`
	// BrokerFault is what the harness does to the broker or what the
	// consumer does slowly (--broker-faults); DuplicateWindowMS, when set,
	// is the condition's own dedup window, and HoldMS how long delivery 1
	// works on after its commits.
	BrokerFault       string `json:"broker_fault,omitempty"`
	DuplicateWindowMS int64  `json:"duplicate_window_ms,omitempty"`
	HoldMS            int64  `json:"hold_ms,omitempty"`
	// ProgressMS is how often delivery 1 says it is still working, and
	// MaxDeliver, when set, the condition's own limit of deliveries.
	ProgressMS int64 `json:"progress_ms,omitempty"`
	MaxDeliver int   `json:"max_deliver,omitempty"`
	// ClaimTTLMS is the TTL of the claim every delivery of a ttl-claim
	// condition takes before the work.
	ClaimTTLMS int64 `json:"claim_ttl_ms,omitempty"`
	// SyncInterval, when set, is the condition's own sync_interval, and
	// DirModel the directory model of its broker's power cut
	// (--broker-power); PowerModel its data model, drop when empty (as in
	// folders made before keep and torn ran).
	SyncInterval string `json:"sync_interval,omitempty"`
	DirModel     string `json:"dir_model,omitempty"`
	PowerModel   string `json:"power_model,omitempty"`
}

// Conditions are the article's four conditions plus single-transaction
// normal, in the article's order.
func Conditions() []Condition {
	return []Condition{
		{Name: "separate-commit/normal", Pattern: wr.SeparateCommit, CrashAt: ""},
		{Name: "separate-commit/crash-after-job-commit", Pattern: wr.SeparateCommit, CrashAt: wr.PointAfterJobCommit},
		{Name: "single-transaction/normal", Pattern: wr.SingleTransaction, CrashAt: ""},
		{Name: "single-transaction/crash-before-commit", Pattern: wr.SingleTransaction, CrashAt: wr.PointBeforeCommit},
		{Name: "single-transaction/crash-after-commit", Pattern: wr.SingleTransaction, CrashAt: wr.PointAfterCommit},
	}
}

// ServerCrashConditions are the conditions --server-crash adds: the
// server SIGKILLed (postmaster and backends) after delivery 1 stopped at
// the separate commits' duplicate point, or after its ACK.
func ServerCrashConditions() []Condition {
	return []Condition{
		{Name: "separate-commit/crash-after-job-commit/server-crash", Pattern: wr.SeparateCommit, CrashAt: wr.PointAfterJobCommit, ServerCrash: true},
		{Name: "separate-commit/ack/server-crash", Pattern: wr.SeparateCommit, ServerCrash: true},
		{Name: "single-transaction/ack/server-crash", Pattern: wr.SingleTransaction, ServerCrash: true},
	}
}

// FlagServerCrash adds the server-crash conditions on PostgreSQL.
const FlagServerCrash = "server-crash"

// ServerCrashSettings are what a run with --server-crash sets on its
// cluster and reads back after each crash: backend.CrashSettings, which
// the durability scenario's server kind sets too.
var ServerCrashSettings = backend.CrashSettings

// Deliveries is how often each condition's event is delivered: once with
// the crash, once to a fresh process.
const Deliveries = 2

// Settings are recorded with the scenario. Everything here is derived from
// the input section; verify derives it again and compares.
type Settings struct {
	EventID    string      `json:"event_id"`
	JobKey     string      `json:"job_key"`
	Deliveries int         `json:"deliveries_per_condition"`
	Conditions []Condition `json:"conditions"`
	// SQLite is what every worker must read back from its connection, on
	// SQLite.
	SQLite sqlitedb.Settings `json:"sqlite,omitzero"`
	// Backend is empty for SQLite; on PostgreSQL it is postgres, and
	// Postgres is what every session must read back.
	Backend  string             `json:"backend,omitempty"`
	Postgres *store.PGRequested `json:"postgres,omitempty"`
	// ServerSettings are the server settings a --server-crash run applies
	// and reads back after every crash.
	ServerSettings map[string]string `json:"server_settings,omitempty"`
	// Broker is the broker that redelivers, with every setting; nil is
	// the harness's own redelivery (--broker none).
	Broker *broker.Settings `json:"broker,omitempty"`
	// BrokerLeftOut names the broker conditions the run could not run,
	// and why.
	BrokerLeftOut []string `json:"broker_left_out,omitempty"`
}

// asyncCommit says whether a commit's ACK may come before its WAL is on
// the disk: synchronous_commit off.
func (s Settings) asyncCommit() bool {
	return s.Postgres != nil && backend.CrashLoses(s.Postgres.SynchronousCommit)
}

// Event is the event every condition delivers.
func (s Settings) Event() wr.Event { return wr.Event{ID: s.EventID, JobKey: s.JobKey} }

// Args are a delivery's worker arguments; the run renders them and the
// fold renders them again to check each recorded command line.
func (s Settings) Args(c Condition, db string) wr.Args {
	return wr.Args{DB: db, Pattern: c.Pattern, Event: s.Event(), Backend: s.Backend}
}

// backendName is the backend the settings run on, as store names it.
func (s Settings) backendName() string {
	b, _ := store.ParseBackend(s.Backend)
	return b
}

// Scenario is the redelivery scenario, written against its own settings;
// New adapts it for the registry.
type Scenario struct{}

var _ scenario.Typed[Settings, Extra] = Scenario{}

// New is the scenario as the registry takes it.
func New() scenario.Scenario { return scenario.Define[Settings, Extra](Scenario{}) }

func (Scenario) Name() string { return Name }

func (Scenario) Summary() string {
	return "article 000: separate commits vs one transaction, crash, redelivery to a fresh process"
}

func (Scenario) Flags() []scenario.Flag {
	return []scenario.Flag{
		{Name: FlagServerCrash, Bool: true, Usage: "redelivery, on --backend postgres: add conditions that SIGKILL the server after delivery 1 and let it recover before the redelivery"},
		{Name: FlagBrokerFaults, Bool: true, Usage: "redelivery, with --broker nats: add conditions that kill the broker after the publish ack, republish inside and after the dedup window, and work longer than AckWait"},
		{Name: FlagBrokerURL, Usage: "redelivery, with --broker nats: a NATS server of your own (nats://host:port) instead of one per condition; each condition makes a stream IDEMLAB_REDELIVERY_<n> there and deletes it; no broker kill then"},
		{Name: FlagBrokerPower, Bool: true, Usage: "with --broker nats: add conditions that cut the broker's power (its store on a power-loss FUSE mount) after the publish ack, after the consumer's ack and before the broker syncs the consumer's state, under the default sync_interval and under always, with the drop model, and four cuts under keep and torn; needs FUSE"},
		{Name: FlagBroker, Usage: "redelivery: who redelivers, none (the harness, default) or nats (a JetStream server per condition; needs the idemlab-nats binary)"},
	}
}

// Caps: every run has it, on SQLite and on PostgreSQL.
func (Scenario) Caps() scenario.Caps {
	return scenario.Caps{Backends: []string{store.BackendPostgres}, Cost: 25 * time.Millisecond}
}

// Validate: the settings have no limits beyond their JSON shape.
func (Scenario) Validate(Settings) error { return nil }

// Check: a condition passes when its figures equal the oracle's.
func (Scenario) Check(_ string, expected, observed json.RawMessage) (bool, []results.Difference, error) {
	return scenario.Equal(expected, observed)
}

// Plan decodes the section for a run on the request's backend. Both
// patterns and every crash point run unchanged on PostgreSQL; the
// worker's crash is a process exit, and the server rolls back what it had
// not committed.
func (Scenario) Plan(_ context.Context, req scenario.PlanRequest) (scenario.Plan, error) {
	b, section, ov := req.Backend, req.Section, req.Overrides
	var in Input
	if err := scenario.DecodeSection(Name, section, &in); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	crash, _, err := scenario.BoolFlag(ov, FlagServerCrash)
	if err != nil {
		return nil, err
	}
	st := Settings{EventID: in.EventID, JobKey: in.JobKey, Deliveries: Deliveries, Conditions: Conditions()}
	switch {
	case b.IsSQLite() && crash:
		return nil, fmt.Errorf("--%s crashes the PostgreSQL server; it needs --backend postgres (SQLite's crashes are the durability scenario's)", FlagServerCrash)
	case b.IsSQLite():
		st.SQLite = wr.RequestedSQLite()
	default:
		st.Backend, st.Postgres = b.Name, b.Requested()
	}
	if crash {
		st.Conditions = append(st.Conditions, ServerCrashConditions()...)
		st.ServerSettings = ServerCrashSettings
	}
	if name := ov[FlagBroker]; name != "" && name != broker.None {
		if _, err := broker.Lookup(name); err != nil {
			return nil, fmt.Errorf("--%s: %w", FlagBroker, err)
		}
		if crash {
			return nil, fmt.Errorf("--%s with --%s: the server-crash conditions run with the harness's redelivery only", FlagBroker, FlagServerCrash)
		}
		bs := broker.DefaultNATS()
		bs.URL = ov[FlagBrokerURL]
		st.Broker = &bs
	}
	if ov[FlagBrokerURL] != "" && st.Broker == nil {
		return nil, fmt.Errorf("--%s needs --%s %s", FlagBrokerURL, FlagBroker, broker.NATS)
	}
	faults, _, err := scenario.BoolFlag(ov, FlagBrokerFaults)
	switch {
	case err != nil:
		return nil, err
	case faults && st.Broker == nil:
		return nil, fmt.Errorf("--%s needs a broker: add --%s %s", FlagBrokerFaults, FlagBroker, broker.NATS)
	case faults:
		for _, c := range BrokerFaultConditions(*st.Broker) {
			if c.BrokerFault == FaultKillAfterPublish && st.Broker.URL != "" {
				st.BrokerLeftOut = append(st.BrokerLeftOut, c.Name+": --"+FlagBrokerURL+" names a server idemlab does not own, and it kills no one's server")
				continue
			}
			st.Conditions = append(st.Conditions, c)
		}
	}
	if err := planPower(req, &st); err != nil {
		return nil, err
	}
	return &plan{s: st}, nil
}

// planPower adds the broker's power conditions with --broker-power: they
// need a broker idemlab owns and a machine with FUSE.
func planPower(req scenario.PlanRequest, st *Settings) error {
	on, _, err := scenario.BoolFlag(req.Overrides, FlagBrokerPower)
	switch {
	case err != nil || !on:
		return err
	case st.Broker == nil:
		return fmt.Errorf("--%s needs a broker: add --%s %s", FlagBrokerPower, FlagBroker, broker.NATS)
	case st.Broker.URL != "":
		return fmt.Errorf("--%s cuts the power of a broker idemlab runs; --%s names a server of yours", FlagBrokerPower, FlagBrokerURL)
	case req.Machine.FUSE != "":
		return fmt.Errorf("--%s puts the broker's store on a power-loss filesystem: %s", FlagBrokerPower, req.Machine.FUSE)
	}
	st.Conditions = append(st.Conditions, BrokerPowerConditions()...)
	return nil
}

type plan struct{ s Settings }

func (p *plan) Settings() any { return p.s }

func (p *plan) Processes() int { return len(p.s.Conditions) * p.s.Deliveries }

// Caps: the conditions one after another; a run with a broker needs its
// binary first.
func (p *plan) Caps() scenario.PlanCaps {
	if p.s.Broker == nil {
		return scenario.PlanCaps{}
	}
	return scenario.PlanCaps{Preflight: p.preflight}
}

// Observation is one line of observations.jsonl: which process delivered,
// into which file, and the rows the parent read from that file after the
// process had exited.
type Observation struct {
	Scenario  string `json:"scenario"`
	Condition string `json:"condition"`
	Delivery  int    `json:"delivery"`
	// Publisher is a publisher process's line (1, 2), whose Delivery is 0.
	Publisher int    `json:"publisher,omitempty"`
	ProcessID int    `json:"process_id"`
	DB        string `json:"db"`
	// Rows are both tables as the parent read them; a table the file did
	// not hold is null.
	Rows wr.State `json:"rows"`
	// AfterServerCrash are both tables as the parent read them once the
	// crashed server had recovered, and ServerSettings what it read back
	// of ServerCrashSettings then; a server-crash condition's delivery 1
	// only.
	AfterServerCrash *wr.State         `json:"after_server_crash,omitempty"`
	ServerSettings   map[string]string `json:"server_settings,omitempty"`
	// Broker is the broker's word after this delivery, with --broker.
	Broker *BrokerObservation `json:"broker,omitempty"`
}

// Run delivers each condition's event twice and records what each delivery
// left in the file.
func (p *plan) Run(ctx context.Context, env scenario.Env) error {
	if len(p.s.ServerSettings) > 0 {
		if err := env.Backend.Apply(ctx, p.s.ServerSettings); err != nil {
			return err
		}
	}
	for _, c := range p.s.Conditions {
		run := p.runCondition
		if p.s.Broker != nil {
			run = p.runBroker
		}
		if err := run(ctx, env, c); err != nil {
			return err
		}
	}
	return nil
}

func (p *plan) runCondition(ctx context.Context, env scenario.Env, c Condition) error {
	fresh, err := env.Fresh(ctx, "idemlab-redelivery-", DBName)
	if err != nil {
		return fmt.Errorf("%w: %w", errclass.ErrHarness, err)
	}
	defer fresh.Drop()
	db := fresh.Target
	for d := 1; d <= p.s.Deliveries; d++ {
		spec := harness.Spec{
			Scenario: Name, Condition: c.Name, Label: fmt.Sprintf("delivery %d", d),
			Worker: wr.WorkerName, Args: p.s.Args(c, db).Argv(),
		}
		if d == 1 {
			spec.CrashAt = c.CrashAt
			if c.ServerCrash {
				if err := env.Backend.PrepareCrash(ctx, fresh, wr.Schema); err != nil {
					return fmt.Errorf("%s: %w", c.Name, err)
				}
			}
		}
		proc, err := env.Runner.Run(ctx, spec)
		if err != nil {
			return fmt.Errorf("%s delivery %d: %w", c.Name, d, err)
		}
		rows, err := readState(ctx, fresh)
		if err != nil {
			return fmt.Errorf("%w: %s delivery %d: %w", errclass.ErrHarness, c.Name, d, err)
		}
		o := Observation{Scenario: Name, Condition: c.Name, Delivery: d, ProcessID: proc.Record.ID, DB: db, Rows: rows}
		if d == 1 && c.ServerCrash {
			if err := crashServer(ctx, env, p.s, fresh, &o); err != nil {
				return fmt.Errorf("%s delivery %d: %w", c.Name, d, err)
			}
		}
		if err := engine.Record(env.Recorder, o); err != nil {
			return err
		}
	}
	return nil
}

// crashServer crashes the run's server, lets it recover
// (backend.Server.CrashAndRecover), and reads the tables and the server
// settings back into o.
func crashServer(ctx context.Context, env scenario.Env, st Settings, db backend.Database, o *Observation) error {
	var err error
	if o.ServerSettings, err = env.Backend.CrashAndRecover(ctx, st.ServerSettings); err != nil {
		return err
	}
	after, err := readState(ctx, db)
	if err != nil {
		return fmt.Errorf("%w: read after the server's crash: %w", errclass.ErrHarness, err)
	}
	o.AfterServerCrash = &after
	return nil
}

// readState opens the database as the next process would, which on
// SQLite also rolls back a hot journal left by a crash, and lists both
// tables.
func readState(ctx context.Context, db backend.Database) (wr.State, error) {
	st, err := db.Open(ctx, wr.Options(""))
	if err != nil {
		return wr.State{}, err
	}
	s, err := wr.ReadState(ctx, st)
	return s, errors.Join(err, st.Close())
}
