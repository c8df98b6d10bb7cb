package merge

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/shard"
)

// aspect is one thing every shard of a plan shares: key gives it for a
// folder, and differs says how a folder's differs from the others'.
type aspect struct {
	key     func(p part) string
	differs func(p, ref part) string
}

// aspects are checked in order; the first one on which the folders
// disagree is reported, since a folder from another input differs in its
// plan too.
var aspects = []aspect{
	{
		key: func(p part) string { return p.r.Code.ExecutableSHA256 },
		differs: func(p, ref part) string {
			return fmt.Sprintf("%s was made by another binary: its executable hashes to %s, the others' to %s", p.name(), p.r.Code.ExecutableSHA256, ref.r.Code.ExecutableSHA256)
		},
	},
	{
		key: inputKey,
		differs: func(p, ref part) string {
			return fmt.Sprintf("%s ran another input: its input hashes to %s, the others' to %s%s", p.name(), p.r.Inputs.SHA256, ref.r.Inputs.SHA256, attachmentsNote(p, ref))
		},
	},
	{
		key: func(p part) string { return fmt.Sprint(p.r.Shard.Count) },
		differs: func(p, ref part) string {
			return fmt.Sprintf("%s is a shard of %d, the others of %d: every folder of a merge comes from one --shard i/n with one n", p.name(), p.r.Shard.Count, ref.r.Shard.Count)
		},
	},
	{
		key:     settingsKey,
		differs: settingsDiffer,
	},
	{
		key: planKey,
		differs: func(p, ref part) string {
			return fmt.Sprintf("%s ran another plan: its plan hashes to %s, the others' to %s; with the same settings, its discovery runs passed other points", p.name(), planKey(p), planKey(ref))
		},
	},
}

// fit lists why the folders are not the n parts of one plan; empty when
// they are.
func fit(parts []part) []string {
	for _, a := range aspects {
		groups := map[string][]int{}
		var order []string
		for i, p := range parts {
			k := a.key(p)
			if groups[k] == nil {
				order = append(order, k)
			}
			groups[k] = append(groups[k], i)
		}
		if len(groups) == 1 {
			continue
		}
		// The largest group is the plan; a tie goes to the first folder's.
		ref := order[0]
		for _, k := range order {
			if len(groups[k]) > len(groups[ref]) {
				ref = k
			}
		}
		var out []string
		for _, p := range parts {
			if a.key(p) != ref {
				out = append(out, a.differs(p, parts[groups[ref][0]]))
			}
		}
		return out
	}
	if out := executables(parts); len(out) > 0 {
		return out
	}
	return indices(parts)
}

// executables checks that the shards' processes ran one executable for
// each thing they start (the built-in workers, each user's program), as
// their process lines' executable_sha256 give them: a shard whose
// results.json was edited to name the others' binary still records the
// hash of the one its processes ran. A shard that started no such
// process is not compared on it; paths may differ between machines, the
// hashes may not.
func executables(parts []part) []string {
	var names []string
	for _, p := range parts {
		for name := range p.o.Executables {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		count := map[string]int{}
		var order []string
		for _, p := range parts {
			h, ok := p.o.Executables[name]
			if !ok {
				continue
			}
			if count[h] == 0 {
				order = append(order, h)
			}
			count[h]++
		}
		// The hash most shards ran is the plan's; a tie goes to the first
		// shard's.
		ref := order[0]
		for _, h := range order {
			if count[h] > count[ref] {
				ref = h
			}
		}
		for _, p := range parts {
			if h, ok := p.o.Executables[name]; ok && h != ref {
				out = append(out, fmt.Sprintf("%s ran another executable: its %s record %s for its %s, the others' %s", p.name(), results.ProcessesFile, h, name, ref))
			}
		}
	}
	return out
}

// indices checks that every i from 1 to n is given exactly once.
func indices(parts []part) []string {
	n := parts[0].r.Shard.Count
	by := map[int][]string{}
	for _, p := range parts {
		by[p.r.Shard.Index] = append(by[p.r.Shard.Index], p.dir)
	}
	var out []string
	for i := 1; i <= n; i++ {
		switch dirs := by[i]; {
		case len(dirs) == 0:
			out = append(out, fmt.Sprintf("shard %d/%d is missing: none of the folders given is shard %d of %d", i, n, i, n))
		case len(dirs) > 1:
			out = append(out, fmt.Sprintf("shard %d/%d is given twice: %s; an engine that retried the job leaves one folder of it, pass that one", i, n, scenario.JoinAnd(dirs)))
		}
	}
	return out
}

func inputKey(p part) string {
	var b strings.Builder
	b.WriteString(p.r.Inputs.SHA256)
	for _, a := range p.r.Attachments {
		fmt.Fprintf(&b, " %s=%s", a.Name, a.SHA256)
	}
	return b.String()
}

func attachmentsNote(p, ref part) string {
	if p.r.Inputs.SHA256 != ref.r.Inputs.SHA256 {
		return ""
	}
	return fmt.Sprintf(", and the files it read besides (%s) differ from the others' (%s)", attachmentNames(p), attachmentNames(ref))
}

func attachmentNames(p part) string {
	var out []string
	for _, a := range p.r.Attachments {
		out = append(out, a.Name+" "+a.SHA256[:min(12, len(a.SHA256))])
	}
	return strings.Join(out, ", ")
}

// shared is what a scenario's shards must share: its name, its overrides
// but --shard, and its settings but the part.
type shared struct {
	Name      string            `json:"name"`
	Overrides map[string]string `json:"overrides,omitempty"`
	Settings  json.RawMessage   `json:"settings"`
}

func sharedOf(p part) []shared {
	var out []shared
	for _, s := range p.r.Scenarios {
		ov := map[string]string{}
		for k, v := range s.Overrides {
			if k != scenario.ShardFlag.Name {
				ov[k] = v
			}
		}
		st, err := shard.WithoutShard(s.Settings)
		if err != nil {
			st = s.Settings
		}
		out = append(out, shared{Name: s.Name, Overrides: ov, Settings: st})
	}
	return out
}

func settingsKey(p part) string {
	b, _ := json.Marshal(sharedOf(p))
	return string(b)
}

func settingsDiffer(p, ref part) string {
	a, b := sharedOf(ref), sharedOf(p)
	d := results.DiffPaths("scenarios", a, b)
	first := ""
	if len(d) > 0 {
		first = fmt.Sprintf(": %s is %s here, %s in the others", d[0].Path, d[0].B, d[0].A)
	}
	return fmt.Sprintf("%s ran other scenarios or settings (another seed, trial count or flag)%s", p.name(), first)
}

func planKey(p part) string {
	var out []string
	for _, s := range p.o.Derived.Scenarios {
		if s.Plan != nil {
			out = append(out, s.Name+"="+s.Plan.SHA256)
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
