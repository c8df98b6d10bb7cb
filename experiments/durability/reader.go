package durability

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"idemlab/experiments/fstree"
	"idemlab/experiments/owner"
	"idemlab/worker/faultvfs"
	"idemlab/worker/sqlitedb"
)

// heldReader is the parent's read connection of a PointACKReader trial.
type heldReader struct {
	t  *trial
	db *sql.DB
}

// holdReader opens a read connection to the trial's file through the fault
// VFS, as a second process of the service would, and reads through it: in
// WAL mode an open connection that has read keeps a shared lock on the
// database, so the worker's close cannot take the exclusive lock it needs
// to checkpoint and delete the WAL. Through the VFS, the WAL file it
// creates is logged like the worker's own.
func (t *trial) holdReader() (*heldReader, error) {
	o := DBOptions(t.c, t.db)
	if t.fs != nil {
		// The parent opens a file on the mount: it does not serve it, so
		// nothing deadlocks (the server is a process of its own).
		o.Path = filepath.Join(t.fs.Mount(), filepath.Base(t.db))
	}
	o.VFS = faultvfs.Name
	db, _, err := sqlitedb.Open(t.ctx, o)
	if err != nil {
		return nil, err
	}
	var n int
	if err := db.QueryRowContext(t.ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		db.Close()
		return nil, err
	}
	return &heldReader{t: t, db: db}, nil
}

// release lets the reader go once the worker has exited, without its close
// changing what the cut finds: the reader's close is now the last one, so
// it would checkpoint and delete the WAL, which the power cut at that
// instant never lets happen. The folder, the VFS's sidecar with it, is
// copied first, the reader closed, and the copy put back.
func (r *heldReader) release() error {
	snap, err := owner.MkdirTemp(r.t.env.TempDir, ScratchPrefix+"held-")
	if err != nil {
		r.db.Close()
		return err
	}
	defer owner.RemoveAll(snap)
	if err := fstree.Copy(r.t.dir, snap, fstree.Keep, fstree.Keep); err != nil {
		r.db.Close()
		return fmt.Errorf("copy the folder: %w", err)
	}
	cerr := r.db.Close()
	entries, err := os.ReadDir(r.t.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(r.t.dir, e.Name())); err != nil {
			return err
		}
	}
	return errors.Join(cerr, fstree.Copy(snap, r.t.dir, fstree.Keep, fstree.Keep))
}
