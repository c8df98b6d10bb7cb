package faultvfs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// step is one file operation in a model scenario.
type step func(tb testing.TB, s *Sim)

func write(name string, off int, b string) step {
	return func(tb testing.TB, s *Sim) {
		tb.Helper()
		if err := s.Write(name, off, []byte(b)); err != nil {
			tb.Fatal(err)
		}
	}
}

func fsync(name string, dirSync bool) step {
	return func(tb testing.TB, s *Sim) {
		tb.Helper()
		if err := s.Sync(name, dirSync); err != nil {
			tb.Fatal(err)
		}
	}
}

func truncate(name string, size int) step {
	return func(tb testing.TB, s *Sim) {
		tb.Helper()
		if err := s.Truncate(name, size); err != nil {
			tb.Fatal(err)
		}
	}
}

func unlink(name string, dirSync bool) step {
	return func(tb testing.TB, s *Sim) {
		tb.Helper()
		if err := s.Delete(name, dirSync); err != nil {
			tb.Fatal(err)
		}
	}
}

func create(name string) step   { return func(_ testing.TB, s *Sim) { s.Create(name) } }
func adopt(name, b string) step { return func(_ testing.TB, s *Sim) { s.Adopt(name, []byte(b)) } }
func dirsync() step             { return func(_ testing.TB, s *Sim) { s.DirSync() } }

func files(kv ...string) map[string][]byte {
	m := map[string][]byte{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = []byte(kv[i+1])
	}
	return m
}

func TestModelCut(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
		live  map[string][]byte // what processes see before the cut
		cut   map[string][]byte // what the disk holds after it
	}{
		{
			name:  "write, sync, write: the cut keeps only the first write",
			steps: []step{adopt("db", ""), write("db", 0, "aaaa"), fsync("db", false), write("db", 4, "bbbb")},
			live:  files("db", "aaaabbbb"),
			cut:   files("db", "aaaa"),
		},
		{
			name:  "overwrite after sync is undone",
			steps: []step{adopt("db", "old!"), write("db", 0, "new!"), fsync("db", false), write("db", 0, "lost")},
			live:  files("db", "lost"),
			cut:   files("db", "new!"),
		},
		{
			name:  "a created file never covered by a directory sync disappears, even when synced",
			steps: []step{adopt("db", "x"), create("db-journal"), write("db-journal", 0, "j"), fsync("db-journal", false)},
			live:  files("db", "x", "db-journal", "j"),
			cut:   files("db", "x"),
		},
		{
			name:  "the first sync of a new journal syncs the directory, so it stays",
			steps: []step{adopt("db", "x"), create("db-journal"), write("db-journal", 0, "j"), fsync("db-journal", true)},
			live:  files("db", "x", "db-journal", "j"),
			cut:   files("db", "x", "db-journal", "j"),
		},
		{
			name:  "a name made durable by another file's directory sync comes back empty if never synced",
			steps: []step{create("db"), write("db", 0, "page"), create("db-wal"), write("db-wal", 0, "w"), fsync("db-wal", true)},
			live:  files("db", "page", "db-wal", "w"),
			cut:   files("db", "", "db-wal", "w"),
		},
		{
			name:  "a delete without a directory sync comes back with its synced content",
			steps: []step{adopt("db", "x"), create("db-journal"), write("db-journal", 0, "hot"), fsync("db-journal", true), write("db-journal", 3, "!"), unlink("db-journal", false)},
			live:  files("db", "x"),
			cut:   files("db", "x", "db-journal", "hot"),
		},
		{
			name:  "a delete with a directory sync is final",
			steps: []step{adopt("db", "x"), create("db-journal"), write("db-journal", 0, "hot"), fsync("db-journal", true), unlink("db-journal", true)},
			live:  files("db", "x"),
			cut:   files("db", "x"),
		},
		{
			name:  "a directory sync on its own makes a deletion durable",
			steps: []step{adopt("db", "x"), adopt("old", "o"), unlink("old", false), dirsync()},
			live:  files("db", "x"),
			cut:   files("db", "x"),
		},
		{
			name:  "truncate after sync is undone",
			steps: []step{adopt("db-wal", ""), write("db-wal", 0, "frames"), fsync("db-wal", false), truncate("db-wal", 0)},
			live:  files("db-wal", ""),
			cut:   files("db-wal", "frames"),
		},
		{
			name: "a journal deleted and created again: the durable entry decides which inode returns",
			steps: []step{
				adopt("db", "x"),
				create("j"), write("j", 0, "first"), fsync("j", true), unlink("j", false),
				create("j"), write("j", 0, "second"), fsync("j", false),
			},
			live: files("db", "x", "j", "second"),
			cut:  files("db", "x", "j", "first"),
		},
		{
			name: "the next directory sync switches the entry to the new inode",
			steps: []step{
				adopt("db", "x"),
				create("j"), write("j", 0, "first"), fsync("j", true), unlink("j", false),
				create("j"), write("j", 0, "second"), fsync("j", true),
			},
			live: files("db", "x", "j", "second"),
			cut:  files("db", "x", "j", "second"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSim()
			for _, st := range tt.steps {
				st(t, s)
			}
			if diff := cmp.Diff(tt.live, s.Files(), cmp.Comparer(sameBytes)); diff != "" {
				t.Errorf("live files before the cut (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.cut, s.Cut(), cmp.Comparer(sameBytes)); diff != "" {
				t.Errorf("files after the cut (-want +got):\n%s", diff)
			}
		})
	}
}

// sameBytes treats nil and empty content alike: both are an empty file.
func sameBytes(a, b []byte) bool { return string(a) == string(b) }

func TestModelApplyRejectsUnknownOp(t *testing.T) {
	m := NewModel()
	if err := m.Apply(Op{Kind: "rename"}); err == nil {
		t.Fatal("Apply accepted an unknown op")
	}
}
