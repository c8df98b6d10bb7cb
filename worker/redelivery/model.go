package redelivery

// Counts are the rows the two tables hold for the one event.
type Counts struct {
	Jobs      int
	Processed int
}

// Modelled is what one modelled delivery did: the points it passed, in
// order, the one it crashed at, and the rows durable after it stopped.
type Modelled struct {
	Points    []string
	CrashedAt string
	After     Counts
}

// Model is the patterns' commit model, the one both the redelivery
// scenario's oracle and explore's allowed outcomes derive from. It looks
// nothing up: a commit makes the pending writes durable, and a crash at a
// point discards whatever was not committed, as the rollback of a dead
// process's transaction does. Its zero value is an empty file.
type Model struct{ durable Counts }

// Deliveries models n deliveries of the event to a fresh file, the first
// crashing at crashAt (none when empty), the rest redeliveries to fresh
// processes.
func Deliveries(p Pattern, crashAt string, n int) []Modelled {
	var m Model
	out := make([]Modelled, 0, n)
	for d := 1; d <= n; d++ {
		at := ""
		if d == 1 {
			at = crashAt
		}
		out = append(out, m.Deliver(p, at))
	}
	return out
}

// PointsOf lists the points a delivery to a fresh file passes, in order.
func PointsOf(p Pattern) []string {
	var m Model
	return m.Deliver(p, "").Points
}

// crashed stops the modelled delivery at a point, as os.Exit stops the
// worker.
type crashed struct{ at string }

// Deliver models one delivery with pattern p, crashing at crashAt.
func (m *Model) Deliver(p Pattern, crashAt string) (r Modelled) {
	pending := m.durable
	r.Points = []string{}
	point := func(name string) {
		r.Points = append(r.Points, name)
		if name == crashAt {
			panic(crashed{name})
		}
	}
	commit := func() { m.durable = pending }
	defer func() {
		if v := recover(); v != nil {
			c, ok := v.(crashed)
			if !ok {
				panic(v)
			}
			r.CrashedAt = c.at
		}
		r.After = m.durable
	}()
	switch p {
	case SeparateCommit:
		if m.durable.Processed > 0 {
			return r
		}
		pending.Jobs++
		point(PointAfterJobInsert)
		commit()
		point(PointAfterJobCommit)
		pending.Processed = 1
		commit()
		point(PointAfterProcessedCommit)
	case SingleTransaction:
		claimed := pending.Processed == 0
		pending.Processed = 1
		point(PointAfterProcessedInsert)
		if claimed {
			pending.Jobs++
		}
		point(PointBeforeCommit)
		commit()
		point(PointAfterCommit)
	}
	return r
}
