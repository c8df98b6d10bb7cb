package cmd

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"idemlab/experiments/backend"
	"idemlab/worker/store"
)

// noBinaries is a lookup that finds no PostgreSQL server, as on a machine
// without the package.
func noBinaries() (string, error) {
	return "", errors.New("no initdb, pg_ctl or postgres here")
}

// databasesNamed counts the databases named name on the server dsn
// names.
func databasesNamed(t *testing.T, dsn, name string) int {
	t.Helper()
	ctx := context.Background()
	st, _, err := store.OpenPostgres(ctx, dsn, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var n int
	if err := st.DB.QueryRowContext(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRerunOnPostgres: a folder made with --backend postgres on an
// existing server (--dsn) reruns three ways. With the binaries, verify
// --rerun starts a throwaway cluster and leaves nothing of it. With
// --dsn, it reruns on that server even where no binaries are found, in a
// database of its own that is dropped after. With neither it exits 2 with
// one line saying what to install or pass, and runs nothing.
func TestRerunOnPostgres(t *testing.T) {
	t.Parallel()
	needPostgres(t)
	dsn := userServer(t)
	dir := experimentFolder(t, Hooks{}, goodInput, "redelivery", "--backend", "postgres", "--dsn", dsn)

	for _, tt := range []struct {
		name    string
		dsn     string
		find    func() (string, error)
		code    int
		cluster bool
		stderr  []string
	}{
		{name: "throwaway cluster", code: 0, cluster: true},
		{name: "dsn", dsn: dsn, find: noBinaries, code: 0},
		{name: "neither", find: noBinaries, code: 2, stderr: []string{"ran redelivery on PostgreSQL", "install the package postgresql", "pass --dsn"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var infos []backend.Info
			h := Hooks{FindBinaries: tt.find, OnBackend: func(i backend.Info) { infos = append(infos, i) }}
			args := []string{"verify", "--rerun", dir}
			if tt.dsn != "" {
				args = append(args, "--dsn", tt.dsn)
			}
			r := execIn(t, h, args...)
			if r.code != tt.code {
				t.Fatalf("%s: exit %d, want %d\n%s%s", strings.Join(args, " "), r.code, tt.code, r.stdout, r.stderr)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q: %q", want, r.stderr)
				}
			}
			if tt.code != 0 {
				if n := strings.Count(r.stderr, "\n"); n != 1 {
					t.Errorf("stderr has %d lines, want one: %q", n, r.stderr)
				}
				if len(infos) > 0 {
					t.Errorf("the refused rerun started a server: %+v", infos)
				}
				return
			}
			if !strings.Contains(r.stdout, "rerun: redelivery reproduced") {
				t.Errorf("stdout lacks the rerun's verdict:\n%s", r.stdout)
			}
			if len(infos) != 1 {
				t.Fatalf("the rerun started %d servers, want 1", len(infos))
			}
			got := infos[0]
			if (got.Cluster != nil) != tt.cluster {
				t.Errorf("the rerun ran on cluster %v; want a throwaway cluster: %v", got.Cluster, tt.cluster)
			}
			if got.Cluster != nil {
				if left := backend.ClusterProcesses(got.Cluster.Dir); len(left) > 0 {
					t.Errorf("processes of the rerun's cluster survive: %v", left)
				}
				if _, err := os.Stat(got.Cluster.Dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the rerun's cluster folder %s survives (%v)", got.Cluster.Dir, err)
				}
			}
			if tt.dsn != "" && databasesNamed(t, dsn, got.Database) != 0 {
				t.Errorf("the rerun's database %s is left on the server", got.Database)
			}
		})
	}
}

// TestVerifyDSNUsage: --dsn is for --rerun of a folder made on
// PostgreSQL; anywhere else it is a usage error that says so.
func TestVerifyDSNUsage(t *testing.T) {
	t.Parallel()
	dir := experimentFolder(t, Hooks{}, goodInput, "redelivery")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", dir, "--dsn", "host=/nowhere"}, "add --rerun"},
		{[]string{"verify", "--rerun", dir, "--dsn", "host=/nowhere"}, "was made on SQLite"},
	} {
		r := execIn(t, Hooks{}, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", strings.Join(tt.args, " "), r.code, r.stderr, tt.want)
		}
	}
	// Without --dsn the SQLite folder reruns whether or not PostgreSQL is
	// installed: the check is for folders made on PostgreSQL.
	if r := execIn(t, Hooks{FindBinaries: noBinaries}, "verify", "--rerun", dir); r.code != 0 {
		t.Errorf("verify --rerun of a SQLite folder without PostgreSQL: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
}
