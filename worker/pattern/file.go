// Package pattern is a user's own idempotency pattern written down as a
// file: a schema, a handler of SQL steps and sends, and invariants over the
// database and the receiver's log. It is the contract of the pattern
// worker, which runs one delivery of the handler, and of the parent, which
// checks the file before anything runs and judges every trial by its
// invariants.
package pattern

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"idemlab/worker/store"
)

// File is a decoded pattern file.
type File struct {
	Name  string `json:"name"`
	About string `json:"about,omitempty"`
	// Schema is applied to a fresh database before a trial's first
	// delivery, one statement per entry.
	Schema []string `json:"schema"`
	// SchemaPostgres, when set, is the schema on PostgreSQL in place of
	// Schema: SQLite's "id INTEGER PRIMARY KEY" numbers rows by itself,
	// PostgreSQL's needs an identity column. The handler and the
	// invariants are the same statements on both.
	SchemaPostgres []string `json:"schema_postgres,omitempty"`
	// Handler is what one delivery runs, step by step.
	Handler []Step `json:"handler,omitempty"`
	// Command, in place of Handler, is the user's own program (an argv,
	// run without a shell in the pattern file's folder) that handles one
	// delivery.
	Command []string `json:"command,omitempty"`
	// HandlerTimeoutMS bounds one run of Command; a program still running
	// then is killed and judged like any other outcome.
	HandlerTimeoutMS int64 `json:"handler_timeout_ms,omitempty"`
	// Invariants are checked after a trial's last delivery.
	Invariants []Invariant `json:"invariants"`
	// KnownUnsafe lists fault classes where a violation is expected,
	// optionally narrowed ("power:DELETE/FULL") and qualified by backend
	// and isolation level ("concurrent@postgres/read-committed"); see
	// ParseUnsafe. A listed class that shows no violation fails the run.
	KnownUnsafe []string `json:"known_unsafe"`
	// RedeliveryAfterMS is added to :now_ms on every delivery after the
	// first, so a TTL claim can be retaken without waiting.
	RedeliveryAfterMS int64 `json:"redelivery_after_ms,omitempty"`
	// MaxDeliveries bounds the redeliveries of one event (default 3).
	MaxDeliveries int `json:"max_deliveries,omitempty"`
	// Power lists the journal_mode/synchronous settings the power class
	// runs under.
	Power []string `json:"power,omitempty"`
	// Backends, when set, are the only backends the pattern runs on: a
	// program that speaks one database's protocol names it, and a run on
	// another is refused before anything runs.
	Backends []string `json:"backends,omitempty"`
}

// RunsOn says whether the file lets the pattern run on backend.
func (f File) RunsOn(backend string) bool {
	return len(f.Backends) == 0 || slices.Contains(f.Backends, backend)
}

// Step is one handler step. Exactly one of Query, Exec, Begin, Commit,
// Rollback, Send and Ack is set.
type Step struct {
	Query string `json:"query,omitempty"`
	// As binds the first column of the query's first row as :As.
	As string `json:"as,omitempty"`
	// StopIf ends the handler (ACK) when the query returned "rows" or
	// "no_rows".
	StopIf string `json:"stop_if,omitempty"`
	Exec   string `json:"exec,omitempty"`
	// StopUnlessChanged ends the handler (ACK) when the exec changed no
	// row: the lost claim.
	StopUnlessChanged bool   `json:"stop_unless_changed,omitempty"`
	Begin             string `json:"begin,omitempty"`
	Commit            bool   `json:"commit,omitempty"`
	Rollback          bool   `json:"rollback,omitempty"`
	Send              *Send  `json:"send,omitempty"`
	// Ack places the delivery's ACK: from this step on the delivery
	// counts as acknowledged, and a crash after it is not redelivered (at
	// most once). Without an ack step the ACK follows the last step.
	Ack bool `json:"ack,omitempty"`
}

// Send is a POST to the trial's receiver.
type Send struct {
	Step string `json:"step"`
	// Key, when set, is an SQL expression over the parameters whose value
	// is sent as the Idempotency-Key header.
	Key string `json:"key,omitempty"`
}

// Invariant is one check after a trial. Exactly one of Query and Sends is
// set, and one of Equals and AtMost.
type Invariant struct {
	Name   string      `json:"name"`
	Query  string      `json:"query,omitempty"`
	Sends  *SendsCheck `json:"sends,omitempty"`
	Equals *int64      `json:"equals,omitempty"`
	AtMost *int64      `json:"at_most,omitempty"`
}

// SendsCheck counts the accepted sends of one step for the event.
type SendsCheck struct {
	Step   string `json:"step"`
	Equals *int64 `json:"equals,omitempty"`
	AtMost *int64 `json:"at_most,omitempty"`
}

// Step kinds, as they appear in crash point names.
const (
	KindQuery    = "query"
	KindExec     = "exec"
	KindBegin    = "begin"
	KindCommit   = "commit"
	KindRollback = "rollback"
	KindSend     = "send"
	KindAck      = "ack"
)

// Kind names the step's kind.
func (s Step) Kind() string {
	switch {
	case s.Query != "":
		return KindQuery
	case s.Exec != "":
		return KindExec
	case s.Begin != "":
		return KindBegin
	case s.Commit:
		return KindCommit
	case s.Rollback:
		return KindRollback
	case s.Send != nil:
		return KindSend
	case s.Ack:
		return KindAck
	}
	return ""
}

// Points are the crash points of step i (0-based): before-N-KIND and
// after-N-KIND with N 1-based.
func (s Step) Points(i int) (before, after string) {
	return fmt.Sprintf("before-%d-%s", i+1, s.Kind()), fmt.Sprintf("after-%d-%s", i+1, s.Kind())
}

// Points are the crash points of the file's handler in the order a
// delivery that runs every step passes them: each step's before and
// after. A program's file has no steps, so none: its points are what its
// discovery announces.
func (f File) Points() []string {
	out := make([]string, 0, 2*len(f.Handler))
	for i, s := range f.Handler {
		before, after := s.Points(i)
		out = append(out, before, after)
	}
	return out
}

// AckStep is the 1-based place of the handler's ack step, 0 when it has
// none and the ACK follows the last step.
func (f File) AckStep() int {
	for i, s := range f.Handler {
		if s.Ack {
			return i + 1
		}
	}
	return 0
}

// Defaults applied to a file that leaves them out.
const (
	DefaultMaxDeliveries    = 3
	MaxMaxDeliveries        = 20
	DefaultHandlerTimeoutMS = 10_000
)

// SchemaOn is the schema a fresh database on backend gets.
func (f File) SchemaOn(backend string) []string {
	if backend == store.BackendPostgres && len(f.SchemaPostgres) > 0 {
		return f.SchemaPostgres
	}
	return f.Schema
}

// IsProgram says whether the pattern's handler is the user's own program.
func (f File) IsProgram() bool { return len(f.Command) > 0 }

// DefaultPower is the power class's settings when the file lists none.
var DefaultPower = []string{"DELETE/FULL", "WAL/NORMAL", "WAL/FULL", "DELETE/EXTRA"}

// Error is a refusal of a pattern file: the JSON path of the field and why.
type Error struct {
	Path    string
	Message string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

func refuse(path, format string, args ...any) error {
	return &Error{Path: path, Message: fmt.Sprintf(format, args...)}
}

// keys of each object in the file, for refusing unknown ones by path.
var (
	fileKeys      = []string{"name", "about", "schema", "schema_postgres", "handler", "command", "handler_timeout_ms", "invariants", "known_unsafe", "redelivery_after_ms", "max_deliveries", "power", "backends"}
	stepKeys      = []string{"query", "as", "stop_if", "exec", "stop_unless_changed", "begin", "commit", "rollback", "send", "ack"}
	sendKeys      = []string{"step", "key"}
	invariantKeys = []string{"name", "query", "sends", "equals", "at_most"}
	sendsKeys     = []string{"step", "equals", "at_most"}
)

// Decode reads a pattern file strictly. Every refusal names the JSON path
// of the field, as handler[3].stop_if. It checks the shape only; Check
// prepares the SQL against the schema.
func Decode(b []byte) (File, error) {
	var f File
	raw, err := knownKeys("", b, fileKeys)
	if err != nil {
		return f, err
	}
	for i, s := range rawList(raw["handler"]) {
		st, err := knownKeys(fmt.Sprintf("handler[%d]", i), s, stepKeys)
		if err != nil {
			return f, err
		}
		if send, ok := st["send"]; ok {
			if _, err := knownKeys(fmt.Sprintf("handler[%d].send", i), send, sendKeys); err != nil {
				return f, err
			}
		}
	}
	for i, s := range rawList(raw["invariants"]) {
		p := fmt.Sprintf("invariants[%d]", i)
		iv, err := knownKeys(p, s, invariantKeys)
		if err != nil {
			return f, err
		}
		if sends, ok := iv["sends"]; ok {
			if _, err := knownKeys(p+".sends", sends, sendsKeys); err != nil {
				return f, err
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&f); err != nil {
		return f, typeError(err)
	}
	return f, f.validate()
}

// knownKeys refuses a value that is not an object, or an object with a key
// outside known; it returns the object's members, so that no caller parses
// the same text again (each pattern worker decodes its file).
func knownKeys(path string, b []byte, known []string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		where := path
		if where == "" {
			where = "(file)"
		}
		if _, ok := err.(*json.SyntaxError); ok {
			return nil, refuse(where, "malformed JSON: %v", err)
		}
		return nil, refuse(where, "want a JSON object")
	}
	var bad []string
	for k := range m {
		if !slices.Contains(known, k) {
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		p := bad[0]
		if path != "" {
			p = path + "." + bad[0]
		}
		return nil, refuse(p, "unknown key (known: %s)", strings.Join(known, ", "))
	}
	return m, nil
}

func rawList(b json.RawMessage) []json.RawMessage {
	var l []json.RawMessage
	_ = json.Unmarshal(b, &l)
	return l
}

func typeError(err error) error {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		return refuse(te.Field, "got JSON %s, want %s", te.Value, te.Type)
	}
	return refuse("(file)", "%v", err)
}
