package durability

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/engine"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/worker/powerfs"
	"idemlab/worker/protocol"
)

// codes are one letter per tag, so a cell holds a whole outcome.
var codes = map[string]string{
	OutcomeOK: ".", TagCorrupt: "C", TagLostAcked: "L", TagRolledBack: "r",
	TagLostClaim: "K", TagLostDownstream: "F", TagDuplicate: "D", TagMissing: "M", TagError: "E",
}

// Code abbreviates an outcome for the terminal table.
func Code(outcome string) string {
	if outcome == "" {
		return "-"
	}
	var b strings.Builder
	for _, t := range strings.Split(outcome, "+") {
		b.WriteString(codes[t])
	}
	return b.String()
}

// Report arranges the result: what it found, in sentences, then the
// matrix, one row per pattern and point, one column per
// journal_mode/synchronous, each cell "kill/power" in one-letter codes, and
// the trials outside the model. The matrix itself is in the extra data,
// for a heat map.
func (Scenario) Report(st Settings, res results.ScenarioResult, _ Extra) (scenario.Section, error) {
	// A pass means every outcome is one the model allows, which may well
	// be a loss; the verdict says so.
	sec := scenario.Section{Verdict: scenario.ModelVerdict(res.Pass), Lead: Lead(st, res)}
	sec.Settings = settingsRows(st)
	cells := cellsOf(st, res)
	sec.Tables = []scenario.Table{matrixTable(st, cells), totalsTable(st, cells)}
	if st.Backend != "" {
		sec.Tables = append(sec.Tables, lostTable(st, res))
	}
	var misses []string
	for _, c := range cells {
		if !c.ok() {
			misses = append(misses, fmt.Sprintf("%s: %s, allowed %v", c.name(), c.outcome, c.allowed))
		}
	}
	if len(misses) > 0 {
		mt := scenario.Table{Title: "trials outside the model", Header: []string{"condition point: observed, allowed"}}
		for _, m := range misses {
			mt.Rows = append(mt.Rows, []string{m})
		}
		sec.Tables = append(sec.Tables, mt)
	}
	ch, err := matrixChart(res)
	if err != nil {
		return sec, err
	}
	sec.Charts = ch
	return sec, nil
}

// settingsRows are the report's settings table.
func settingsRows(st Settings) [][2]string {
	if st.Backend != "" {
		return serverSettingsRows(st)
	}
	return [][2]string{
		{"patterns", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.Pattern }), ", ")},
		{"journal_mode × synchronous", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.JournalMode + "/" + c.Synchronous }), ", ")},
		{"crash kinds", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.Kind }), ", ")},
		{"batch items", fmt.Sprint(st.Items)},
		{"power cut", powerCutPhrase(st)},
		{"cuts inside a sync", map[bool]string{true: "every sync of the normal run, just before and just after the fsync", false: "off (--sync-points)"}[st.SyncPoints]},
	}
}

// powerCutPhrase says what the settings' power cut does.
func powerCutPhrase(st Settings) string {
	layer := "worker/faultvfs"
	if st.PowerLayer == engine.LayerFS {
		layer = "worker/powerfs (the fs layer, strict POSIX directories)"
		if st.DirModel == powerfs.DirExt4 {
			layer = "worker/powerfs (the fs layer, ext4 data=ordered directories)"
		}
	}
	if st.Torn() {
		phrase := fmt.Sprintf("%s, torn: each %d-byte unit written since the last sync kept, dropped or garbled, %d seeds from %d; undurable names lost, undurable deletions come back", layer, st.FaultUnit, st.FaultSeeds, st.Seed)
		if st.PowerLayer == engine.LayerFS {
			phrase += "; an outcome any combination of the files' views allows (the filesystem's units are not the VFS's)"
		}
		return phrase
	}
	return layer + ", drop: unsynced data and undurable names are lost, undurable deletions come back"
}

// matrixLegend explains the matrix's codes.
var matrixLegend = []string{
	"cell: the outcome after a process kill, then after a power cut, at that point; - not run",
	". nothing lost, no duplicate; r a crashed worker's commit rolled back (redone after); L an ACKed commit lost",
	"K a committed claim gone after the cut; F committed downstream fields gone or replaced",
	"D duplicate (2 jobs, a send accepted twice, or 2 claim winners within one TTL)",
	"M work missing at the end; C integrity_check failed; E a later worker failed",
	"! the trial ended otherwise than the durability model says (outcome, rows lost, or files removed or brought back)",
	"ack: no crash; the worker exited 0 and the power was cut after it, before the redelivery, resume or probe",
	"ack-open: the worker reported success and was cut with its connection open, so no close-time checkpoint ran",
	"ack-reader: the parent held a read connection open, so the worker's close was not the last one",
	"sync cuts: the worst outcome of the cuts inside every sync of the normal run (--sync-points)",
	"under --fault torn a power cell shows the worst outcome of its seeds",
	"claim: after the cut a probe claims inside the TTL, then a re-claim after it finishes the work",
	"D=DELETE W=WAL; OFF NORM FULL EXTR are synchronous levels",
}

// matrixTable lays the cells out: a row per pattern and point, a column
// per setting, "kill/power" in each.
func matrixTable(st Settings, cells []cell) scenario.Table {
	var cols []string
	for _, name := range settingOrder() {
		if slices.ContainsFunc(st.Conditions, func(c Condition) bool { return c.SettingName() == name }) {
			cols = append(cols, name)
		}
	}
	t := scenario.Table{
		Title:  "outcome per pattern and crash point (rows) and journal_mode/synchronous (columns): kill/power",
		Header: append([]string{"pattern / point"}, shortCols(cols)...),
		Legend: matrixLegend,
	}
	if st.Backend != "" {
		t.Title = "outcome per pattern and crash point (rows) and synchronous_commit (columns): " + strings.Join(st.kinds(), "/")
		t.Header, t.Legend = append([]string{"pattern / point"}, cols...), serverLegend
		if len(st.PowerQuiet) > 0 {
			t.Legend = append(slices.Clone(serverLegend), "power (the third code): a power cut of the trial's own cluster on a power-loss mount, under the column's fsync, synchronous_commit, full_page_writes and model; C also a page its checksum rejected, or a server that did not start")
		}
	}
	// A slot holds every seed of a point, or every sync cut of a
	// pattern: it shows the worst outcome, and "!" if any trial in it
	// ended otherwise than the model says.
	type slot struct {
		worst string
		miss  bool
	}
	at := map[string]*slot{} // pattern/row MODE/SYNC kind
	for _, c := range cells {
		k := c.cond.Pattern + "/" + matrixRow(c.point) + " " + c.setting() + " " + c.cond.Kind
		sl := at[k]
		if sl == nil {
			sl = &slot{worst: c.outcome}
			at[k] = sl
		}
		if SeverityOf(c.outcome) > SeverityOf(sl.worst) {
			sl.worst = c.outcome
		}
		sl.miss = sl.miss || !c.ok()
	}
	for _, p := range AllPatterns {
		rows := append(append([]string{PointACK}, Points(p, st.Items)...), ExtraPoints(p)...)
		for _, pt := range append(rows, rowSync) {
			r := []string{shortRow(p, pt)}
			seen := false
			for _, col := range cols {
				var parts []string
				for _, k := range st.kinds() {
					s := "-"
					if sl, ok := at[p+"/"+pt+" "+col+" "+k]; ok {
						s, seen = Code(sl.worst), true
						if sl.miss {
							s += "!"
						}
					}
					parts = append(parts, s)
				}
				r = append(r, strings.Join(parts, "/"))
			}
			if seen {
				t.Rows = append(t.Rows, r)
			}
		}
	}
	return t
}

// rowSync is the matrix row that gathers a pattern's cuts inside a sync.
const rowSync = "sync cuts"

// matrixRow is the matrix row of a point: its own, or rowSync for a cut
// inside a sync.
func matrixRow(point string) string {
	if _, ok := ParseSyncPoint(point); ok {
		return rowSync
	}
	return point
}

// totalsTable counts the trials per crash kind and what they ended as, the
// figures the durability topic quotes.
func totalsTable(st Settings, cells []cell) scenario.Table {
	tags := []string{TagLostAcked, TagRolledBack, TagDuplicate, TagLostClaim, TagLostDownstream, TagMissing, TagCorrupt, TagError}
	t := scenario.Table{
		Title:  "trials per crash kind and how many ended with each tag (" + faultWords(st) + ")",
		Header: []string{"kind", "trials"},
		Legend: []string{"a trial counts once under every tag it carries; ! counts the trials that ended otherwise than the model says"},
	}
	for _, tag := range tags {
		t.Header = append(t.Header, Code(tag))
	}
	t.Header = append(t.Header, "!")
	for _, k := range st.kinds() {
		n, miss, per := 0, 0, map[string]int{}
		for _, c := range cells {
			if c.cond.Kind != k {
				continue
			}
			n++
			if !c.ok() {
				miss++
			}
			for _, tag := range tags {
				if c.has(tag) {
					per[tag]++
				}
			}
		}
		if n == 0 {
			continue
		}
		r := []string{k, fmt.Sprint(n)}
		for _, tag := range tags {
			r = append(r, fmt.Sprint(per[tag]))
		}
		t.Rows = append(t.Rows, append(r, fmt.Sprint(miss)))
	}
	return t
}

func uniq(cs []Condition, key func(Condition) string) []string {
	var out []string
	for _, c := range cs {
		if k := key(c); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// shortCols keeps the header narrow: "D/FULL", "W/NORM".
func shortCols(cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		m, s, _ := strings.Cut(c, "/")
		if len(s) > 4 {
			s = s[:4]
		}
		out[i] = m[:1] + "/" + s
	}
	return out
}

// shortRow abbreviates a pattern and point to fit 100 columns.
func shortRow(pattern, point string) string {
	p := map[string]string{PatternSeparate: "sep", PatternSingle: "single", PatternBatch: "batch", PatternClaim: "claim"}[pattern]
	point = strings.NewReplacer("after-send-accepted", "accepted", "before-send", "before-send", "item-00", "#").Replace(point)
	return p + " " + point
}

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
	rows := [][2]string{
		{"backend", "PostgreSQL, default_transaction_isolation " + st.Isolation},
		{"patterns", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.Pattern }), ", ")},
		{"synchronous_commit", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.SynchronousCommit }), ", ")},
		{"crash kinds", strings.Join(uniq(st.Conditions, func(c Condition) string { return c.Kind }), ", ")},
		{"server crash", crash},
		{"left out", "SQLite's power kind, journal modes, synchronous pragma, fault modes and cuts inside SQLite's syncs; its ack-open and ack-reader points"},
	}
	if len(st.PowerQuiet) > 0 {
		method := st.WalSyncMethod
		if method == "" {
			method = "the server's default"
		}
		rows = append(rows, [2]string{"power cut", "a cluster of its own per trial (initdb -k), its data folder on a power-loss mount (strict POSIX directories); cut after the first process, rebuilt under the model, restarted with WAL recovery, then amcheck and the checksum count; " +
			"server settings " + strings.Join(st.PowerQuiet, ", ") + ", wal_sync_method " + method})
		rows = append(rows, [2]string{"fsync sweep", backend.SweepPhrase(st.SyncPoints, st.SyncBound)})
	}
	return rows
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
	byName := engine.ByName(res)
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
