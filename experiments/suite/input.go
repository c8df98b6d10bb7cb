package suite

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"idemlab/experiments/batch"
	"idemlab/experiments/claim"
	"idemlab/experiments/harness"
	"idemlab/experiments/redelivery"
)

// Input is input.json: one section per scenario. Unknown fields are refused
// everywhere, so a typo fails loudly instead of falling back to a default; a
// section is required only when its scenario is chosen.
type Input struct {
	Redelivery *redelivery.Input `json:"redelivery"`
	Batch      *batch.Input      `json:"batch"`
	Claim      *claim.Input      `json:"claim"`
}

// LoadInput reads, strictly decodes and validates the input file for the
// chosen scenarios. Every error wraps harness.ErrUsage and names the path
// and the field.
func LoadInput(path string, chosen []scenario) (Input, harness.Inputs, error) {
	var in Input
	b, err := os.ReadFile(path)
	if err != nil {
		return in, harness.Inputs{}, fmt.Errorf("%w: --input %s: %v", harness.ErrUsage, path, errors.Unwrap(err))
	}
	sum := sha256.Sum256(b)
	meta := harness.Inputs{Path: path, SHA256: hex.EncodeToString(sum[:])}
	if err := decodeStrict(b, &in); err != nil {
		return in, meta, fmt.Errorf("%w: %s: %v", harness.ErrUsage, path, err)
	}
	for _, sc := range chosen {
		if err := sc.check(in); err != nil {
			return in, meta, fmt.Errorf("%w: %s: %v", harness.ErrUsage, path, err)
		}
	}
	return in, meta, nil
}

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeJSONError(b, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// describeJSONError turns encoding/json's errors into one line that names
// the field or the line.
func describeJSONError(b []byte, err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "(top level)"
		}
		return fmt.Errorf("%s: got JSON %s, want %s", field, te.Value, te.Type)
	case errors.As(err, &se):
		line := 1 + bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n"))
		return fmt.Errorf("line %d: malformed JSON: %v", line, se)
	case errors.Is(err, io.EOF):
		return errors.New("empty file, want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed JSON: unexpected end of file")
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

// section validates one scenario's section, which must be present.
func section[T interface{ Validate() error }](name string, sec *T) error {
	if sec == nil {
		return fmt.Errorf("%s: section is missing", name)
	}
	return (*sec).Validate()
}
