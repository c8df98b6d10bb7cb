package store

import "testing"

func TestNumberedRebind(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"SELECT a FROM t WHERE b = ? AND c = ?", "SELECT a FROM t WHERE b = $1 AND c = $2"},
		{"SELECT '?' , ?", "SELECT '?' , $1"},
	} {
		if got := (Numbered{Backend: "postgres"}).Rebind(tt.in); got != tt.want {
			t.Errorf("Rebind(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := (SQLite{}).Rebind("a = ?"); got != "a = ?" {
		t.Errorf("SQLite Rebind changed the query: %q", got)
	}
}
