package harness

import (
	"encoding/json"
	"fmt"

	"idemlab/worker/protocol"
)

// DecodeResult decodes a worker's result payload strictly into v.
func DecodeResult(rep protocol.Report, v any) error {
	if len(rep.Result) == 0 {
		return fmt.Errorf("worker %s reported no result", rep.Worker)
	}
	if err := json.Unmarshal(rep.Result, v); err != nil {
		return fmt.Errorf("decode result of worker %s: %w", rep.Worker, err)
	}
	return nil
}

// Mark renders a pass flag for the plain-text tables.
func Mark(pass bool) string {
	if pass {
		return "✓"
	}
	return "✗"
}
