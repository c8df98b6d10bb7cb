package explore

import (
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"testing"

	"idemlab/experiments/subject"
)

// The subject's words the tests use.
type (
	State       = subject.State
	Step        = subject.Step
	Observation = subject.Observation
	Files       = subject.Files
)

const (
	StepDelivery  = subject.StepDelivery
	StepRecovery  = subject.StepRecovery
	StepSuccessor = subject.StepSuccessor
)

func mustJSON(tb testing.TB, v any) json.RawMessage {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// sourceArticles are the article pattern files of the source tree, by
// their paths from the module root, as the binary embeds them.
func sourceArticles(tb testing.TB) fs.FS {
	tb.Helper()
	fsys := os.DirFS("../..")
	for _, n := range Articles {
		if _, err := fs.Stat(fsys, path.Join(ArticleDir, n+".json")); err != nil {
			tb.Fatalf("article pattern %s: %v", n, err)
		}
	}
	return fsys
}
