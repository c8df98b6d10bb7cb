package claim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"idemlab/worker/sqlitedb"
	"idemlab/worker/store"
)

// TableClaims is the table every claim worker writes.
const TableClaims = "event_claims"

// RequestedSQLite is what every claim worker's connection must read back
// when opened with busy timeout busyMS.
func RequestedSQLite(busyMS int) sqlitedb.Settings {
	o := Options("", time.Duration(busyMS)*time.Millisecond)
	return sqlitedb.Settings{JournalMode: o.JournalMode, Synchronous: o.Synchronous, BusyTimeoutMS: busyMS}
}

// Row is the event_claims row as stored. Pointers are NULL columns.
type Row struct {
	Fingerprint    string  `json:"fingerprint"`
	Source         string  `json:"source"`
	Level          string  `json:"level"`
	Message        string  `json:"message"`
	FirstSeen      int64   `json:"first_seen"`
	LastSeen       int64   `json:"last_seen"`
	Count          int64   `json:"count"`
	ClaimedAt      *int64  `json:"claimed_at"`
	HasClaimedAt   bool    `json:"has_claimed_at_column"`
	Classification *string `json:"classification"`
	ExternalID     *string `json:"external_id"`
}

// selectRows reads every column of event_claims on either layout; the old
// one reads claimed_at as NULL.
func selectRows(hasClaimedAt bool) string {
	claimed := "NULL"
	if hasClaimedAt {
		claimed = "claimed_at"
	}
	return `SELECT fingerprint, source, level, message, first_seen, last_seen, count, ` + claimed +
		`, classification, external_id FROM event_claims`
}

// scanRow scans one row of selectRows.
func scanRow(scan func(...any) error, hasClaimedAt bool) (Row, error) {
	r := Row{HasClaimedAt: hasClaimedAt}
	err := scan(&r.Fingerprint, &r.Source, &r.Level, &r.Message, &r.FirstSeen, &r.LastSeen, &r.Count, &r.ClaimedAt, &r.Classification, &r.ExternalID)
	return r, err
}

// ReadRow reads the row of fingerprint; ok is false when there is none. It
// works on both layouts and says which one it found, from the columns of
// one SELECT *, so a read after each race costs two round trips (is there
// a table, then its row), not four.
func ReadRow(ctx context.Context, st store.Store, fingerprint string) (row Row, ok bool, err error) {
	if has, err := st.HasTable(ctx, TableClaims); err != nil || !has {
		return row, false, err
	}
	rs, err := st.QueryContext(ctx, "SELECT * FROM event_claims WHERE fingerprint = ?", fingerprint)
	if err != nil {
		return row, false, fmt.Errorf("read claim row: %w", err)
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return row, false, fmt.Errorf("read claim row: %w", err)
	}
	switch strings.Join(cols, ",") {
	case layoutColumns(true):
		row.HasClaimedAt = true
	case layoutColumns(false):
	default:
		return row, false, fmt.Errorf("read claim row: event_claims has columns %v, which is neither layout", cols)
	}
	if rs.Next() {
		var claimedAt *int64
		dest := []any{&row.Fingerprint, &row.Source, &row.Level, &row.Message, &row.FirstSeen, &row.LastSeen, &row.Count, &claimedAt, &row.Classification, &row.ExternalID}
		if !row.HasClaimedAt {
			dest = append(dest[:7], dest[8:]...)
		}
		if err := rs.Scan(dest...); err != nil {
			return Row{HasClaimedAt: row.HasClaimedAt}, false, fmt.Errorf("read claim row: %w", err)
		}
		row.ClaimedAt, ok = claimedAt, true
	}
	return row, ok, rs.Err()
}

// layoutColumns lists event_claims' columns in order, as the two schemas
// create them.
func layoutColumns(hasClaimedAt bool) string {
	cols := "fingerprint,source,level,message,first_seen,last_seen,count"
	if hasClaimedAt {
		cols += ",claimed_at"
	}
	return cols + ",classification,external_id"
}

// Rows are the rows of event_claims in fingerprint order; nil when the
// file holds no such table.
type Rows []Row

// ReadClaims lists every row of event_claims; nil when the file holds no
// such table, as a worker killed before it created it leaves the file.
// Every scenario that inspects the table reads it here.
func ReadClaims(ctx context.Context, st store.Store) (Rows, error) {
	has, err := HasClaimedAt(ctx, st)
	if err != nil {
		return nil, err
	}
	rows := Rows{}
	ok, err := st.ReadTable(ctx, TableClaims, selectRows(has)+" ORDER BY fingerprint", func(scan func(...any) error) error {
		r, err := scanRow(scan, has)
		rows = append(rows, r)
		return err
	})
	if err != nil || !ok {
		return nil, err
	}
	return rows, nil
}

// HasClaimedAt reports whether event_claims has the claimed_at column.
func HasClaimedAt(ctx context.Context, st store.Store) (bool, error) {
	found := false
	_, err := st.ReadTable(ctx, TableClaims, st.Dialect.ColumnsQuery(), func(scan func(...any) error) error {
		var name string
		err := scan(&name)
		found = found || name == "claimed_at"
		return err
	}, TableClaims)
	if err != nil {
		return false, fmt.Errorf("read table info: %w", err)
	}
	return found, nil
}

// Lines renders the rows as explore and durability record a claim file:
// one Line per row, a missing table as an empty one.
func (c Rows) Lines() map[string][]string {
	out := map[string][]string{TableClaims: {}}
	for _, r := range c {
		out[TableClaims] = append(out[TableClaims], r.Cells().Line())
	}
	return out
}

// Cells are the columns of a row a recovery is judged by, as text, NULL
// as "": the form explore and durability record a claim file in.
type Cells struct {
	Fingerprint, Count, ClaimedAt, Classification, ExternalID string
}

// Cells renders the row's judged columns.
func (r Row) Cells() Cells {
	c := Cells{Fingerprint: r.Fingerprint, Count: strconv.FormatInt(r.Count, 10)}
	if r.ClaimedAt != nil {
		c.ClaimedAt = strconv.FormatInt(*r.ClaimedAt, 10)
	}
	if r.Classification != nil {
		c.Classification = *r.Classification
	}
	if r.ExternalID != nil {
		c.ExternalID = *r.ExternalID
	}
	return c
}

// Line joins the cells with "|", one recorded string per row.
func (c Cells) Line() string {
	return strings.Join([]string{c.Fingerprint, c.Count, c.ClaimedAt, c.Classification, c.ExternalID}, "|")
}

// ParseLine reads a recorded Line back; ok is false when it does not have
// the five cells.
func ParseLine(s string) (Cells, bool) {
	f := strings.Split(s, "|")
	if len(f) != 5 {
		return Cells{}, false
	}
	return Cells{f[0], f[1], f[2], f[3], f[4]}, true
}
