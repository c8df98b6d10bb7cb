package scenario

import (
	"context"
	"encoding/json"

	"idemlab/experiments/backend"
)

// Files reads the files a plan names besides the input file, such as a
// user's pattern file. In a run they come from disk and are carried into
// the results folder; in verify they come from the folder's copies, so a
// folder handed over alone still derives its settings again.
type Files interface {
	ReadFile(name string) ([]byte, error)
}

// FilePlanner is implemented by scenarios whose plan reads such files.
// The suite calls PlanFiles instead of Plan for them.
type FilePlanner interface {
	PlanFiles(section json.RawMessage, overrides map[string]string, files Files) (Plan, error)
}

// FilePlannerOn is implemented by scenarios whose plan reads such files
// and that also run on a backend other than SQLite. The suite calls
// PlanFilesOn for them on that backend.
type FilePlannerOn interface {
	PlanFilesOn(b backend.Spec, section json.RawMessage, overrides map[string]string, files Files) (Plan, error)
}

// PlanContext is the context a plan's checks run under: the run's, when
// files carries it (a Context method), so a signal stops a statement
// that never ends at plan time, and context.Background otherwise.
func PlanContext(files Files) context.Context {
	if c, ok := files.(interface{ Context() context.Context }); ok && c.Context() != nil {
		return c.Context()
	}
	return context.Background()
}
