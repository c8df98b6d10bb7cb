package faultvfs

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
)

// Fault modes: what a cut does to the data written since a file's last
// sync.
const (
	// FaultDrop loses every unsynced write: the durable image is all that
	// is left. It is deterministic, so an oracle can predict its outcome
	// exactly.
	FaultDrop = "drop"
	// FaultTorn decides each unsynced write range, unit by unit, from a
	// seed: keep it, drop it, or garble it, each unit independently, as
	// SQLite's own crash VFS (src/test6.c) does per sector. Because later
	// units can survive while earlier ones are lost, it also reorders
	// writes no fsync ordered.
	FaultTorn = "torn"
	// FaultKeep keeps every write, synced or not: the folder is left as
	// the processes last saw it, which is what a disk that wrote back all
	// it was given before the power went leaves, and what a process crash
	// leaves. With FaultDrop it brackets what may reach the disk: a
	// pattern that breaks under either extreme is not safe under that
	// setting. Only the -shm files go, as in every mode.
	FaultKeep = "keep"
)

// Faults lists the fault modes.
var Faults = []string{FaultDrop, FaultTorn, FaultKeep}

// Unit sizes the torn mode accepts: a disk sector, or a SQLite page.
const (
	UnitSector = 512
	UnitPage   = 4096
)

// Options say how Recover treats unsynced data.
type Options struct {
	// Fault is FaultDrop (also when empty), FaultTorn or FaultKeep.
	Fault string
	// Seed seeds every torn decision and every garbled byte.
	Seed int64
	// Unit is the torn mode's granularity, UnitSector or UnitPage; 0
	// means UnitSector.
	Unit int
}

// normalize fills the defaults and refuses what Recover cannot do.
func (o Options) normalize() (Options, error) {
	if o.Fault == "" {
		o.Fault = FaultDrop
	}
	if o.Unit == 0 {
		o.Unit = UnitSector
	}
	if !slices.Contains(Faults, o.Fault) {
		return o, fmt.Errorf("faultvfs: fault %q is not one of %q", o.Fault, Faults)
	}
	if o.Unit != UnitSector && o.Unit != UnitPage {
		return o, fmt.Errorf("faultvfs: unit %d: want %d or %d", o.Unit, UnitSector, UnitPage)
	}
	return o, nil
}

// Torn decisions, one letter per unit.
const (
	DecideKeep   = 'k'
	DecideDrop   = 'd'
	DecideGarble = 'g'
)

// TornFile is the torn mode's plan for one file: which byte ranges were
// written since its last sync, and what the cut does to each unit of them.
// Both follow from the op log and the seed, so verify can derive them again.
type TornFile struct {
	Name string `json:"name"`
	Ino  string `json:"ino"`
	// Spans are the ranges written since the inode's last sync, as the log
	// published them.
	Spans []Span `json:"spans"`
	// Decisions has one letter per unit of Spans, in order (see Units):
	// k kept, d dropped, g garbled.
	Decisions string `json:"decisions"`
}

// Units splits written ranges into the units the torn mode decides: a
// finite range is cut at every multiple of unit, so a unit never crosses a
// sector (or page) boundary and never covers a byte nobody wrote; a range to
// the end of the file, a truncation, is one unit of its own.
func Units(spans []Span, unit int) []Span {
	var out []Span
	if unit <= 0 {
		unit = UnitSector
	}
	u := int64(unit)
	for _, s := range spans {
		if s[1] == ToEnd {
			out = append(out, s)
			continue
		}
		for a := s[0]; a < s[1]; {
			b := min((a/u+1)*u, s[1])
			out = append(out, Span{a, b})
			a = b
		}
	}
	return out
}

// unitRand is the random stream of one unit: a function of the seed, the
// file's name and the unit's offset only, so the same log and seed give
// the same decisions and the same garbage in every run and in verify.
func unitRand(seed int64, name string, off int64) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(off))
	h.Write(b[:])
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// Decide is the seeded choice for one unit, in the proportions test6.c
// uses for a sector: garbage one time in four, otherwise kept or dropped
// with equal odds.
func Decide(seed int64, name string, unit Span) byte {
	switch r := unitRand(seed, name, unit[0]).IntN(8); {
	case r < 2:
		return DecideGarble
	case r < 5:
		return DecideKeep
	default:
		return DecideDrop
	}
}

// TornPlan derives the torn decisions for every file a cut restores to the
// inode it has now, from the model replayed from the log. A file whose
// name a cut removes, or whose name comes back on another inode, has no
// unsynced writes that could survive, so it has no entry.
func TornPlan(m *Model, seed int64, unit int) []TornFile {
	var out []TornFile
	for _, name := range slices.Sorted(maps.Keys(m.Live)) {
		ino := m.Live[name]
		if isShm(name) || m.Durable[name] != ino || len(m.Dirty[ino]) == 0 {
			continue
		}
		spans := slices.Clone(m.Dirty[ino])
		units := Units(spans, unit)
		d := make([]byte, len(units))
		for i, u := range units {
			d[i] = Decide(seed, name, u)
		}
		out = append(out, TornFile{Name: name, Ino: ino, Spans: spans, Decisions: string(d)})
	}
	return out
}

// Tear builds what the disk holds of one file after a torn cut: the
// durable image, with each unit of the unsynced writes kept (the live
// bytes), dropped (the durable bytes) or garbled (seeded bytes). Only bytes
// some write touched can change, which keeps the unix VFS's promise of
// SQLITE_IOCAP_POWERSAFE_OVERWRITE: a write never damages bytes outside its
// range. The size grows to the end of the last unit kept or garbled; a gap
// a dropped unit leaves below it reads as zeros, as an unwritten extent
// does. A truncation unit that is kept cuts the file to the live size
// first.
func Tear(durable, live []byte, tf TornFile, seed int64, unit int) ([]byte, error) {
	units := Units(tf.Spans, unit)
	if len(units) != len(tf.Decisions) {
		return nil, fmt.Errorf("faultvfs: %s: %d units but %d decisions", tf.Name, len(units), len(tf.Decisions))
	}
	out := slices.Clone(durable)
	grow := func(n int64) {
		if int64(len(out)) < n {
			out = append(out, make([]byte, n-int64(len(out)))...)
		}
	}
	// The truncation units first, since they set the size the writes land
	// on; then every finite unit.
	for pass := 0; pass < 2; pass++ {
		for i, u := range units {
			if (u[1] == ToEnd) != (pass == 0) {
				continue
			}
			end := u[1]
			if end == ToEnd || end > int64(len(live)) {
				end = int64(len(live))
			}
			if u[1] == ToEnd && end < u[0] {
				end = u[0]
			}
			if u[0] >= end && u[1] != ToEnd {
				// Written, then cut off by a later truncation: nothing of
				// it is live any more.
				continue
			}
			switch tf.Decisions[i] {
			case DecideDrop:
				continue
			case DecideKeep, DecideGarble:
			default:
				return nil, fmt.Errorf("faultvfs: %s: decision %q", tf.Name, tf.Decisions[i])
			}
			if u[1] == ToEnd {
				grow(u[0])
				out = out[:u[0]]
			}
			grow(end)
			part := out[u[0]:end]
			if tf.Decisions[i] == DecideKeep {
				copy(part, live[u[0]:end])
				continue
			}
			r := unitRand(seed, tf.Name, u[0])
			r.IntN(8) // the decision's draw, so garbage is not correlated with it
			for j := range part {
				part[j] = byte(r.Uint32())
			}
		}
	}
	return out, nil
}
