package redelivery

import (
	"idemlab/experiments/broker"
	"idemlab/experiments/results"
	wr "idemlab/worker/redelivery"
)

// The TTL claim under an AckWait shorter than the work (issue 30's
// second experiment, aws-powertools python #8049 on a real broker): each
// delivery claims the event with article 003's TTL conditional upsert
// before the work; delivery 1 works for HoldMS, longer than AckWait, and
// acks late, while the broker redelivers the event to delivery 2.

// ttlClaimCondition is the ttl-claim condition named after its TTL,
// ttlMS, with delivery 1 working for two AckWaits. The TTLs chosen lie a
// factor of four from AckWait on either side, so the processes' start-up
// on a loaded machine cannot move a claim across the TTL.
func ttlClaimCondition(b broker.Settings, name string, ttlMS int64) Condition {
	return Condition{Name: string(wr.TTLClaim) + "/" + FaultSlowWork + "/" + name, Pattern: wr.TTLClaim, BrokerFault: FaultSlowWork,
		HoldMS: 2 * b.AckWaitMS, ClaimTTLMS: ttlMS}
}

// ClaimExpires is the oracle's one judgement: the redelivery comes
// AckWait after delivery 1 took the message, and delivery 1 claimed just
// after it took it, so the redelivery's claim finds delivery 1's expired
// when the TTL is shorter than AckWait. (HoldMS is longer than AckWait in
// these conditions: the redelivery comes while delivery 1 works.)
func ClaimExpires(s Settings, c Condition) bool {
	ts := s.trialSettings(c)
	return c.HoldMS > ts.AckWaitMS && c.ClaimTTLMS < ts.AckWaitMS
}

// expectTTLClaim sets what the claim changes in expectBroker's deliveries
// of a ttl-claim condition, out: both take the message (delivery 2 as the
// broker's redelivery, beside delivery 1) and delivery 1 wins the claim,
// does the work and acks late, the ack accepted as any ack of a message
// acked already is (nats-server #5113).
//   - A claim expired: delivery 2 wins it too and does the work again,
//     concurrently: two jobs, the duplicate of #8049. It acks.
//   - A claim held: delivery 2 loses it and does not do the work; it naks
//     with a delay of the TTL, so the broker offers the event again when
//     the claim would have expired (the holder may have died), and the
//     late ack settles it: one job.
//
// The rows are the parent's, read once both had exited, so both lines
// hold the jobs of both.
func expectTTLClaim(s Settings, c Condition, out []Delivery) {
	expired := ClaimExpires(s, c)
	jobs := 1
	if expired {
		jobs = 2
	}
	for i := range out {
		out[i].FollowUpJobs, out[i].ProcessedEvents = jobs, 0
		cf := out[i].Broker.Consumer
		if cf == nil || !cf.Fetched {
			continue
		}
		won := i == 0 || expired
		cf.ClaimWon, cf.Acked, cf.Nacked = &won, won, !won
	}
}

// foldClaim takes a ttl-claim consumer's claim and nak into its facts,
// checking the TTL it says it claimed with against the condition's, and
// its claim against the work it reports: the work is done iff the claim
// was won (the job's rows are the parent's, checked in checkClaim).
func (f *folder) foldClaim(ln line, p *results.Process, rep *wr.Result, cf *ConsumerFacts) {
	c := rep.Broker
	if ln.cond.Pattern != wr.TTLClaim {
		if c.Claim != nil || c.Nak != nil {
			f.c.Proc(*p, "stdout", "%s reports a claim or a nak, but condition %s takes no claim", p.Label, ln.cond.Name)
		}
		return
	}
	if c.Claim == nil {
		f.c.Proc(*p, "stdout", "%s fetched the message but reports no claim; every ttl-claim delivery claims before the work", p.Label)
		return
	}
	if c.Claim.TTLMS != ln.cond.ClaimTTLMS {
		f.c.Proc(*p, "stdout", "%s's claim.ttl_ms is %d, the condition's TTL is %d ms", p.Label, c.Claim.TTLMS, ln.cond.ClaimTTLMS)
	}
	if rep.Outcome.JobInserted != c.Claim.Won {
		f.c.Proc(*p, "stdout", "%s says it won the claim %v and inserted the job %v: the work follows the claim", p.Label, c.Claim.Won, rep.Outcome.JobInserted)
	}
	won := c.Claim.Won
	cf.ClaimWon = &won
	cf.Nacked = c.Nak != nil && c.Nak.Answered && c.Nak.Status == 0 && c.Nak.Data == ""
	if won && c.Nak != nil {
		f.c.Proc(*p, "stdout", "%s won the claim and naked the message", p.Label)
	}
}
