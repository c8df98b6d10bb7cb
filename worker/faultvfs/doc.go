// Package faultvfs is a SQLite VFS that models power loss, so idemlab can
// ask what a committed transaction is worth when the machine, not just the
// process, goes down.
package faultvfs

// Name is the name the VFS registers under; pass it as sqlitedb.Options.VFS.
const Name = "idemlab-faultvfs"
