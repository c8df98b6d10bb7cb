package explore

import (
	"fmt"
	"strconv"

	"idemlab/experiments/scenario"
	"idemlab/experiments/subject/deliver"
)

// ReplayArgs are the experiment flags that run violation v's trial again
// under settings st: the sweep and the takeovers run whole (--trials 0
// --rounds 0); a random trial runs alone with --only-trial, with the
// --trials or --rounds that gave its condition that trial. Kills and
// races rerun with the same delays, not the same scheduling.
func ReplayArgs(st Settings, v deliver.ViolationRecord) []string {
	args := []string{"--scenario", Name, "--seed", strconv.FormatUint(v.Seed, 10)}
	switch v.Kind {
	case KindSweep, KindTakeover:
		return append(args, "--trials", "0", "--rounds", "0")
	case KindRace:
		return append(args, "--trials", "0", "--rounds", strconv.Itoa(st.Rounds), "--only-trial", strconv.Itoa(v.Trial))
	}
	return append(args, "--trials", strconv.Itoa(st.Trials), "--rounds", "0", "--only-trial", strconv.Itoa(v.Trial))
}

// replays are the commands that replay the violations the report lists:
// one per distinct command, the first violation of each condition, at
// most limit.
func replays(st Settings, vs []deliver.ViolationRecord, limit int) []scenario.Replay {
	var out []scenario.Replay
	seen := map[string]bool{}
	for _, v := range vs {
		args := ReplayArgs(st, v)
		key := fmt.Sprint(args)
		if seen[key] || seen[v.Condition] || len(out) == limit {
			continue
		}
		seen[key], seen[v.Condition] = true, true
		what := fmt.Sprintf("%s trial %d (%s)", v.Condition, v.Trial, v.Invariant)
		if v.Kind == KindSweep || v.Kind == KindTakeover {
			what = fmt.Sprintf("%s at %s (%s), with every sweep and takeover", v.Condition, v.Point, v.Invariant)
		}
		out = append(out, scenario.Replay{What: what, Args: args})
	}
	return out
}

// replay is a violation's replay as results.json has always recorded it,
// kept unchanged so that folders written before ReplayArgs still verify.
// It names no binary, input or results folder, and its --trials 2 (or
// --rounds 1) holds only trial 0 of a condition, so --only-trial refuses
// a later one: the report prints ReplayArgs instead.
//
// On PostgreSQL, where a race is all explore runs and --only-trial is
// refused, it is the command that races the condition's level again.
func replay(st Settings, c deliver.Condition, i int) string {
	if st.Backend != "" {
		return fmt.Sprintf("idemlab experiment --backend %s --isolation %s --synchronous-commit %s --scenario explore --rounds %d", st.Backend, c.Spec.Isolation, st.SynchronousCommit, st.Rounds)
	}
	base := fmt.Sprintf("idemlab experiment --scenario explore --seed %d", st.Seed)
	switch c.Label {
	case KindSweep, KindTakeover:
		return base + " --trials 0 --rounds 0"
	case KindRace:
		return base + fmt.Sprintf(" --only-trial %d --trials 0 --rounds 1", i)
	}
	return base + fmt.Sprintf(" --only-trial %d --trials 2 --rounds 0", i)
}
