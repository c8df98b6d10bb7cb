package batch

import (
	"context"

	"idemlab/worker/wire"
)

// Lookup is the parent's question to the receiver about one held send, as
// it records it: was the send of Key accepted, and with which receipt.
type Lookup struct {
	Key     string `json:"key"`
	Found   bool   `json:"found"`
	Receipt string `json:"receipt,omitempty"`
}

// Resolve is the resolve this answer calls for: delivered when the
// receiver holds the send, with its receipt.
func (l Lookup) Resolve(db string, k wire.Key) ResolveArgs {
	return ResolveArgs{DB: db, Key: k, Delivered: l.Found, Receipt: l.Receipt}
}

// Ask looks k up at the receiver through c and returns the answer as
// recorded.
func Ask(ctx context.Context, c *wire.Client, k wire.Key) (Lookup, error) {
	rc, found, err := c.Lookup(ctx, k)
	return Lookup{Key: k.String(), Found: found, Receipt: rc}, err
}
