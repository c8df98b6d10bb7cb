package subject

import (
	"testing"

	"idemlab/worker/wire"
)

// TestParseSendRows: a row has six fields (format 4) or seven, the last a
// sender that is never empty.
func TestParseSendRows(t *testing.T) {
	tests := []struct {
		row    string
		sender string
		ok     bool
	}{
		{"1|item-001|notify_external|accepted|0|rc|p1", "p1", true},
		{"1|item-001|notify_external|accepted|0|rc|unknown", wire.SenderUnknown, true},
		{"1|item-001|notify_external|accepted|0|rc", "", true},
		{"1|item-001|notify_external|accepted|0|rc|", "", false},
		{"1|item-001|notify_external|accepted|0", "", false},
	}
	for _, tt := range tests {
		x, ok := ParseSend(tt.row)
		if ok != tt.ok || (ok && x.Sender != tt.sender) {
			t.Errorf("ParseSend(%q) = %+v, %v; want sender %q, %v", tt.row, x, ok, tt.sender, tt.ok)
		}
	}
}
