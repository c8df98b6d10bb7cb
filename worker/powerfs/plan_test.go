package powerfs_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/faultvfs"
	"idemlab/worker/powerfs"
)

// Inodes of the hand-made logs: the root, a 10-byte file "a" and an empty
// directory "d", all present when the mount started.
const (
	rootIno = 1
	aIno    = 2
	dIno    = 3
	bIno    = 4
	eIno    = 5
	fIno    = 6
)

func base() []powerfs.Op {
	return []powerfs.Op{
		{Kind: powerfs.OpBase, Ino: rootIno, Type: powerfs.TypeDir, Mode: 0o755},
		{Kind: powerfs.OpBase, Dir: rootIno, Name: "a", Ino: aIno, Type: powerfs.TypeFile, Mode: 0o644, Size: 10},
		{Kind: powerfs.OpBase, Dir: rootIno, Name: "d", Ino: dIno, Type: powerfs.TypeDir, Mode: 0o755},
	}
}

// logOf numbers ops after the base and counts the syncs, as the server
// does.
func logOf(ops ...powerfs.Op) []powerfs.Op {
	out := base()
	syncs := 0
	for _, op := range ops {
		if op.Kind == powerfs.OpFsync || op.Kind == powerfs.OpFsyncDir {
			syncs++
			op.Sync = syncs
		}
		out = append(out, op)
	}
	for i := range out {
		out[i].Seq = i + 1
	}
	return out
}

func write(ino uint64, off, n int64, saved ...powerfs.Span) powerfs.Op {
	return powerfs.Op{Kind: powerfs.OpWrite, Ino: ino, Off: off, Len: n, Saved: saved}
}
func fsync(ino uint64, size int64) powerfs.Op {
	return powerfs.Op{Kind: powerfs.OpFsync, Ino: ino, Size: size}
}
func fsyncDir(ino uint64) powerfs.Op { return powerfs.Op{Kind: powerfs.OpFsyncDir, Ino: ino} }
func create(dir uint64, name string, ino uint64) powerfs.Op {
	return powerfs.Op{Kind: powerfs.OpCreate, Dir: dir, Name: name, Ino: ino, Type: powerfs.TypeFile, Mode: 0o644}
}
func entryOp(kind string, dir uint64, name string, ino uint64) powerfs.Op {
	return powerfs.Op{Kind: kind, Dir: dir, Name: name, Ino: ino, Mode: 0o755}
}
func rename(dir uint64, name string, dir2 uint64, name2 string, ino uint64) powerfs.Op {
	return powerfs.Op{Kind: powerfs.OpRename, Dir: dir, Name: name, Dir2: dir2, Name2: name2, Ino: ino}
}

// survivor is a test's compact view of an outcome: each name with its
// type, and each file's spans and decisions.
type survivor struct {
	Entries []string
	Files   map[string]string
}

func view(o powerfs.Outcome) survivor {
	v := survivor{Files: map[string]string{}}
	for _, e := range o.Entries {
		v.Entries = append(v.Entries, e.Path+":"+e.Type)
	}
	for _, f := range o.Files {
		var sp []string
		for _, s := range f.Spans {
			sp = append(sp, spanString(s))
		}
		v.Files[f.Path] = strings.Join(sp, ",") + " " + f.Decisions
	}
	return v
}

func spanString(s powerfs.Span) string {
	if s[1] == faultvfs.ToEnd {
		return itoa(s[0]) + "-end"
	}
	return itoa(s[0]) + "-" + itoa(s[1])
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// decide is the torn model's oracle for a file's units: faultvfs.Decide,
// the fault VFS's own function.
func decide(seed int64, path string, spans []powerfs.Span, unit int) string {
	var d []byte
	for _, u := range faultvfs.Units(spans, unit) {
		d = append(d, faultvfs.Decide(seed, path, u))
	}
	return string(d)
}

// TestPlan replays hand-made logs under each data model and each
// directory model. The wanted survivors follow the rules in the package
// doc's table, row by row.
func TestPlan(t *testing.T) {
	posix := powerfs.Params{Model: powerfs.ModelDrop, DirModel: powerfs.DirPOSIX}
	ext4 := powerfs.Params{Model: powerfs.ModelDrop, DirModel: powerfs.DirExt4}
	keep := powerfs.Params{Model: powerfs.ModelKeep, DirModel: powerfs.DirPOSIX}
	keepExt4 := powerfs.Params{Model: powerfs.ModelKeep, DirModel: powerfs.DirExt4}
	torn := powerfs.Params{Model: powerfs.ModelTorn, DirModel: powerfs.DirPOSIX, Seed: 7, Unit: faultvfs.UnitSector}
	tornPage := powerfs.Params{Model: powerfs.ModelTorn, DirModel: powerfs.DirExt4, Seed: 7, Unit: faultvfs.UnitPage}
	big := []powerfs.Span{{0, 1500}}
	base := []string{"a:file", "d:dir"}
	tests := []struct {
		name string
		log  []powerfs.Op
		p    powerfs.Params
		want survivor
	}{
		{"nothing changed", logOf(), posix, survivor{base, map[string]string{}}},
		{"drop: an unsynced overwrite is lost", logOf(write(aIno, 0, 4, powerfs.Span{0, 4})), posix,
			survivor{base, map[string]string{"a": "0-4 d"}}},
		{"drop under ext4: the same", logOf(write(aIno, 0, 4, powerfs.Span{0, 4})), ext4,
			survivor{base, map[string]string{"a": "0-4 d"}}},
		{"keep: an unsynced overwrite survives", logOf(write(aIno, 0, 4, powerfs.Span{0, 4})), keep,
			survivor{base, map[string]string{"a": "0-4 k"}}},
		{"torn: seeded units of 512 bytes", logOf(write(aIno, 0, 1500, powerfs.Span{0, 10})), torn,
			survivor{base, map[string]string{"a": "0-1500 " + decide(7, "a", big, 512)}}},
		{"torn: seeded units of 4 KiB", logOf(write(aIno, 0, 1500, powerfs.Span{0, 10})), tornPage,
			survivor{base, map[string]string{"a": "0-1500 " + decide(7, "a", big, 4096)}}},
		{"writes merge into one span", logOf(write(aIno, 0, 4, powerfs.Span{0, 4}), write(aIno, 4, 4, powerfs.Span{4, 8}), write(aIno, 20, 2)), posix,
			survivor{base, map[string]string{"a": "0-8,20-22 dd"}}},
		{"a truncation is a span to the end", logOf(powerfs.Op{Kind: powerfs.OpTrunc, Ino: aIno, Size: 2, Saved: []powerfs.Span{{2, 10}}}), posix,
			survivor{base, map[string]string{"a": "2-end d"}}},
		{"a synced write survives any model", logOf(write(aIno, 0, 4, powerfs.Span{0, 4}), fsync(aIno, 10)), posix,
			survivor{base, map[string]string{}}},
		{"posix: a created file's name needs fsync(dir)", logOf(create(rootIno, "b", bIno), write(bIno, 0, 5), fsync(bIno, 5)), posix,
			survivor{base, map[string]string{}}},
		{"ext4: fsync(new file) makes its name durable", logOf(create(rootIno, "b", bIno), write(bIno, 0, 5), fsync(bIno, 5)), ext4,
			survivor{[]string{"a:file", "b:file", "d:dir"}, map[string]string{}}},
		{"keep: a created file stays without any sync", logOf(create(rootIno, "b", bIno), write(bIno, 0, 5)), keep,
			survivor{[]string{"a:file", "b:file", "d:dir"}, map[string]string{"b": "0-5 k"}}},
		{"posix: fsync(dir) makes the name durable, not the data", logOf(create(rootIno, "b", bIno), write(bIno, 0, 5), fsyncDir(rootIno)), posix,
			survivor{[]string{"a:file", "b:file", "d:dir"}, map[string]string{"b": "0-5 d"}}},
		{"posix: an unlink without fsync(dir) is undone", logOf(entryOp(powerfs.OpUnlink, rootIno, "a", aIno)), posix,
			survivor{base, map[string]string{}}},
		{"ext4: the unlinked file's fsync makes the unlink durable", logOf(entryOp(powerfs.OpUnlink, rootIno, "a", aIno), fsync(aIno, 10)), ext4,
			survivor{[]string{"d:dir"}, map[string]string{}}},
		{"an undone unlink brings the durable bytes back", logOf(write(aIno, 0, 4, powerfs.Span{0, 4}), entryOp(powerfs.OpUnlink, rootIno, "a", aIno)), posix,
			survivor{base, map[string]string{"a": "0-4 d"}}},
		{"keep: an unlink stays", logOf(entryOp(powerfs.OpUnlink, rootIno, "a", aIno)), keepExt4,
			survivor{[]string{"d:dir"}, map[string]string{}}},
		{"an unlink with fsync(dir) is durable", logOf(entryOp(powerfs.OpUnlink, rootIno, "a", aIno), fsyncDir(rootIno)), posix,
			survivor{[]string{"d:dir"}, map[string]string{}}},
		{"posix: a rename with only the old dir synced loses the file", logOf(rename(rootIno, "a", dIno, "x", aIno), fsyncDir(rootIno)), posix,
			survivor{[]string{"d:dir"}, map[string]string{}}},
		{"posix: a rename with both dirs synced", logOf(rename(rootIno, "a", dIno, "x", aIno), fsyncDir(rootIno), fsyncDir(dIno)), posix,
			survivor{[]string{"d:dir", "d/x:file"}, map[string]string{}}},
		{"posix: a rename with neither synced is undone", logOf(rename(rootIno, "a", dIno, "x", aIno)), posix,
			survivor{base, map[string]string{}}},
		{"ext4: fsync(moved file) moves its name", logOf(rename(rootIno, "a", dIno, "x", aIno), fsync(aIno, 10)), ext4,
			survivor{[]string{"d:dir", "d/x:file"}, map[string]string{}}},
		{"a rename over a file replaces it once synced", logOf(create(rootIno, "b", bIno), fsyncDir(rootIno), rename(rootIno, "b", rootIno, "a", bIno), fsyncDir(rootIno)), posix,
			survivor{[]string{"a:file", "d:dir"}, map[string]string{}}},
		{"posix: a new directory and its file need both fsyncs", logOf(entryOp(powerfs.OpMkdir, rootIno, "e", eIno), create(eIno, "f", fIno), fsync(fIno, 0), fsyncDir(eIno)), posix,
			survivor{base, map[string]string{}}},
		{"ext4: fsync(file) brings its new directory's entry too", logOf(entryOp(powerfs.OpMkdir, rootIno, "e", eIno), create(eIno, "f", fIno), fsync(fIno, 0)), ext4,
			survivor{[]string{"a:file", "d:dir", "e:dir", "e/f:file"}, map[string]string{}}},
		{"a link with fsync(dir): both names, one file plan", logOf(write(aIno, 0, 4, powerfs.Span{0, 4}), entryOp(powerfs.OpLink, rootIno, "b", aIno), fsyncDir(rootIno)), posix,
			survivor{[]string{"a:file", "b:file", "d:dir"}, map[string]string{"a": "0-4 d"}}},
		{"posix: an rmdir without fsync(dir) is undone", logOf(entryOp(powerfs.OpRmdir, rootIno, "d", dIno)), posix,
			survivor{base, map[string]string{}}},
		{"an rmdir with fsync(dir)", logOf(entryOp(powerfs.OpRmdir, rootIno, "d", dIno), fsyncDir(rootIno)), ext4,
			survivor{[]string{"a:file"}, map[string]string{}}},
		{"exchange with both names durable", logOf(create(rootIno, "b", bIno), fsyncDir(rootIno),
			powerfs.Op{Kind: powerfs.OpExchange, Dir: rootIno, Name: "a", Dir2: rootIno, Name2: "b", Ino: aIno}, fsyncDir(rootIno)), posix,
			survivor{[]string{"a:file", "b:file", "d:dir"}, map[string]string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := powerfs.Plan(tt.log, tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, view(o)); diff != "" {
				t.Errorf("survivors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanRefuses: a log the server could not have written.
func TestPlanRefuses(t *testing.T) {
	tests := []struct {
		name string
		log  []powerfs.Op
		p    powerfs.Params
		want string
	}{
		{"an op after the cut", logOf(powerfs.Op{Kind: powerfs.OpCut, At: "command"}, write(aIno, 0, 1)), powerfs.Params{}, "after the cut"},
		{"a sync out of order", append(logOf(), powerfs.Op{Kind: powerfs.OpFsync, Ino: aIno, Sync: 2}), powerfs.Params{}, "sync 2, want 1"},
		{"an unlink of a name that is not there", logOf(entryOp(powerfs.OpUnlink, rootIno, "zz", aIno)), powerfs.Params{}, "does not name"},
		{"an unknown op", logOf(powerfs.Op{Kind: "chmod"}), powerfs.Params{}, "unknown kind"},
		{"no root", nil, powerfs.Params{}, "no root"},
		{"an unknown model", logOf(), powerfs.Params{Model: "half"}, "model"},
		{"an unknown directory model", logOf(), powerfs.Params{DirModel: "xfs"}, "directory model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := powerfs.Plan(tt.log, tt.p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Plan: %v, want an error with %q", err, tt.want)
			}
		})
	}
}
