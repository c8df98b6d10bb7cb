// Package all is the one registry of scenarios, in run order. Adding a
// scenario is one line here.
package all

import (
	"io/fs"

	"idemlab/experiments/batch"
	"idemlab/experiments/claim"
	"idemlab/experiments/durability"
	"idemlab/experiments/explore"
	"idemlab/experiments/pattern"
	"idemlab/experiments/redelivery"
	"idemlab/experiments/scenario"
)

// Scenarios returns the registry. A function, not a variable, so tests can
// build their own registry with a replaced oracle. patterns are the shipped
// pattern files explore runs (explore.New).
func Scenarios(patterns fs.FS) scenario.Registry {
	return scenario.Registry{
		redelivery.New(),
		batch.New(),
		claim.New(),
		// explore and durability are opt-in: they run only when named with
		// --scenario, since they go beyond the articles.
		explore.New(patterns),
		durability.New(),
		// pattern is the user's own pattern file, also opt-in.
		pattern.New(),
	}
}
