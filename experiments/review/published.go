package review

import (
	"embed"
	"encoding/json"
	"fmt"
)

// The articles' published figures, transcribed by hand from the articles.
// They are data to compare with, never the expectation a run is checked
// against: that comes from each scenario's oracle.
//
//go:embed testdata/published/*.json
var publishedFS embed.FS

// Published reads one article's data file, e.g. "000.json".
func Published(name string) ([]byte, error) {
	b, err := publishedFS.ReadFile("testdata/published/" + name)
	if err != nil {
		return nil, fmt.Errorf("read published data %s: %w", name, err)
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("read published data %s: not valid JSON", name)
	}
	return b, nil
}
