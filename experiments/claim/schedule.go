package claim

import (
	wc "idemlab/worker/claim"
)

// Slot is one race of the run in the order Run races them: the fold walks
// the observation lines against the same list, so a missing, extra or
// reordered race is a finding.
type Slot struct {
	// Seq numbers the races of the run from 1; requests carry it.
	Seq       int
	Condition string
	Round     Round
	// Variant is the claim under test; By the claim this race makes (race
	// A of round 4 is made by the legacy claim whatever is under test).
	Variant    wc.Variant
	By         wc.Variant
	Mutant     bool
	Repetition int
	// Index is the race's place in its round; index 0 starts a fresh file.
	Index  int
	Race   Race
	Racers int
}

// Last says whether the slot is its round's last race.
func (s Slot) Last() bool { return s.Index == len(s.Round.Races)-1 }

// Schedule lists every race the settings imply: each round of each claim
// for which it means something, repeated, then each mutant on every round
// of the TTL claim.
func Schedule(st Settings) []Slot {
	var out []Slot
	add := func(r Round, v wc.Variant, mutant bool, reps int) {
		for rep := 1; rep <= reps; rep++ {
			for i, race := range r.Races {
				by := v
				if race.By != "" {
					by = race.By
				}
				out = append(out, Slot{
					Seq: len(out) + 1, Condition: RoundCondition(r.ID, v), Round: r, Variant: v, By: by,
					Mutant: mutant, Repetition: rep, Index: i, Race: race, Racers: race.Racers(st.Workers),
				})
			}
		}
	}
	for _, r := range st.Rounds {
		for _, v := range st.Claims {
			if r.hasKind(v) {
				add(r, v, false, st.Repetitions)
			}
		}
	}
	for _, m := range st.MutantVariants {
		for _, r := range st.Rounds {
			if r.hasKind(wc.TTL) {
				add(r, m, true, st.MutantRepetitions)
			}
		}
	}
	return out
}

// Members picks the pool members of a race: consecutive members from a
// place that moves with every race, so that every member serves solo
// races and every slot.
func Members(seq, racers, size int) []int {
	out := make([]int, racers)
	for k := range out {
		out[k] = (seq + k) % size
	}
	return out
}

// RequestFor is the request the racer in slot k of a race is sent. start
// is the parent's clock when the race began and base its round's start.
func RequestFor(s Slot, k int, db string, startMS, baseMS int64) wc.Request {
	req := wc.Request{
		Race: s.Seq, Slot: k, Label: RacerLabel(s.Seq, k), DB: db, Variant: s.By,
		EventMS: startMS + s.Race.CallerMS, ClockOffsetMS: s.Race.ClockMS, NowMS: wc.NoPin,
		FollowUp: s.Race.FollowUp,
	}
	if s.Race.Pinned {
		req.ClockOffsetMS, req.NowMS = 0, baseMS+s.Race.ClockMS
	}
	return req
}
