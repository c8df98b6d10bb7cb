package review

import (
	"encoding/json"
	"fmt"
	"sort"

	"idemlab/experiments/harness"
)

// The claim plug-in only draws: its checks and rerun projection are the
// generic ones until a claim-specific check is written.
func init() {
	register("claim", plugin{charts: chartsClaim})
}

// claimRound is the part of a claim condition the chart needs: winners per
// race (round) of one condition.
type claimRound struct {
	Outcome []struct {
		Race    string `json:"race"`
		Winners int    `json:"winners"`
	} `json:"outcome"`
}

func claimWinners(v any) (map[string]float64, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var rounds []claimRound
	if err := json.Unmarshal(b, &rounds); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, r := range rounds {
		for _, o := range r.Outcome {
			out[o.Race] = max(out[o.Race], float64(o.Winners))
		}
	}
	return out, nil
}

func chartsClaim(_ *Folder, s harness.ScenarioResult) ([]Chart, error) {
	var cats []string
	var obs, exp []map[string]float64
	races := map[string]bool{}
	for _, c := range s.Conditions {
		// Conditions of another shape, such as the mutant table, are
		// not races and are left out of this chart.
		o, err1 := claimWinners(c.Observed)
		e, err2 := claimWinners(c.Expected)
		if err1 != nil || err2 != nil || len(o) == 0 {
			continue
		}
		for r := range o {
			races[r] = true
		}
		for r := range e {
			races[r] = true
		}
		cats = append(cats, c.Name)
		obs, exp = append(obs, o), append(exp, e)
	}
	var names []string
	for r := range races {
		names = append(names, r)
	}
	sort.Strings(names)
	var bars, crosses []Series
	for _, r := range names {
		b := Series{Name: "observed winners, race " + r}
		e := Series{Name: "expected, race " + r}
		for i := range cats {
			b.Values = append(b.Values, obs[i][r])
			e.Values = append(e.Values, exp[i][r])
		}
		bars, crosses = append(bars, b), append(crosses, e)
	}
	svg, err := barChart("claim winners per race (the most seen in any repetition)", "winners", cats, bars, crosses)
	if err != nil {
		return nil, fmt.Errorf("claim chart: %w", err)
	}
	return []Chart{{
		Title: "Claim winners per round", Slug: "claim-winners", SVG: svg,
		Caption: "Each condition races its workers in rounds A and B; bars are the largest number of winners seen in any repetition, crosses the oracle's. More than one winner in a round would be the accident the claim exists to prevent.",
	}}, nil
}
