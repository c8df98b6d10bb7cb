package backend

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"idemlab/worker/store"
)

// TestTemplateDir: the key follows the binaries, the user and initdb's
// arguments, and the environment turns templates off.
func TestTemplateDir(t *testing.T) {
	bin := t.TempDir()
	for _, b := range []string{"initdb", "postgres"} {
		os.WriteFile(filepath.Join(bin, b), []byte(b), 0o755)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	a := templateDir(bin, "", initArgs)
	if a == "" || a != templateDir(bin, "", initArgs) {
		t.Fatalf("templateDir = %q, not stable", a)
	}
	if templateDir(bin, "postgres", initArgs) == a || templateDir(bin, "", initArgs[1:]) == a {
		t.Error("another user or other arguments share the template")
	}
	os.WriteFile(filepath.Join(bin, "postgres"), []byte("a newer server"), 0o755)
	if templateDir(bin, "", initArgs) == a {
		t.Error("new binaries share the old template")
	}
	t.Setenv(NoTemplateEnv, "1")
	if d := templateDir(bin, "", initArgs); d != "" {
		t.Errorf("with %s set, templateDir = %q", NoTemplateEnv, d)
	}
}

// TestHalfTemplateIgnored: a template folder without its completion mark
// (a save that died) is not copied.
func TestHalfTemplateIgnored(t *testing.T) {
	tpl := t.TempDir()
	os.MkdirAll(filepath.Join(tpl, "data"), 0o700)
	ok, err := fromTemplate(tpl, filepath.Join(t.TempDir(), "data"), os.Getuid(), os.Getgid())
	if ok || err != nil {
		t.Errorf("fromTemplate of a half template = %v, %v", ok, err)
	}
	data := filepath.Join(t.TempDir(), "data")
	os.Mkdir(data, 0o700)
	os.WriteFile(filepath.Join(data, "PG_VERSION"), []byte("15\n"), 0o600)
	if err := saveTemplate(data, tpl); err == nil {
		t.Error("saved over a half template")
	}
	fresh := filepath.Join(t.TempDir(), "tpl")
	if err := saveTemplate(data, fresh); err != nil {
		t.Fatal(err)
	}
	if ok, err := fromTemplate(fresh, filepath.Join(t.TempDir(), "data"), os.Getuid(), os.Getgid()); !ok || err != nil {
		t.Errorf("fromTemplate of a saved template = %v, %v", ok, err)
	}
	// A second save of the same template, as a run racing the first
	// makes, keeps the first and leaves nothing of its own beside it.
	if err := saveTemplate(data, fresh); err != nil {
		t.Errorf("a second save: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(fresh), ".saving-*")); len(left) > 0 {
		t.Errorf("a second save left %v", left)
	}
}

// TestClusterFromTemplate starts two throwaway clusters with an empty
// cache: the first runs initdb and keeps a template, the second copies it,
// and both answer a query and leave no folder behind.
func TestClusterFromTemplate(t *testing.T) {
	if _, err := FindBinaries(); err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	spec := Spec{Name: store.BackendPostgres, Isolation: DefaultIsolation, SynchronousCommit: DefaultSynchronousCommit}
	for i, want := range []bool{false, true} {
		srv, err := Start(context.Background(), spec, Options{})
		if err != nil {
			t.Fatal(err)
		}
		info := srv.Info()
		if info.Cluster.FromTemplate != want || info.ServerVersion == "" {
			t.Errorf("start %d: from a template %v, version %q; want %v and a version", i+1, info.Cluster.FromTemplate, info.ServerVersion, want)
		}
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(info.Cluster.Dir); !os.IsNotExist(err) {
			t.Errorf("start %d: %s survives", i+1, info.Cluster.Dir)
		}
	}
}
