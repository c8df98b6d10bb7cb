package pattern

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"idemlab/worker/store"
)

// TestProgramDSN: what a program gets reads, as libpq would send it, the
// same server, database and settings as the worker's own string, with the
// settings moved into options; pgx stands in for libpq's parser here.
func TestProgramDSN(t *testing.T) {
	req := store.PGRequested{Isolation: "read committed", SynchronousCommit: "off"}
	for _, base := range []string{
		"host=/tmp/x user=postgres dbname=idemlab_1 sslmode=disable",
		"host='/tmp/a b' user=postgres dbname=d options='-c work_mem=8MB'",
		"postgres://postgres@localhost:5433/idemlab_1?sslmode=disable",
	} {
		t.Run(base, func(t *testing.T) {
			got := ProgramDSN(store.SessionDSN(base, "pattern_7", req))
			cfg, err := pgx.ParseConfig(got)
			if err != nil {
				t.Fatalf("ProgramDSN gave %q, which does not parse: %v", got, err)
			}
			want, _ := pgx.ParseConfig(base)
			if cfg.Host != want.Host || cfg.Database != want.Database || cfg.User != want.User || cfg.Port != want.Port {
				t.Errorf("%q names %s:%d/%s as %s, want %s:%d/%s as %s", got, cfg.Host, cfg.Port, cfg.Database, cfg.User, want.Host, want.Port, want.Database, want.User)
			}
			opts := `-c search_path=pattern_7 -c default_transaction_isolation=read\ committed -c synchronous_commit=off`
			if o := want.RuntimeParams["options"]; o != "" {
				opts = o + " " + opts
			}
			wantParams := map[string]string{"options": opts}
			for k, v := range want.RuntimeParams {
				if k != "options" {
					wantParams[k] = v
				}
			}
			if d := cmp.Diff(wantParams, cfg.RuntimeParams); d != "" {
				t.Errorf("%q: startup parameters (-want +got):\n%s", got, d)
			}
		})
	}
}
