package patternfile

import (
	"testing"

	"idemlab/worker/wire"
)

// TestDeliverySender: a trial's first deliveries (one, or each racer) are
// its first processes, the redeliveries follow them; every delivery's
// receiver URL carries its token, and a folder of format 4 none.
func TestDeliverySender(t *testing.T) {
	const base = "http://127.0.0.1:9"
	tests := []struct {
		name string
		o    Observation
		d    Delivery
		want string
	}{
		{"first delivery", Observation{Senders: true}, Delivery{Number: 1}, "p1"},
		{"its redelivery", Observation{Senders: true}, Delivery{Number: 3}, "p3"},
		{"third racer", Observation{Senders: true, Racers: 4}, Delivery{Number: 1, Worker: 2}, "p3"},
		{"the race's recovery", Observation{Senders: true, Racers: 4}, Delivery{Number: 2}, "p5"},
		{"format 4", Observation{}, Delivery{Number: 2}, ""},
	}
	for _, tt := range tests {
		tt.o.Receiver = base
		if got := DeliverySender(tt.o, tt.d); got != tt.want {
			t.Errorf("%s: DeliverySender = %q, want %q", tt.name, got, tt.want)
		}
		want := base
		if tt.want != "" {
			want = wire.SenderURL(base, tt.want)
		}
		if got := ReceiverOf(tt.o, tt.d); got != want {
			t.Errorf("%s: ReceiverOf = %q, want %q", tt.name, got, want)
		}
		if b, tok := wire.SenderOf(ReceiverOf(tt.o, tt.d)); b != base || tok != tt.want {
			t.Errorf("%s: SenderOf gives %q, %q", tt.name, b, tok)
		}
	}
}
