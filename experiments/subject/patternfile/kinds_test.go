package patternfile

import (
	"slices"
	"testing"

	"idemlab/experiments/engine"
)

// TestEveryFaultWordRuns: every class a pattern file's fault words name
// (and its discovery) has a pattern label the subject runs (Kinds), so a
// class registered with a word but no case here fails this test instead
// of running trials that fault nothing.
func TestEveryFaultWordRuns(t *testing.T) {
	for _, word := range append([]string{FaultNone}, engine.FaultWords()...) {
		classes := engine.ClassesOf(word)
		if len(classes) == 0 {
			t.Errorf("fault word %q names no registered class", word)
		}
		for _, k := range classes {
			if l := engine.Label(engine.Pattern, k); !slices.Contains(Kinds(), l) {
				t.Errorf("fault word %q runs class %s, whose pattern label %q the subject does not run (Kinds %v)", word, k, l, Kinds())
			}
		}
	}
}
