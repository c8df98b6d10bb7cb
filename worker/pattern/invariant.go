package pattern

import (
	"context"
	"database/sql"
	"fmt"

	"idemlab/worker/store"
)

// Verdict is one invariant judged on one trial.
type Verdict struct {
	Name string `json:"name"`
	Got  int64  `json:"got"`
	Held bool   `json:"held"`
	// Want reads as "1" or "at most 1".
	Want string `json:"want"`
}

// String reads as "one job: want 1, got 2".
func (v Verdict) String() string {
	return fmt.Sprintf("%s: want %s, got %d", v.Name, v.Want, v.Got)
}

// Judge compares a measured value with the invariant's bound. It is pure:
// the parent measures, and the run and verify both judge through here.
func (iv Invariant) Judge(got int64) Verdict {
	equals, atMost := iv.Equals, iv.AtMost
	if iv.Sends != nil {
		equals, atMost = iv.Sends.Equals, iv.Sends.AtMost
	}
	v := Verdict{Name: iv.Name, Got: got}
	switch {
	case equals != nil:
		v.Want, v.Held = fmt.Sprint(*equals), got == *equals
	case atMost != nil:
		v.Want, v.Held = fmt.Sprintf("at most %d", *atMost), got <= *atMost
	}
	return v
}

// QueryValues runs every query invariant against db for the event, in the
// file's order; a sends invariant takes its value from the receiver's log
// instead and gets no entry here. The first column of the first row is
// the value; no rows count as 0.
func QueryValues(ctx context.Context, st store.Store, f File, eventID string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, iv := range f.Invariants {
		if iv.Query == "" {
			continue
		}
		var v sql.NullInt64
		q, args := st.Dialect.BindNamed(iv.Query, []sql.NamedArg{sql.Named("event_id", eventID)})
		err := st.DB.QueryRowContext(ctx, q, args...).Scan(&v)
		if err != nil && err != sql.ErrNoRows {
			return out, fmt.Errorf("invariant %q: %w", iv.Name, err)
		}
		out[iv.Name] = v.Int64
	}
	return out, nil
}
