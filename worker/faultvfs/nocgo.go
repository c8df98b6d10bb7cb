//go:build !cgo

package faultvfs

import "errors"

// Register fails without cgo: the VFS is C code inside SQLite.
func Register() error { return errors.New("faultvfs: needs cgo") }

// LastError is always nil without cgo.
func LastError() error { return nil }

// ArmSyncCut fails without cgo.
func ArmSyncCut(int, bool, func()) error { return errors.New("faultvfs: needs cgo") }
