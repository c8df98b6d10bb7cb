package scenario

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"idemlab/experiments/results"
)

// Rank orders the differences of a failed condition by meaning, so that a
// failure line leads with the figure that answers the scenario's question
// rather than with the first leaf of a JSON diff. Lower ranks come first;
// Unranked comes last.
type Rank int

// The ranks, headline first: winners, jobs, duplicates, sends.
const (
	// Unranked is a difference no scenario named; it keeps its path.
	Unranked Rank = iota
	// RankWinners is how many processes won a claim.
	RankWinners
	// RankJobs is the follow-up jobs (or other downstream work) written.
	RankJobs
	// RankDuplicates is work done more than once.
	RankDuplicates
	// RankSends is what a receiver accepted or refused.
	RankSends
	// RankOutcome is another headline outcome: ACKed work lost, a broken
	// invariant, the steps a rerun redid.
	RankOutcome
	// RankRows is the other rows a process left behind.
	RankRows
	// RankRun is how a process ran: exit codes, statuses, crash points,
	// the points it passed, the counts of its records.
	RankRun
)

// order puts Unranked after every named rank.
func (r Rank) order() int {
	if r == Unranked {
		return int(RankRun) + 1
	}
	return int(r)
}

// Explained is one difference of a failed condition in the reader's words.
type Explained struct {
	// Words name the figure, e.g. "race B winners" or "delivery 2
	// follow_up_jobs".
	Words    string `json:"words"`
	Expected string `json:"expected"`
	Observed string `json:"observed"`
	// Text, when set, is the whole difference in words, for a miss that
	// "want E got O" says badly ("held, but known_unsafe lists it: the
	// run fails"); String returns it as it is.
	Text string `json:"text,omitempty"`
	Rank Rank   `json:"-"`
}

func (e Explained) String() string {
	if e.Text != "" {
		return e.Text
	}
	return e.Words + " want " + e.Expected + " got " + e.Observed
}

// Explain returns a failed condition's differences in the reader's words,
// headline first, as s's Explain says them (see Explanation). A scenario's
// Explain returns one entry per difference that matters, and may merge
// several into one (the same miss in trials 1–5) or split a difference
// that hides its answer (a count of outcome groups) into the fields that
// differ. results.json and the summary keep the raw differences, so
// nothing said here replaces them.
func Explain(s Scenario, c results.ConditionResult) []Explained {
	if s == nil {
		return Explanation(nil, c)
	}
	return Explanation(s.Explain, c)
}

// Explanation is what explain says of c's differences, headline first. A
// nil explain, or one that names none of them, keeps the paths and their
// order.
func Explanation(explain func(results.ConditionResult) []Explained, c results.ConditionResult) []Explained {
	var out []Explained
	if explain != nil {
		out = explain(c)
	}
	if len(out) == 0 {
		out = Unexplained(c.Differences)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Rank.order() < out[j].Rank.order() })
	return out
}

// ExplainLines is Explain as one line per difference, "words want E got O".
func ExplainLines(s Scenario, c results.ConditionResult) []string {
	return Lines(Explain(s, c))
}

// Lines renders explained differences one per line.
func Lines(es []Explained) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.String())
	}
	return out
}

// Unexplained keeps each difference as it is: its path, unranked.
func Unexplained(diffs []results.Difference) []Explained {
	out := make([]Explained, 0, len(diffs))
	for _, d := range diffs {
		out = append(out, Explained{Words: d.Path, Expected: d.Expected, Observed: d.Observed})
	}
	return out
}

// EachDifference explains every difference of c on its own: name gives the
// words and rank of a parsed path, or "" to keep the path.
func EachDifference(c results.ConditionResult, name func(p Path) (string, Rank)) []Explained {
	out := make([]Explained, 0, len(c.Differences))
	for _, d := range c.Differences {
		e := Explained{Words: d.Path, Expected: d.Expected, Observed: d.Observed}
		if words, rank := name(ParsePath(d.Path)); words != "" {
			e.Words, e.Rank = words, rank
		}
		out = append(out, e)
	}
	return out
}

// Step is one step of a difference's path: a key, or an index when Key is
// empty.
type Step struct {
	Key   string
	Index int
}

// Path is a difference's path split into steps: "[0].outcome[1].winners"
// is [0], outcome, [1], winners. "." and "" are the empty path.
type Path []Step

// ParsePath splits a path written by results.DiffPaths. A key holding "."
// or "[" cannot be told apart from further steps; it splits there, which
// only makes the words less precise.
func ParsePath(s string) Path {
	var p Path
	for s != "" {
		switch s[0] {
		case '.':
			s = s[1:]
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			if end > 0 {
				p = append(p, Step{Key: s[:end]})
			}
			s = s[end:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return append(p, Step{Key: s})
			}
			if n, err := strconv.Atoi(s[1:end]); err == nil {
				p = append(p, Step{Index: n})
			} else {
				p = append(p, Step{Key: s[1:end]})
			}
			s = s[end+1:]
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			p = append(p, Step{Key: s[:end]})
			s = s[end:]
		}
	}
	return p
}

// Key is step i's key, or "" when it is an index or past the end.
func (p Path) Key(i int) string {
	if i < 0 || i >= len(p) {
		return ""
	}
	return p[i].Key
}

// Index is step i's index; ok is false when it is a key or past the end.
func (p Path) Index(i int) (int, bool) {
	if i < 0 || i >= len(p) || p[i].Key != "" {
		return 0, false
	}
	return p[i].Index, true
}

// Keys joins the keys from step i on with spaces, indices as "[n]":
// "row claimed_at", "executed_by_step send".
func (p Path) Keys(i int) string {
	var parts []string
	for _, st := range p[min(max(i, 0), len(p)):] {
		if st.Key != "" {
			parts = append(parts, st.Key)
		} else {
			parts = append(parts, fmt.Sprintf("[%d]", st.Index))
		}
	}
	return strings.Join(parts, " ")
}

// Lookup finds the value at path p in a JSON document; ok is false when
// the document has no such value.
func Lookup(raw json.RawMessage, p Path) (any, bool) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false
	}
	for _, st := range p {
		switch x := v.(type) {
		case map[string]any:
			if st.Key == "" {
				return nil, false
			}
			next, ok := x[st.Key]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			if st.Key != "" || st.Index < 0 || st.Index >= len(x) {
				return nil, false
			}
			v = x[st.Index]
		default:
			return nil, false
		}
	}
	return v, true
}

// LookupText is the value at path p as text: a string as it is, anything
// else as compact JSON; "" when there is none.
func LookupText(raw json.RawMessage, p Path) string {
	v, ok := Lookup(raw, p)
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return results.Compact(v)
}

// Numbered names one or more numbered things: "trial 2", "trials 1–5",
// "trials 1–3, 7". ns is sorted first.
func Numbered(one, many string, ns []int) string {
	ns = append([]int(nil), ns...)
	sort.Ints(ns)
	if len(ns) == 1 {
		return one + " " + strconv.Itoa(ns[0])
	}
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, strconv.Itoa(ns[i]))
		case j == i+1:
			parts = append(parts, strconv.Itoa(ns[i]), strconv.Itoa(ns[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d–%d", ns[i], ns[j]))
		}
		i = j + 1
	}
	return many + " " + strings.Join(parts, ", ")
}

// Miss is a difference of one numbered thing (trial 3, repetition 7) in
// the reader's words without the thing's name, before MergeNumbered joins
// the same miss of several of them.
type Miss struct {
	N int
	Explained
}

// MergeNumbered joins equal misses (same words, expected and observed) of
// several numbered things into one, "trials 1–5 duplicates want 0 got 1",
// in the order each miss first appears.
func MergeNumbered(one, many string, ms []Miss) []Explained {
	var order []Explained
	nums := map[Explained][]int{}
	for _, m := range ms {
		if _, seen := nums[m.Explained]; !seen {
			order = append(order, m.Explained)
		}
		nums[m.Explained] = append(nums[m.Explained], m.N)
	}
	out := make([]Explained, 0, len(order))
	for _, e := range order {
		subject := Numbered(one, many, nums[e])
		if e.Words != "" {
			subject += " " + e.Words
		}
		e.Words = subject
		out = append(out, e)
	}
	return out
}

// PhraseLines breaks text into lines of at most width runes, the first
// line at most first, between phrases: after "; " or ": ", so "one job
// want 1 got 0" is never split across lines. A phrase longer than a line
// is broken between its words; a word longer than a line stands alone.
func PhraseLines(text string, first, width int) []string {
	var lines []string
	cur := ""
	limit := first
	flush := func() {
		if cur != "" {
			lines = append(lines, strings.TrimRight(cur, " "))
			cur, limit = "", width
		}
	}
	for _, p := range phrases(text) {
		if runeLen(strings.TrimRight(cur+p, " ")) <= limit {
			cur += p
			continue
		}
		flush()
		if runeLen(strings.TrimRight(p, " ")) <= limit {
			cur = p
			continue
		}
		for _, w := range strings.SplitAfter(p, " ") {
			if cur != "" && runeLen(strings.TrimRight(cur+w, " ")) > limit {
				flush()
			}
			cur += w
		}
	}
	flush()
	return lines
}

// phrases splits text after each "; " and ": ", keeping the separators.
func phrases(text string) []string {
	var out []string
	for text != "" {
		i := strings.IndexAny(text, ";:")
		for i >= 0 && (i+1 >= len(text) || text[i+1] != ' ') {
			j := strings.IndexAny(text[i+1:], ";:")
			if j < 0 {
				i = -1
				break
			}
			i += 1 + j
		}
		if i < 0 {
			return append(out, text)
		}
		out = append(out, text[:i+2])
		text = text[i+2:]
	}
	return out
}

func runeLen(s string) int { return len([]rune(s)) }
