package faultvfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// copyWhole makes dst a copy of src, with explicit offsets so neither
// file's position is touched. copy_file_range keeps the bytes in the
// kernel; each syscall counts here, as a sync may run on every commit.
func copyWhole(dst, src *os.File) error {
	st, err := src.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	var roff, woff int64
	for roff < size {
		n, err := unix.CopyFileRange(int(src.Fd()), &roff, int(dst.Fd()), &woff, int(size-roff), 0)
		if err != nil {
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
				return copyPortable(dst, src, size)
			}
			return err
		}
		if n == 0 {
			// The file shrank since the stat; what was copied is all of it.
			break
		}
	}
	return dst.Truncate(woff)
}

// copyRange copies n bytes at off from src to the same offset in dst. A
// small range, the usual one, goes through a buffer: two plain syscalls
// cost less than setting up copy_file_range.
func copyRange(dst, src *os.File, off, n int64) error {
	if n <= smallCopy {
		return copyRangePortable(dst, src, off, n)
	}
	roff, woff := off, off
	for end := off + n; roff < end; {
		c, err := unix.CopyFileRange(int(src.Fd()), &roff, int(dst.Fd()), &woff, int(end-roff), 0)
		if err != nil {
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
				return copyRangePortable(dst, src, roff, end-roff)
			}
			return err
		}
		if c == 0 {
			break
		}
	}
	return nil
}
