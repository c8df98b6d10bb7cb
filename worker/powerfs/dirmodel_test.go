package powerfs_test

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/powerfs"
)

// dirModelTopic is the help topic whose table states when an entry
// change survives a cut, under each directory model.
const dirModelTopic = "../../cmd/help/topics/durability.md"

// dirCase is one claim of a row of that table: under dirModel and the
// drop model, the log leaves exactly the names want, and where inos is
// given, those names on those inodes.
type dirCase struct {
	name     string
	dirModel string
	log      []powerfs.Op
	want     []string
	inos     map[string]uint64
}

// symlinkIno and nodeIno are inodes the row tests create.
const (
	symlinkIno = 7
	nodeIno    = 8
)

func mkdir(dir uint64, name string, ino uint64) powerfs.Op {
	return entryOp(powerfs.OpMkdir, dir, name, ino)
}

func createType(dir uint64, name string, ino uint64, typ string) powerfs.Op {
	op := create(dir, name, ino)
	op.Type = typ
	return op
}

func unlink(dir uint64, name string, ino uint64) powerfs.Op {
	return entryOp(powerfs.OpUnlink, dir, name, ino)
}

// dirModelRows holds, for each row of the topic's table (keyed by its
// first cell), the cases that show its two columns: what the row says
// makes the change durable, and that less does not.
func dirModelRows() map[string][]dirCase {
	posix, ext4 := powerfs.DirPOSIX, powerfs.DirExt4
	base := []string{"a:file", "d:dir"}
	withB := []string{"a:file", "b:file", "d:dir"}
	withE := []string{"a:file", "d:dir", "e:dir"}
	moved := []string{"d:dir", "d/x:file"}
	nested := []string{"a:file", "d:dir", "e:dir", "e/f:file"}
	exchange := func(sync powerfs.Op) []powerfs.Op {
		return logOf(create(rootIno, "b", bIno), fsyncDir(rootIno),
			powerfs.Op{Kind: powerfs.OpExchange, Dir: rootIno, Name: "a", Dir2: rootIno, Name2: "b", Ino: aIno}, sync)
	}
	swapped := map[string]uint64{"a": bIno, "b": aIno}
	return map[string][]dirCase{
		"create a file, directory, symlink or node": {
			{"posix: a new file's fsync leaves its name out", posix, logOf(create(rootIno, "b", bIno), fsync(bIno, 0)), base, nil},
			{"posix: its directory's fsync keeps it", posix, logOf(create(rootIno, "b", bIno), fsyncDir(rootIno)), withB, nil},
			{"posix: a new directory's own fsync leaves it out", posix, logOf(mkdir(rootIno, "e", eIno), fsyncDir(eIno)), base, nil},
			{"posix: its parent's fsync keeps it", posix, logOf(mkdir(rootIno, "e", eIno), fsyncDir(rootIno)), withE, nil},
			{"posix: a symlink and a node after their directory's fsync", posix,
				logOf(createType(rootIno, "s", symlinkIno, powerfs.TypeSymlink), createType(rootIno, "n", nodeIno, "node"), fsyncDir(rootIno)),
				[]string{"a:file", "d:dir", "n:node", "s:symlink"}, nil},
			{"posix: neither without it", posix,
				logOf(createType(rootIno, "s", symlinkIno, powerfs.TypeSymlink), createType(rootIno, "n", nodeIno, "node")), base, nil},
			{"ext4: a new file's own fsync keeps its name", ext4, logOf(create(rootIno, "b", bIno), fsync(bIno, 0)), withB, nil},
			{"ext4: a new directory's own fsync keeps its name", ext4, logOf(mkdir(rootIno, "e", eIno), fsyncDir(eIno)), withE, nil},
			{"ext4: its directory's fsync keeps it too", ext4, logOf(create(rootIno, "b", bIno), fsyncDir(rootIno)), withB, nil},
			{"ext4: no fsync, no name", ext4, logOf(create(rootIno, "b", bIno), mkdir(rootIno, "e", eIno)), base, nil},
		},
		"`link` (a new name)": {
			{"posix: the file's fsync leaves the new name out", posix, logOf(entryOp(powerfs.OpLink, rootIno, "b", aIno), fsync(aIno, 10)), base, nil},
			{"posix: the directory's fsync keeps it", posix, logOf(entryOp(powerfs.OpLink, rootIno, "b", aIno), fsyncDir(rootIno)), withB, map[string]uint64{"a": aIno, "b": aIno}},
			{"ext4: the file's fsync keeps it", ext4, logOf(entryOp(powerfs.OpLink, rootIno, "b", aIno), fsync(aIno, 10)), withB, map[string]uint64{"a": aIno, "b": aIno}},
			{"ext4: no fsync, no new name", ext4, logOf(entryOp(powerfs.OpLink, rootIno, "b", aIno)), base, nil},
		},
		"`unlink`, `rmdir`": {
			{"posix: an unlink is undone without its directory's fsync", posix, logOf(unlink(rootIno, "a", aIno), fsync(aIno, 10)), base, nil},
			{"posix: and kept with it", posix, logOf(unlink(rootIno, "a", aIno), fsyncDir(rootIno)), []string{"d:dir"}, nil},
			{"posix: an rmdir is undone without it", posix, logOf(entryOp(powerfs.OpRmdir, rootIno, "d", dIno), fsyncDir(dIno)), base, nil},
			{"ext4: an unlink is undone without any fsync", ext4, logOf(unlink(rootIno, "a", aIno)), base, nil},
			{"ext4: the unlinked file's own fsync makes it durable", ext4, logOf(unlink(rootIno, "a", aIno), fsync(aIno, 10)), []string{"d:dir"}, nil},
			{"ext4: the directory's fsync too", ext4, logOf(unlink(rootIno, "a", aIno), fsyncDir(rootIno)), []string{"d:dir"}, nil},
			{"ext4: an rmdir is undone without any fsync", ext4, logOf(entryOp(powerfs.OpRmdir, rootIno, "d", dIno)), base, nil},
			{"ext4: the removed directory's own fsync makes it durable", ext4, logOf(entryOp(powerfs.OpRmdir, rootIno, "d", dIno), fsyncDir(dIno)), []string{"a:file"}, nil},
		},
		"`rename`, exchange": {
			{"posix: the old directory's fsync alone loses the file", posix, logOf(rename(rootIno, "a", dIno, "x", aIno), fsyncDir(rootIno)), []string{"d:dir"}, nil},
			{"posix: the new directory's alone keeps both names", posix, logOf(rename(rootIno, "a", dIno, "x", aIno), fsyncDir(dIno)), []string{"a:file", "d:dir", "d/x:file"}, nil},
			{"posix: both move it", posix, logOf(rename(rootIno, "a", dIno, "x", aIno), fsyncDir(rootIno), fsyncDir(dIno)), moved, nil},
			{"posix: the moved file's fsync leaves it where it was", posix, logOf(rename(rootIno, "a", dIno, "x", aIno), fsync(aIno, 10)), base, nil},
			{"posix: an exchange after its directory's fsync", posix, exchange(fsyncDir(rootIno)), withB, swapped},
			{"posix: not after a file's", posix, exchange(fsync(aIno, 10)), withB, map[string]uint64{"a": aIno, "b": bIno}},
			{"ext4: the moved file's fsync moves it", ext4, logOf(rename(rootIno, "a", dIno, "x", aIno), fsync(aIno, 10)), moved, nil},
			{"ext4: no fsync, no move", ext4, logOf(rename(rootIno, "a", dIno, "x", aIno)), base, nil},
			{"ext4: one exchanged file's fsync swaps both names", ext4, exchange(fsync(aIno, 10)), withB, swapped},
			{"ext4: the other's too", ext4, exchange(fsync(bIno, 0)), withB, swapped},
		},
		"`fsync` of a directory": {
			{"posix: its whole listing", posix, logOf(create(rootIno, "b", bIno), unlink(rootIno, "a", aIno), fsyncDir(rootIno)), []string{"b:file", "d:dir"}, nil},
			{"posix: no name of it or above", posix, logOf(mkdir(rootIno, "e", eIno), create(eIno, "f", fIno), fsyncDir(eIno)), base, nil},
			{"ext4: its whole listing", ext4, logOf(create(rootIno, "b", bIno), unlink(rootIno, "a", aIno), fsyncDir(rootIno)), []string{"b:file", "d:dir"}, nil},
			{"ext4: and every name from it to the root", ext4, logOf(mkdir(rootIno, "e", eIno), create(eIno, "f", fIno), fsyncDir(eIno)), nested, nil},
		},
		"`fsync` of a file": {
			{"posix: no name of it or above", posix, logOf(mkdir(rootIno, "e", eIno), create(eIno, "f", fIno), fsync(fIno, 0)), base, nil},
			{"ext4: every name from it to the root", ext4, logOf(mkdir(rootIno, "e", eIno), create(eIno, "f", fIno), fsync(fIno, 0)), nested, nil},
			{"ext4: not a sibling's", ext4, logOf(create(rootIno, "b", bIno), mkdir(rootIno, "e", eIno), create(eIno, "f", fIno), fsync(fIno, 0)), nested, nil},
		},
	}
}

// tableRows is the first cell of each body row of the help topic's table
// of directory models (the one whose header names both models).
func tableRows(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dirModelTopic)
	if err != nil {
		t.Fatal(err)
	}
	header := regexp.MustCompile("^\\| operation \\| `posix` \\(default\\) \\| `ext4-ordered` \\|$")
	var rows []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case header.MatchString(line):
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "| "):
			rows = append(rows, strings.TrimSpace(strings.Split(line, "|")[1]))
		case in:
			return rows
		}
	}
	return rows
}

// TestDirModelRows holds every row of the help topic's table of directory
// models to the model: each row has cases under both models, each case's
// survivors are what powerfs.Plan gives under drop, and the table has no
// row without cases (nor the cases a row the table lacks).
func TestDirModelRows(t *testing.T) {
	rows := dirModelRows()
	table := tableRows(t)
	if len(table) == 0 {
		t.Fatalf("%s has no table of the directory models", dirModelTopic)
	}
	tested := slices.Sorted(maps.Keys(rows))
	if d := cmp.Diff(tested, slices.Sorted(slices.Values(table))); d != "" {
		t.Errorf("the table's rows and the tested rows differ (-tested +table):\n%s", d)
	}
	for _, row := range tested {
		models := map[string]bool{}
		for _, c := range rows[row] {
			models[c.dirModel] = true
			t.Run(row+"/"+c.name, func(t *testing.T) {
				o, err := powerfs.Plan(c.log, powerfs.Params{Model: powerfs.ModelDrop, DirModel: c.dirModel})
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(c.want, view(o).Entries); d != "" {
					t.Errorf("names after the cut (-want +got):\n%s", d)
				}
				for name, ino := range c.inos {
					i := slices.IndexFunc(o.Entries, func(e powerfs.Entry) bool { return e.Path == name })
					if i < 0 || o.Entries[i].Ino != ino {
						t.Errorf("%s after the cut: %+v, want inode %d", name, o.Entries, ino)
					}
				}
			})
		}
		if !models[powerfs.DirPOSIX] || !models[powerfs.DirExt4] {
			t.Errorf("row %q: cases under %v, want both models", row, models)
		}
	}
}
