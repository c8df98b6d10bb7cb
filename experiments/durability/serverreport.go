package durability

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker/protocol"
)

// serverSettingsRows are the settings table of a run on PostgreSQL.
func serverSettingsRows(st Settings) [][2]string {
	var server []string
	for _, k := range slices.Sorted(maps.Keys(st.ServerSettings)) {
		server = append(server, k+"="+st.ServerSettings[k])
	}
	crash := "none (--kind server)"
	if len(server) > 0 {
		crash = "SIGKILL of every server process (postmaster and backends), restart, recovery; set with ALTER SYSTEM and read back after each crash: " +
			strings.Join(server, ", ") + "; the WAL writer and background writer stopped (SIGSTOP) from before the first process until the crash; the tables made and flushed by the parent first"
	}
	return [][2]string{
		{"backend", "PostgreSQL, default_transaction_isolation " + st.Isolation},
		{"patterns", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.Pattern }), ", ")},
		{"synchronous_commit", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.SynchronousCommit }), ", ")},
		{"crash kinds", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.Kind }), ", ")},
		{"server crash", crash},
		{"left out", "SQLite's power kind, journal modes, synchronous pragma, fault modes and cuts inside syncs; its ack-open and ack-reader points"},
	}
}

// serverLegend explains the matrix of a run on PostgreSQL.
var serverLegend = []string{
	"cell: the outcome after a kill of the worker, then after a crash of the server, at that point; - not run",
	". nothing lost, no duplicate; r a crashed worker's commit rolled back (redone after); L an ACKed commit lost",
	"K a committed claim gone after the crash, so a second claimer wins inside its TTL; F committed downstream fields gone or replaced",
	"D duplicate: 2 jobs; or a send the receiver's log shows accepted twice (the batch sends no Idempotency-Key, so a resend after a lost IN_FLIGHT mark is accepted again, not replayed); or 2 claim winners within one TTL",
	"M work missing at the end; C amcheck found damage; E a later worker failed",
	"! the trial ended otherwise than the model says (outcome or rows lost)",
	"ack: no crash of the worker; it exited 0, then (server) the server was crashed before the redelivery, resume or next claim",
}

// faultWords names what the crashes of the settings do, for a title.
func faultWords(st Settings) string {
	if st.Backend != "" {
		return "PostgreSQL, " + st.Isolation
	}
	return "fault " + st.Fault
}

// lostTable lists every server crash trial with the rows the parent read
// before the crash and not after it: the figures behind "off loses ACKed
// commits".
func lostTable(st Settings, res results.ScenarioResult) scenario.Table {
	t := scenario.Table{
		Title:  "server crashes: the rows read before the crash and gone after recovery",
		Header: []string{"pattern", "synchronous_commit", "point", "first process", "outcome", "rows lost"},
	}
	var distinct []string
	byName := map[string]results.ConditionResult{}
	for _, c := range res.Conditions {
		byName[c.Name] = c
	}
	for _, c := range st.Conditions {
		var obs map[string]Trial
		if c.Kind != KindServer || json.Unmarshal(byName[c.Name].Observed, &obs) != nil {
			continue
		}
		order, err := st.ModelOrder(c)
		if err != nil {
			continue
		}
		for _, tr := range order {
			o, ok := obs[tr.Point]
			if !ok {
				continue
			}
			first := "ACK"
			if o.FirstExit != protocol.ExitACK {
				first = fmt.Sprintf("exit %d", o.FirstExit)
			}
			for _, r := range o.Lost {
				if !slices.Contains(distinct, r) {
					distinct = append(distinct, r)
				}
			}
			t.Rows = append(t.Rows, []string{c.Pattern, c.SynchronousCommit, tr.Point, first, o.Outcome, fmt.Sprint(len(o.Lost))})
		}
	}
	t.Legend = []string{"rows lost: the rows the parent read before the crash and not after it"}
	if len(distinct) > 0 {
		t.Legend = append(t.Legend, "the rows lost, as read (table: column|column): "+strings.Join(distinct, "; "))
	}
	return t
}
