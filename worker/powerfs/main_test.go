package powerfs_test

import (
	"testing"

	"idemlab/worker"
	"idemlab/worker/powerfs"
)

// breakKeep names the broken server whose cut keeps everything;
// breakSelfHang the one that leaves a request to its own mount unanswered,
// and breakSelfHangSilent the same that never says "mounted".
const (
	breakKeep           = "powerfs-cut-keeps-all"
	breakSelfHang       = "powerfs-self-hang"
	breakSelfHangSilent = "powerfs-self-hang-silent"
)

// TestMain lets the test binary serve mounts: Start re-executes it as
// "worker powerfs.serve".
func TestMain(m *testing.M) {
	worker.TestMain(m, worker.Breaks{breakKeep: {powerfs.WorkerName: powerfs.BrokenKeepMain},
		breakSelfHang:       {powerfs.WorkerName: powerfs.SelfHangMain(false)},
		breakSelfHangSilent: {powerfs.WorkerName: powerfs.SelfHangMain(true)}})
}
