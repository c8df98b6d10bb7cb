package powerlayer

import (
	"fmt"
	"slices"
	"strings"

	"idemlab/experiments/results"
	"idemlab/worker/faultvfs"
	"idemlab/worker/powerfs"
)

// What a fold of any power trial on the filesystem layer checks of its
// record beyond Check: the models it was cut under, the files the cut
// removed or brought back, and the mount server's process line.

// Mismatch is one field of a record that is not what its trial asks for.
type Mismatch struct{ Field, Text string }

// CheckParams compares the models a cut was made under, got, with the
// ones the trial's settings give, want: every one that differs, named as
// a Record names it ("params.model", "params.dir_model", "params.seed",
// "params.unit").
func CheckParams(want, got powerfs.Params) []Mismatch {
	var out []Mismatch
	for _, p := range []struct {
		field     string
		want, got any
	}{{"model", want.Model, got.Model}, {"dir_model", want.DirModel, got.DirModel}, {"seed", want.Seed, got.Seed}, {"unit", want.Unit, got.Unit}} {
		if p.want != p.got {
			out = append(out, Mismatch{"params." + p.field, fmt.Sprintf("%v, but the fs layer cuts this trial under %+v", p.got, want)})
		}
	}
	return out
}

// Recovered lists "file:action" for the files whose names start with
// prefix that cut r removed or brought back, as faultvfs's report lists
// them for a cut at the VFS: names the processes left (what the keep
// model derives from log) that r lacks are removed, names r holds that
// they did not leave are brought back. Sorted.
func Recovered(prefix string, r powerfs.Outcome, log []powerfs.Op) ([]string, error) {
	live, err := powerfs.Plan(log, powerfs.Params{Model: powerfs.ModelKeep, DirModel: r.DirModel})
	if err != nil {
		return nil, err
	}
	names := func(o powerfs.Outcome) []string {
		var out []string
		for _, e := range o.Entries {
			if strings.HasPrefix(e.Path, prefix) {
				out = append(out, e.Path)
			}
		}
		return out
	}
	left, kept := names(live), names(r)
	var out []string
	for _, n := range kept {
		if !slices.Contains(left, n) {
			out = append(out, n+":"+faultvfs.ActResurrect)
		}
	}
	for _, n := range left {
		if !slices.Contains(kept, n) {
			out = append(out, n+":"+faultvfs.ActRemove)
		}
	}
	slices.Sort(out)
	return out, nil
}

// FoldServer has checker c look up process line id, which observation
// line l names as the server of its mount, and check it (CheckServer)
// against the mount and the models. An id of 0 (a folder made before the
// server was recorded) checks nothing.
func FoldServer(c *results.Checker, r results.Records, l results.Line, id int, mount string, params powerfs.Params) {
	if id != 0 {
		FoldServerLine(c, r, l, id, mount, params)
	}
}

// FoldServerLine has checker c look up process line id, which
// observation line l names as the server of a mount, and check it
// (CheckServer): a missing line is a finding, as is one that does not
// serve mount under params.
func FoldServerLine(c *results.Checker, r results.Records, l results.Line, id int, mount string, params powerfs.Params) {
	if p, ok := c.Use(r, l, id); ok {
		if field, text := CheckServer(p, mount, params); field != "" {
			c.Proc(p, field, "%s", text)
		}
	}
}
