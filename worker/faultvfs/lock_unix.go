//go:build unix

package faultvfs

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock, which the kernel drops when the
// process dies, so a worker killed while holding it blocks no one.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
