//go:build !unix

package faultvfs

import "os"

// lockFile is a no-op where flock does not exist: there the sidecar is safe
// only for one process at a time, which the in-process mutex covers.
func lockFile(*os.File) error { return nil }

func unlockFile(*os.File) {}
