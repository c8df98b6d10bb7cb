package store

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBackendFlag: a worker's -backend reads back what BackendArgv
// wrote, SQLite's as empty, and an unknown backend is refused by name.
func TestBackendFlag(t *testing.T) {
	for _, tt := range []struct {
		name, backend string
		argv          []string
		want, err     string
	}{
		{"the default", "", []string{"-db", "x"}, "", ""},
		{"postgres", BackendPostgres, []string{"-db", "x", "-backend", "postgres"}, BackendPostgres, ""},
		{"sqlite named", BackendSQLite, []string{"-db", "x", "-backend", "sqlite"}, "", ""},
		{"unknown", "mysql", []string{"-db", "x", "-backend", "mysql"}, "", "-backend: unknown backend"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			argv := BackendArgv([]string{"-db", "x"}, tt.backend)
			if d := cmp.Diff(tt.argv, argv); d != "" {
				t.Errorf("BackendArgv (-want +got):\n%s", d)
			}
			fs := flag.NewFlagSet("w", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var db, got string
			fs.StringVar(&db, "db", "", "")
			check := BindBackend(fs, &got)
			if err := fs.Parse(argv); err != nil {
				t.Fatal(err)
			}
			err := check()
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("check: %v, want %q", err, tt.err)
			}
			if err == nil && got != tt.want {
				t.Errorf("read back %q, want %q", got, tt.want)
			}
		})
	}
}
