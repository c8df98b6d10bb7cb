package scenario

import "fmt"

// Files reads the files a plan names besides the input file, such as a
// user's pattern file. In a run they come from disk and are carried into
// the results folder; in verify they come from the folder's copies, so a
// folder handed over alone still derives its settings again.
type Files interface {
	ReadFile(name string) ([]byte, error)
}

// noFiles is the Files of a request that gives none.
type noFiles struct{}

func (noFiles) ReadFile(name string) ([]byte, error) {
	return nil, fmt.Errorf("%s: this plan was given no files to read", name)
}
