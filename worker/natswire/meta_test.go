package natswire_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/natswire"
)

// TestParseMeta reads both ack subject forms, written out by hand from the
// server's templates, and refuses what is not one.
func TestParseMeta(t *testing.T) {
	want := natswire.Meta{Stream: "S", Consumer: "C", NumDelivered: 2, StreamSeq: 7, ConsumerSeq: 9, NumPending: 4}
	tests := []struct {
		reply string
		want  natswire.Meta
		bad   bool
	}{
		{reply: "$JS.ACK.S.C.2.7.9.1700000000.4", want: want},
		{reply: "$JS.ACK._.HASH.S.C.2.7.9.1700000000.4", want: want},
		{reply: "$JS.ACK._.HASH.S.C.2.7.9.1700000000.4.tok", want: want},
		{reply: "$JS.ACK.S.C.x.7.9.1.4", bad: true},
		{reply: "$JS.ACK.S.C.2.7", bad: true},
		{reply: "_INBOX.a.b.c.d.e.f.g.h", bad: true},
		{reply: "$JS.ACK.a.b.S.C.2.7.9.1", bad: true},
	}
	for _, tt := range tests {
		got, err := natswire.ParseMeta(tt.reply)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseMeta(%q) = %+v, want an error", tt.reply, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseMeta(%q): %v", tt.reply, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseMeta(%q) (-want +got):\n%s", tt.reply, diff)
		}
	}
}
