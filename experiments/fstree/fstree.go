// Package fstree copies folders of files the harness owns: a throwaway
// cluster's data folder from its template, a durability trial's folder
// around a reader's close. A copy never overwrites a file, keeps each
// entry's permission bits (PostgreSQL refuses a data folder open to
// others) and gives every entry to the owner asked for.
package fstree

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Keep, as both uid and gid, leaves each copied entry to the process
// that copies it.
const Keep = -1

// Copy copies the folder src into dst, which may exist already, entry by
// entry: folders, regular files and symbolic links; anything else is
// refused. A file that exists in dst is an error, never overwritten.
func Copy(src, dst string, uid, gid int) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(to, info.Mode().Perm()); err != nil && !(rel == "." && isDir(to)) {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, to); err != nil {
				return err
			}
			return os.Lchown(to, uid, gid)
		case d.Type().IsRegular():
			if err := CopyFile(p, to, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a file, folder or link", p)
		}
		// Mkdir and OpenFile apply the umask; the bits must be the
		// source's exactly.
		if err := os.Chmod(to, info.Mode().Perm()); err != nil {
			return err
		}
		return os.Chown(to, uid, gid)
	})
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// CopyFiles copies the regular files directly inside src into the folder
// dst, each with mode 0644 (less the umask), but those skip names;
// folders, links and anything else in src are left out.
func CopyFiles(src, dst string, skip func(name string) bool) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || skip(e.Name()) {
			continue
		}
		if err := CopyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// CopyFile copies the regular file src to dst, a new file with the
// permission bits perm (less the umask).
func CopyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
