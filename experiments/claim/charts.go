package claim

import (
	"encoding/json"
	"fmt"

	"idemlab/experiments/figure"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
)

// winnersChart draws the winners of each race per round and claim: race A
// sets the row up, race B is the race under test. A round with no race B
// draws no B bar.
func winnersChart(res results.ScenarioResult, st Settings) ([]scenario.Chart, error) {
	c := figure.BarChart{Title: "winners per race", YLabel: "winners", XLabel: "round / claim", ExpectedName: "expected (oracle)"}
	races := map[string]*figure.Series{}
	var order []string
	type cell struct{ got, want float64 }
	var cats []map[string]cell
	for _, r := range st.Rounds {
		for _, v := range st.Claims {
			name := RoundCondition(r.ID, v)
			if _, na := st.notRun(name); na {
				continue
			}
			for _, cr := range res.Conditions {
				if cr.Name != name {
					continue
				}
				var obs, exp []Group
				if err := json.Unmarshal(cr.Observed, &obs); err != nil {
					return nil, fmt.Errorf("condition %s observed: %w", name, err)
				}
				json.Unmarshal(cr.Expected, &exp)
				row := map[string]cell{}
				if len(obs) > 0 {
					for _, o := range obs[0].Outcome {
						row[o.Race] = cell{got: float64(o.Winners), want: figure.Missing()}
						if _, ok := races[o.Race]; !ok {
							races[o.Race] = &figure.Series{Name: "race " + o.Race}
							order = append(order, o.Race)
						}
					}
				}
				if len(exp) > 0 {
					for _, o := range exp[0].Outcome {
						x := row[o.Race]
						if _, ok := row[o.Race]; !ok {
							x.got = figure.Missing()
						}
						x.want = float64(o.Winners)
						row[o.Race] = x
					}
				}
				c.Categories = append(c.Categories, name)
				cats = append(cats, row)
			}
		}
	}
	for _, race := range order {
		s := races[race]
		for _, row := range cats {
			x, ok := row[race]
			if !ok {
				x = cell{figure.Missing(), figure.Missing()}
			}
			s.Values, s.Expected = append(s.Values, x.got), append(s.Expected, x.want)
		}
		c.Series = append(c.Series, *s)
	}
	svg, err := c.SVG()
	if err != nil {
		return nil, err
	}
	caption := fmt.Sprintf("Winners of each race in the first group of repetitions (every repetition must agree); markers are the oracle's expectation. Race B after the TTL shows the article's bug: 0 winners with DO NOTHING, 1 with the TTL upsert. %d racers per race B.", st.Workers)
	if st.User != nil {
		caption = fmt.Sprintf("Winners of each race of your statement in the first group of repetitions (every repetition must agree); markers are the TTL contract's expectation. %d racers per race B.", st.Workers)
	}
	return []scenario.Chart{{Title: "Winners per race", Slug: "claim-winners", SVG: svg, Caption: caption}}, nil
}
