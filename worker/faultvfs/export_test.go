package faultvfs

// Copied returns the bytes this process has copied into images so far.
func Copied() int64 { return copied.Load() }
