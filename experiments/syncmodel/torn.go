package syncmodel

// Torn is one combination of views of the files a torn cut decides, and
// what the cut leaves under it.
type Torn struct {
	Views  Views
	Result Result
}

// TornCuts enumerates every combination of views (drop, keep, torn) of
// the files a torn cut at c decides (Dirty), with what each leaves: the
// torn fault mode's whole range, for an oracle that allows what any
// combination allows. The first combination drops every file.
func TornCuts(s Setting, p Process, c Cut) ([]Torn, error) {
	dirty, err := Dirty(s, p, c)
	if err != nil {
		return nil, err
	}
	views := []View{ViewDrop, ViewKeep, ViewTorn}
	combos := 1
	for range dirty {
		combos *= len(views)
	}
	out := make([]Torn, 0, combos)
	for k := 0; k < combos; k++ {
		v := Views{}
		for i, rest := 0, k; i < len(dirty); i, rest = i+1, rest/len(views) {
			v[dirty[i]] = views[rest%len(views)]
		}
		r, err := PowerCut(s, p, c, v)
		if err != nil {
			return nil, err
		}
		out = append(out, Torn{Views: v, Result: r})
	}
	return out, nil
}

// AllTorn is what a torn cut at c leaves with every file it decides
// torn: the widest range of commits the torn fault mode allows.
func AllTorn(s Setting, p Process, c Cut) (Result, error) {
	dirty, err := Dirty(s, p, c)
	if err != nil {
		return Result{}, err
	}
	all := Views{}
	for _, f := range dirty {
		all[f] = ViewTorn
	}
	return PowerCut(s, p, c, all)
}
