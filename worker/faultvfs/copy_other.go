//go:build !linux

package faultvfs

import "os"

// copyWhole makes dst a copy of src without touching either position.
func copyWhole(dst, src *os.File) error {
	st, err := src.Stat()
	if err != nil {
		return err
	}
	return copyPortable(dst, src, st.Size())
}

// copyRange copies n bytes at off from src to the same offset in dst.
func copyRange(dst, src *os.File, off, n int64) error {
	return copyRangePortable(dst, src, off, n)
}
