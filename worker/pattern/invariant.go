package pattern

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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

// JudgeValue judges what the parent read of a query invariant: an error,
// naming the invariant and what came back, when the query did not return
// one row of one integer, else the verdict on that integer.
func (iv Invariant) JudgeValue(v Value) (Verdict, error) {
	n, err := v.Int()
	if err != nil {
		return Verdict{}, fmt.Errorf("invariant '%s' %w", iv.Name, err)
	}
	return iv.Judge(n), nil
}

// Value is what the parent read of one query invariant, as it came back:
// how many rows and columns, and of the first row's first column its type,
// whether it was NULL and its text. The reading decides nothing; Int says
// whether it is the one integer an invariant returns.
type Value struct {
	Rows    int `json:"rows"`
	Columns int `json:"columns"`
	// Type is the column's type: the server's name on PostgreSQL (int8,
	// numeric, text, bool, …), the value's storage class on SQLite
	// (integer, real, text, blob), whose columns have no fixed type.
	Type string `json:"type,omitempty"`
	Null bool   `json:"null,omitempty"`
	// Text is the value written out, cut at MaxValueText bytes.
	Text string `json:"text,omitempty"`
	// Error is the database's message where the query failed as it ran
	// (an integer overflow in a sum): the user's SQL, not the harness.
	Error string `json:"error,omitempty"`
}

// MaxValueText bounds the text of a value kept in the record.
const MaxValueText = 200

// IntegerTypes are the column types read as an integer; numeric (what
// PostgreSQL's sum() returns) only where its value is a whole number.
var IntegerTypes = []string{"integer", "int2", "int4", "int8", TypeNumeric}

// TypeNumeric is PostgreSQL's arbitrary-precision type.
const TypeNumeric = "numeric"

// IntValue is the reading of a query that returned the integer n, the
// only thing a folder of format 4 or older recorded.
func IntValue(n int64) Value {
	return Value{Rows: 1, Columns: 1, Type: "integer", Text: strconv.FormatInt(n, 10)}
}

// Int is the integer the query returned, or an error saying what came
// back instead: no row, several rows, several columns, NULL, or a value
// that is not an integer.
func (v Value) Int() (int64, error) {
	switch {
	case v.Error != "":
		return 0, fmt.Errorf("failed as it ran: %s", v.Error)
	case v.Columns != 1:
		return 0, fmt.Errorf("returned %d columns; an invariant returns one integer", v.Columns)
	case v.Rows == 0:
		return 0, errors.New("returned no row; an invariant returns one row (write count(*) for a count)")
	case v.Rows > 1:
		return 0, fmt.Errorf("returned %d rows; an invariant returns one row", v.Rows)
	case v.Null:
		return 0, errors.New("returned NULL; an invariant returns an integer (wrap a sum in coalesce(…, 0) if none means 0)")
	case !slices.Contains(IntegerTypes, v.Type):
		return 0, fmt.Errorf("returned %q, not an integer (type %s)", v.Text, v.Type)
	}
	if v.Type == TypeNumeric {
		r, ok := new(big.Rat).SetString(v.Text)
		if !ok || !r.IsInt() || !r.Num().IsInt64() {
			return 0, fmt.Errorf("returned %s, not an integer (type numeric)", v.Text)
		}
		return r.Num().Int64(), nil
	}
	n, err := strconv.ParseInt(v.Text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("returned %q, not an integer (type %s)", v.Text, v.Type)
	}
	return n, nil
}

// UnmarshalJSON reads a value as recorded, and a bare integer as a folder
// of format 4 or older recorded it (where no row and NULL counted as 0).
func (v *Value) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] != '{' {
		var n int64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("an invariant's value is an object or, before format 5, an integer: %w", err)
		}
		*v = IntValue(n)
		return nil
	}
	type plain Value
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*v = Value(p)
	return nil
}

// QueryValues runs every query invariant against st for the event, in the
// file's order, and records what came back, a query's error included; a
// sends invariant takes its value from the receiver's log instead and gets
// no entry here. Only the run's end (ctx done) is an error.
func QueryValues(ctx context.Context, st store.Store, f File, eventID string) (map[string]Value, error) {
	out := map[string]Value{}
	for _, iv := range f.Invariants {
		if iv.Query == "" {
			continue
		}
		q, args := st.Dialect.BindNamed(iv.Query, []sql.NamedArg{sql.Named("event_id", eventID)})
		v, err := readValue(ctx, st, q, args)
		if err != nil && ctx.Err() != nil {
			return out, fmt.Errorf("invariant %q: %w", iv.Name, err)
		}
		if err != nil {
			v = Value{Error: cut(err.Error())}
		}
		out[iv.Name] = v
	}
	return out, nil
}

func readValue(ctx context.Context, st store.Store, q string, args []any) (Value, error) {
	var v Value
	rows, err := st.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return v, err
	}
	defer rows.Close()
	cols, err := rows.ColumnTypes()
	if err != nil {
		return v, err
	}
	v.Columns = len(cols)
	for rows.Next() {
		if v.Rows++; v.Rows > 1 || len(cols) == 0 {
			continue
		}
		dest := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range dest {
			ptrs[i] = &dest[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return v, err
		}
		v.Type, v.Text = describe(dest[0])
		v.Null = dest[0] == nil
		if st.Dialect.Name() == store.BackendPostgres {
			v.Type = strings.ToLower(cols[0].DatabaseTypeName())
		}
	}
	if err := rows.Err(); err != nil {
		return v, err
	}
	return v, rows.Close()
}

// describe names a driver value's type as SQLite's storage classes do, and
// writes it out.
func describe(x any) (typ, text string) {
	switch x := x.(type) {
	case nil:
		return "null", ""
	case int64:
		return "integer", strconv.FormatInt(x, 10)
	case float64:
		return "real", strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return "text", cut(x)
	case []byte:
		return "blob", cut(fmt.Sprintf("x'%x'", x))
	case bool:
		return "boolean", strconv.FormatBool(x)
	case time.Time:
		return "datetime", x.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%T", x), cut(fmt.Sprint(x))
}

// cut makes s valid UTF-8, as the record keeps it, and cuts it at
// MaxValueText bytes.
func cut(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= MaxValueText {
		return s
	}
	s = s[:MaxValueText]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
