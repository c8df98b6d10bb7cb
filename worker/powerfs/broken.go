package powerfs

import (
	"encoding/json"
	"os"
	"path/filepath"

	"idemlab/worker/protocol"
)

// BrokenKeepMain is a test's broken server (worker.Breaks), for the tests
// of this package and of those that run a server on a mount: its cut
// plans as asked but rebuilds nothing, so the backing folder keeps
// everything, even under drop.
func BrokenKeepMain(call *protocol.Call) int {
	recoverCut = func(backing, store string, p Params) (Outcome, error) {
		log, err := ReadLogFile(store)
		if err != nil {
			return Outcome{}, err
		}
		o, err := Plan(log, p)
		if err != nil {
			return o, err
		}
		b, _ := json.Marshal(o)
		return o, os.WriteFile(filepath.Join(store, OutcomeName), b, 0o644)
	}
	return Main(call)
}
