package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// DecodeSection strictly decodes a scenario's section of input.json into v.
// Errors name the section and the field, e.g. "batch.items: got JSON
// string, want int".
func DecodeSection(name string, raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return fmt.Errorf("%s: section is missing; add a %q object to the input file", name, name)
	}
	if err := DecodeStrict(raw, v); err != nil {
		return fmt.Errorf("%s.%w", name, err)
	}
	return nil
}

// DecodeStrict decodes one JSON value, refusing unknown fields and
// trailing data, and describes errors in one line that names the field.
func DecodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeJSONError(b, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func describeJSONError(b []byte, err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "(value)"
		}
		return fmt.Errorf("%s: got JSON %s, want %s", field, te.Value, te.Type)
	case errors.As(err, &se):
		line := 1 + bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n"))
		return fmt.Errorf("(line %d): malformed JSON: %v", line, se)
	case errors.Is(err, io.EOF):
		return errors.New("(value): empty, want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("(value): malformed JSON: unexpected end")
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		return fmt.Errorf("%s: unknown field; check its spelling against \"idemlab help input\"", strings.Trim(f, `"`))
	}
	return errors.New(msg)
}

// IntFlag reads an integer override within [lo, hi]. ok is false when the
// flag was not given.
func IntFlag(overrides map[string]string, name string, lo, hi int) (v int, ok bool, err error) {
	s, ok := overrides[name]
	if !ok {
		return 0, false, nil
	}
	v, err = strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, true, fmt.Errorf("--%s %q: want a whole number from %d to %d", name, s, lo, hi)
	}
	if v < lo || v > hi {
		return 0, true, fmt.Errorf("--%s %d: want %d to %d", name, v, lo, hi)
	}
	return v, true, nil
}

// BoolFlag reads a true/false override. ok is false when the flag was not
// given.
func BoolFlag(overrides map[string]string, name string) (v bool, ok bool, err error) {
	s, ok := overrides[name]
	if !ok {
		return false, false, nil
	}
	v, err = strconv.ParseBool(s)
	if err != nil {
		return false, true, fmt.Errorf("--%s %q: want true or false, as --%s=false", name, s, name)
	}
	return v, true, nil
}
