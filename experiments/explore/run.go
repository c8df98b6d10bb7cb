package explore

import (
	"context"
	"fmt"

	"idemlab/experiments/engine"
	"idemlab/experiments/errclass"
	"idemlab/experiments/harness"
	"idemlab/experiments/pattern"
	"idemlab/experiments/scenario"
	"idemlab/experiments/subject/deliver"
)

// Run puts every pattern on the engine: its discovery on SQLite, then its
// conditions' sets; on PostgreSQL, its races only, without discovery.
func (p *plan) Run(ctx context.Context, env scenario.Env) error {
	st := p.s
	if st.Backend != "" && env.Backend == nil {
		return fmt.Errorf("%w: explore's settings are PostgreSQL's, but the run has no PostgreSQL server", errclass.ErrHarness)
	}
	for _, c := range st.Conditions {
		if _, ok := LookupPattern(c.Pattern); !ok || st.Backend != "" && c.Kind != KindRace {
			return fmt.Errorf("%w: condition %s is not a trial of a registered pattern, or not a race on PostgreSQL", errclass.ErrHarness, c.Name)
		}
	}
	var units []engine.Unit
	conds := map[string]deliver.Cond{}
	for _, c := range st.Conditions {
		conds[c.Name] = st.fold(c).Cond
	}
	for _, ps := range st.Patterns {
		pat, ok := LookupPattern(ps.Name)
		if !ok {
			return fmt.Errorf("%w: pattern %q is not registered", errclass.ErrHarness, ps.Name)
		}
		u := engine.Unit{Subject: deliver.Runner{Env: env, Scenario: Name, DBName: DBName, Params: st.params(), Subject: pat, Conds: conds, SendLatency: p.sendLatency}}
		if st.Backend == "" {
			u.Discovery = ps.Name + "/" + KindDiscovery
		}
		for _, c := range st.Conditions {
			if c.Pattern == ps.Name && c.Kind != KindDiscovery {
				u.Sets = append(u.Sets, st.fold(c).Set())
			}
		}
		units = append(units, u)
	}
	// The built-in patterns' run and each article file's run go side by
	// side, sharing the slots: together they keep that many trials
	// going, and none waits for another's discovery or last race.
	env.Slots = env.SlotsOf(p.Caps().Slots(0))
	runs := []func(context.Context) error{func(ctx context.Context) error {
		_, err := engine.Run{Seed: st.Seed, Slots: env.Slots, Shard: st.Shard, Units: units}.Execute(ctx)
		return err
	}}
	for _, a := range st.articles() {
		runs = append(runs, func(ctx context.Context) error { return pattern.Run(ctx, articleEnv(env, st, a), a, Name) })
	}
	return harness.RunJobs(ctx, len(runs), runs)
}
