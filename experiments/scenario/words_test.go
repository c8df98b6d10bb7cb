package scenario

import "testing"

// TestSentenceWords: the words a report's sentences share, as the three
// scenarios' findings and the merge's messages say them.
func TestSentenceWords(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"no word", JoinAnd(nil), ""},
		{"one word", JoinAnd([]string{"a"}), "a"},
		{"two words", JoinAnd([]string{"a", "b"}), "a and b"},
		{"three words", JoinAnd([]string{"a", "b", "c"}), "a, b and c"},
		{"one", Plural(1, "trial", "trials"), "trial"},
		{"none", Plural(0, "trial", "trials"), "trials"},
		{"two", Plural(2, "is", "are"), "are"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
