package fstree

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tree lists a folder's entries with their permission bits and contents.
func tree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, _ := d.Info()
		v := info.Mode().String()
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			v += " " + string(b)
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCopy copies a folder with the permission bits a data folder
// has, whatever the umask, and refuses what is no file, folder or link.
func TestCopy(t *testing.T) {
	src := filepath.Join(t.TempDir(), "data")
	os.Mkdir(src, 0o700)
	os.Mkdir(filepath.Join(src, "base"), 0o700)
	os.WriteFile(filepath.Join(src, "PG_VERSION"), []byte("15\n"), 0o600)
	os.WriteFile(filepath.Join(src, "base", "1"), []byte("pages"), 0o640)
	os.Symlink("base", filepath.Join(src, "link"))
	dst := filepath.Join(t.TempDir(), "copy")
	if err := Copy(src, dst, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tree(t, src), tree(t, dst)); diff != "" {
		t.Errorf("copy differs (-source +copy):\n%s", diff)
	}
	if err := Copy(src, dst, os.Getuid(), os.Getgid()); err == nil {
		t.Error("copied over an existing copy: its files were overwritten")
	}
	// Into a folder that exists and is empty, as a temp folder is.
	into := t.TempDir()
	if err := Copy(src, into, Keep, Keep); err != nil {
		t.Fatal(err)
	}
	got, want := tree(t, into), tree(t, src)
	delete(got, ".")
	delete(want, ".")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("copy into an existing folder differs (-source +copy):\n%s", diff)
	}
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		if err := Copy(filepath.Dir(fifo), t.TempDir(), Keep, Keep); err == nil {
			t.Error("copied a named pipe")
		}
	}
}

// TestCopyFiles copies the regular files directly inside a folder, less
// those skip names, and leaves folders and links out.
func TestCopyFiles(t *testing.T) {
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "db.sqlite3"), []byte("pages"), 0o600)
	os.WriteFile(filepath.Join(src, "db.sqlite3-wal"), []byte("frames"), 0o600)
	os.WriteFile(filepath.Join(src, "db.sqlite3-shm"), []byte("index"), 0o600)
	os.Mkdir(filepath.Join(src, "sidecar"), 0o700)
	os.WriteFile(filepath.Join(src, "sidecar", "log"), []byte("ops"), 0o600)
	os.Symlink("db.sqlite3", filepath.Join(src, "link"))
	dst := t.TempDir()
	if err := CopyFiles(src, dst, func(name string) bool { return filepath.Ext(name) == ".sqlite3-shm" }); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dst)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dst, e.Name()))
		got[e.Name()] = string(b)
	}
	want := map[string]string{"db.sqlite3": "pages", "db.sqlite3-wal": "frames"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("copied (-want +got):\n%s", diff)
	}
}
