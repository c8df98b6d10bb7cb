// Package shard splits a scenario's plan of trials across machines, the
// way test runners split tests with a 1-based --shard i/n: a CI matrix, a
// Kubernetes Indexed Job or a GitLab parallel job runs each part, and
// idemlab merge joins the folders. It is the one place that says which
// shard runs a trial and what a plan's hash covers; the scenarios say
// what their trials are.
//
// A trial belongs to a shard by a hash of its id alone, so adding trials
// to a plan never moves the others, and every machine agrees on the split
// without talking to the others.
package shard

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MaxCount bounds n, so process ids kept apart by Stride stay exact in
// JSON numbers.
const MaxCount = 1000

// Stride keeps the process ids of the shards apart: shard i numbers its
// processes from (i-1)*Stride+1, so a merged folder holds every shard's
// records unchanged and every id still names one process.
const Stride = 1_000_000_000

// Part is shard Index of Count, counted from 1.
type Part struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Parse reads "i/n". The error names the flag and says what to give.
func Parse(s string) (Part, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return Part{}, fmt.Errorf("--shard %q: want i/n, two whole numbers such as 1/4 (shard 1 of 4)", s)
	case n < 1 || n > MaxCount:
		return Part{}, fmt.Errorf("--shard %s: n is %d, want 1 to %d", s, n, MaxCount)
	case i < 1 || i > n:
		return Part{}, fmt.Errorf("--shard %s: shards count from 1, so i is 1 to %d", s, n)
	}
	return Part{Index: i, Count: n}, nil
}

// String is the flag's value, "i/n".
func (p Part) String() string { return fmt.Sprintf("%d/%d", p.Index, p.Count) }

// Valid says whether the part could have come from Parse.
func (p Part) Valid() bool {
	return p.Count >= 1 && p.Count <= MaxCount && p.Index >= 1 && p.Index <= p.Count
}

// Of is the shard, 1 to n, that runs trial id.
func Of(id string, n int) int {
	if n <= 1 {
		return 1
	}
	sum := sha256.Sum256([]byte(id))
	return int(binary.BigEndian.Uint64(sum[:8])%uint64(n)) + 1
}

// Runs says whether the part runs trial id; a nil part is the whole plan.
func (p *Part) Runs(id string) bool {
	return p == nil || Of(id, p.Count) == p.Index
}

// FirstProcessID is the id the part's first process gets: 1 for a run of
// the whole plan.
func (p *Part) FirstProcessID() int {
	if p == nil {
		return 1
	}
	return (p.Index-1)*Stride + 1
}

// OfProcess is the shard whose numbering holds process id.
func OfProcess(id int) int {
	if id < 1 {
		return 0
	}
	return (id-1)/Stride + 1
}

// Holds says whether a record of trial id may come from shard line of a
// folder: in a shard's own folder (part set) when the part runs it; in a
// folder merged from n shards (part nil, n > 0) when shard line runs it;
// in a folder of the whole plan, always.
func Holds(part *Part, n, line int, id string) bool {
	switch {
	case part != nil:
		return part.Runs(id)
	case n > 0:
		return Of(id, n) == line
	}
	return true
}

// Trial is one trial of a plan: its condition and its id, unique in the
// scenario.
type Trial struct {
	Condition string
	ID        string
}

// TrialID is the id of trial i of a condition, "condition#i".
func TrialID(condition string, i int) string {
	return condition + "#" + strconv.Itoa(i)
}

// Ran is a trial the records hold, with the shard that recorded it: 0 in
// a folder of one run, 1 to n in a merged folder.
type Ran struct {
	Trial
	Shard int
}

// PlanHash is the hex SHA-256 of a plan: the scenario's settings but the
// shard, what its discovery runs passed, and every trial id in order. Two
// shards with one hash ran parts of the same plan.
func PlanHash(settings json.RawMessage, discovered any, plan []Trial) (string, error) {
	st, err := WithoutShard(settings)
	if err != nil {
		return "", err
	}
	disc, err := json.Marshal(discovered)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "settings %s\ndiscovered %s\n", st, disc)
	for _, t := range plan {
		fmt.Fprintf(h, "trial %s\n", t.ID)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// SettingsKey is the settings' field that holds the part.
const SettingsKey = "shard"

// FromSettings reads the part a scenario's settings record; nil when they
// record none.
func FromSettings(settings json.RawMessage) (*Part, error) {
	var head map[string]json.RawMessage
	if err := json.Unmarshal(settings, &head); err != nil {
		return nil, err
	}
	raw, ok := head[SettingsKey]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var p Part
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("settings.%s: %w", SettingsKey, err)
	}
	if !p.Valid() {
		return nil, fmt.Errorf("settings.%s: %d/%d is not a shard", SettingsKey, p.Index, p.Count)
	}
	return &p, nil
}

// WithoutShard is settings with the part left out, in a canonical form:
// what the shards of one plan share.
func WithoutShard(settings json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(settings, &m); err != nil {
		return nil, err
	}
	delete(m, SettingsKey)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		var c bytes.Buffer
		if err := json.Compact(&c, m[k]); err != nil {
			return nil, err
		}
		b.Write(unescapeHTML(c.Bytes()))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// htmlEscapes are the escapes json.Marshal writes for <, > and &, which
// an encoder with SetEscapeHTML(false) writes as themselves: one value,
// two spellings, so the canonical form writes the characters.
var htmlEscapes = map[string]byte{`u003c`: '<', `u003e`: '>', `u0026`: '&'}

// unescapeHTML writes the HTML escapes of compact JSON as the characters
// they stand for, leaving an escaped backslash before such text as it is.
func unescapeHTML(js []byte) []byte {
	out := make([]byte, 0, len(js))
	for i := 0; i < len(js); i++ {
		if js[i] != '\\' || i+1 >= len(js) {
			out = append(out, js[i])
			continue
		}
		if i+6 <= len(js) {
			if ch, ok := htmlEscapes[string(js[i+1:i+6])]; ok {
				out = append(out, ch)
				i += 5
				continue
			}
		}
		out = append(out, js[i], js[i+1])
		i++
	}
	return out
}
