package claim

import (
	"fmt"
	"reflect"
	"strings"

	"idemlab/experiments/scenario"
	wc "idemlab/worker/claim"
)

// Values of a row field that say where it came from, so that outcomes
// with real clocks compare exactly: "B:now" is the now that the winner of
// race B reported, "A:event" the caller timestamp race A sent, "A:winner"
// the external id the winner of race A wrote.
const (
	ValueNull  = "null"
	ValueOther = "other"
)

// RowSummary is the claim row after a race, in terms of where each value
// came from.
type RowSummary struct {
	Present        bool   `json:"present"`
	ClaimedAtCol   bool   `json:"claimed_at_column"`
	Count          int64  `json:"count"`
	ClaimedAt      string `json:"claimed_at"`
	FirstSeen      string `json:"first_seen"`
	LastSeen       string `json:"last_seen"`
	Classification string `json:"classification"`
	ExternalID     string `json:"external_id"`
}

// RaceOutcome is what one race produced.
type RaceOutcome struct {
	Race    string `json:"race"`
	Workers int    `json:"workers"`
	Winners int    `json:"winners"`
	// Paths counts the statements that decided the claims.
	Paths map[wc.Path]int `json:"paths"`
	Row   RowSummary      `json:"row"`
	// SerializationFailures is, on PostgreSQL under READ COMMITTED,
	// whether any racer met 40001 or 40P01: "none" or "some". Elsewhere it
	// is left out: SQLite has neither, and under REPEATABLE READ and
	// SERIALIZABLE a loser may meet 40001, which it retries.
	SerializationFailures string `json:"serialization_failures,omitempty"`
}

// Values of SerializationFailures.
const (
	FailuresNone = "none"
	FailuresSome = "some"
)

// Group is a set of repetitions that produced the same outcome.
type Group struct {
	Outcome     []RaceOutcome `json:"outcome"`
	Repetitions []int         `json:"repetitions"`
}

// Expect is the oracle. It is a model of the claim semantics, not a
// table: the racers of a race are applied one after another, each
// deciding with the model's version of its statement. That is what every
// backend and isolation level gives, each by its own means: SQLite applies
// statements on one row one after another; PostgreSQL under READ
// COMMITTED makes a racer wait for the row's lock and re-check WHERE on
// the winner's row, so no racer meets a serialization failure; under
// REPEATABLE READ and SERIALIZABLE it refuses the racers whose snapshot
// missed the winner's row with 40001, and their retry, in a new snapshot,
// decides as the model's next racer. kind is Legacy or TTL; b is the
// boundary the TTL claim is meant to have.
func Expect(kind wc.Variant, r Round, b wc.Boundary, p Params) []RaceOutcome {
	m := model{hasCol: r.Schema == wc.SchemaNew}
	var out []RaceOutcome
	for _, race := range r.Races {
		by := kind
		if race.By != "" {
			by = race.By
		}
		n := race.Racers(p.Workers)
		o := RaceOutcome{Race: race.Name, Workers: n, Paths: map[wc.Path]int{}}
		if p.ReadCommitted {
			o.SerializationFailures = FailuresNone
		}
		for i := 0; i < n; i++ {
			won, path := m.claim(by, b, race, p.TTLMS)
			o.Paths[path]++
			if won {
				o.Winners++
			}
		}
		if race.FollowUp && o.Winners > 0 {
			m.classification = p.Classification
			m.externalID = race.Name + ":winner"
		}
		o.Row = m.summary()
		out = append(out, o)
	}
	return out
}

// model is the claim row as the oracle sees it. Times are relative to the
// round's base instant; labels say which race set them.
type model struct {
	hasCol, present     bool
	count               int64
	claimedAt           *int64
	claimedLabel        string
	firstSeen, lastSeen string
	classification      string
	externalID          string
}

func (m *model) claim(v wc.Variant, b wc.Boundary, race Race, ttlMS int64) (bool, wc.Path) {
	now := race.ClockMS
	if v == wc.Legacy || !m.hasCol {
		path := wc.PathLegacy
		if v != wc.Legacy {
			path = wc.PathFallback
		}
		if m.present {
			return false, path
		}
		m.insert(race, nil)
		return true, path
	}
	if !m.present {
		m.insert(race, &now)
		return true, wc.PathUpsert
	}
	cutoff := now - ttlMS
	expired := m.claimedAt == nil || *m.claimedAt < cutoff
	if b == wc.BoundaryInclusive {
		expired = m.claimedAt == nil || *m.claimedAt <= cutoff
	}
	if !expired {
		return false, wc.PathUpsert
	}
	m.claimedAt, m.claimedLabel = &now, race.Name+":now"
	m.lastSeen = race.Name + ":event"
	m.count++
	return true, wc.PathUpsert
}

func (m *model) insert(race Race, claimedAt *int64) {
	m.present, m.count = true, 1
	m.claimedAt, m.claimedLabel = claimedAt, ""
	if claimedAt != nil {
		m.claimedLabel = race.Name + ":now"
	}
	m.firstSeen, m.lastSeen = race.Name+":event", race.Name+":event"
}

func (m *model) summary() RowSummary {
	if !m.present {
		return RowSummary{ClaimedAtCol: m.hasCol}
	}
	s := RowSummary{
		Present: true, ClaimedAtCol: m.hasCol, Count: m.count,
		ClaimedAt: ValueNull, FirstSeen: m.firstSeen, LastSeen: m.lastSeen,
		Classification: ValueNull, ExternalID: ValueNull,
	}
	if m.claimedAt != nil {
		s.ClaimedAt = m.claimedLabel
	}
	if m.classification != "" {
		s.Classification = m.classification
	}
	if m.externalID != "" {
		s.ExternalID = m.externalID
	}
	return s
}

// RaceMarks are the values one finished race could have left in the row.
type RaceMarks struct {
	Name string
	// WinnerNows are the nows the winners reported.
	WinnerNows []int64
	// EventMS is the caller timestamp the racers sent.
	EventMS int64
	// ExternalIDs are the ids the winners' follow-ups wrote.
	ExternalIDs []string
}

// Summarize names where each value of the observed row came from, given
// the marks of the races so far, newest last. It is pure, so it can be
// tested on hand-made rows. A value that more than one race could have left
// is named after the newest of them.
func Summarize(row *wc.Row, hasCol bool, marks []RaceMarks) RowSummary {
	if row == nil {
		return RowSummary{ClaimedAtCol: hasCol}
	}
	s := RowSummary{
		Present: true, ClaimedAtCol: row.HasClaimedAt, Count: row.Count,
		ClaimedAt: ValueNull, Classification: ValueNull, ExternalID: ValueNull,
		FirstSeen: eventLabel(row.FirstSeen, marks), LastSeen: eventLabel(row.LastSeen, marks),
	}
	if row.ClaimedAt != nil {
		s.ClaimedAt = ValueOther
		for i := len(marks) - 1; i >= 0; i-- {
			if containsInt64(marks[i].WinnerNows, *row.ClaimedAt) {
				s.ClaimedAt = marks[i].Name + ":now"
				break
			}
		}
	}
	if row.Classification != nil {
		s.Classification = *row.Classification
	}
	if row.ExternalID != nil {
		s.ExternalID = ValueOther
		for i := len(marks) - 1; i >= 0; i-- {
			if containsString(marks[i].ExternalIDs, *row.ExternalID) {
				s.ExternalID = marks[i].Name + ":winner"
				break
			}
		}
	}
	return s
}

func eventLabel(v int64, marks []RaceMarks) string {
	for i := len(marks) - 1; i >= 0; i-- {
		if marks[i].EventMS == v {
			return marks[i].Name + ":event"
		}
	}
	return ValueOther
}

func containsInt64(xs []int64, x int64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func containsString(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// GroupOutcomes groups repetitions (numbered from 1) by outcome, in order
// of first appearance.
func GroupOutcomes(perRep [][]RaceOutcome) []Group {
	var groups []Group
	for i, o := range perRep {
		found := false
		for g := range groups {
			if reflect.DeepEqual(groups[g].Outcome, o) {
				groups[g].Repetitions = append(groups[g].Repetitions, i+1)
				found = true
				break
			}
		}
		if !found {
			groups = append(groups, Group{Outcome: o, Repetitions: []int{i + 1}})
		}
	}
	return groups
}

// ExpectedGroups is the expectation for R repetitions: the one expected
// outcome in every one of them.
func ExpectedGroups(expected []RaceOutcome, reps int) []Group {
	g := Group{Outcome: expected}
	for i := 1; i <= reps; i++ {
		g.Repetitions = append(g.Repetitions, i)
	}
	return []Group{g}
}

// Winners renders the winners of each race, e.g. "A:1 B:0".
func Winners(o []RaceOutcome) string {
	parts := make([]string, 0, len(o))
	for _, r := range o {
		parts = append(parts, fmt.Sprintf("%s:%d", r.Race, r.Winners))
	}
	return strings.Join(parts, " ")
}

// MutantVerdict is a mutant's condition: it must be killed.
type MutantVerdict struct {
	Killed bool `json:"killed"`
}

// Expect is the scenario's oracle over the recorded settings: for every
// round of each claim the one outcome it must show in every repetition
// (the TTL claim's for the user's statement), for a round the settings
// cannot run that it is not applicable, and for every mutant that it is
// killed.
func (Scenario) Expect(st Settings) ([]scenario.Expected, error) {
	var out []scenario.Expected
	for _, r := range st.Rounds {
		for _, v := range st.Claims {
			name := RoundCondition(r.ID, v)
			if reason, ok := st.notRun(name); ok {
				out = append(out, scenario.Expected{Condition: name, Value: NotApplicable{reason}})
			} else if r.hasKind(v) {
				out = append(out, scenario.Expected{Condition: name, Value: ExpectedGroups(Expect(oracleKind(v), r, wc.Chosen, st.params()), st.Repetitions)})
			}
		}
	}
	for _, m := range st.MutantVariants {
		out = append(out, scenario.Expected{Condition: MutantCondition(m), Value: MutantVerdict{Killed: true}})
	}
	return out, nil
}
