package main

import "embed"

// shippedPatterns are the article pattern files explore runs, embedded by
// their paths from the module root, as a run records them and as a replay
// names them with --pattern-file.
//
//go:embed testdata/patterns/separate-commit.json testdata/patterns/single-transaction.json testdata/patterns/claim-do-nothing.json testdata/patterns/claim-ttl.json
var shippedPatterns embed.FS
