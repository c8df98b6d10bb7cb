package powerfs_test

import (
	"testing"

	"idemlab/worker"
	"idemlab/worker/powerfs"
)

// breakKeep names the broken server whose cut keeps everything.
const breakKeep = "powerfs-cut-keeps-all"

// TestMain lets the test binary serve mounts: Start re-executes it as
// "worker powerfs.serve".
func TestMain(m *testing.M) {
	worker.TestMain(m, worker.Breaks{breakKeep: {powerfs.WorkerName: powerfs.BrokenKeepMain}})
}
