package results

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path"
)

// AttachmentsDir holds the files a plan read besides the input file.
const AttachmentsDir = "attachments"

// Attachment is one file a plan read, carried in the folder.
type Attachment struct {
	// Name is the name the plan asked for, as given on the command line
	// or in the input file.
	Name string `json:"name"`
	// File is the copy's path inside the folder.
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	// Carried is set for a file the plans did not read but that lies in
	// or below the folder of one they read, such as a module a handler
	// imports; the run carries it so a reviewer has the program whole.
	Carried bool `json:"carried,omitempty"`
}

// AttachmentFile is where the copy of the i-th attachment named name
// goes: the index keeps two files of one base name apart.
func AttachmentFile(i int, name string) string {
	return path.Join(AttachmentsDir, fmt.Sprintf("%d-%s", i+1, path.Base(name)))
}

// SHA256Hex is the hex SHA-256 of b.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ReadFile reads the folder's copy of the file a plan named, and
// checks it against the hash results.json records.
func (f *Folder) ReadFile(name string) ([]byte, error) {
	if f.Results == nil {
		return nil, fmt.Errorf("%s: no results to name attachments", name)
	}
	for i, a := range f.Results.Attachments {
		if a.Name != name {
			continue
		}
		if a.File != AttachmentFile(i, a.Name) {
			return nil, fmt.Errorf("%s attachments[%d].file is %q, want %q", ResultsFile, i, a.File, AttachmentFile(i, a.Name))
		}
		fh, ok := f.openRegular(a.File, f.lim.ResultsBytes)
		if !ok {
			return nil, fmt.Errorf("%s: the folder's copy %s cannot be read", name, a.File)
		}
		defer fh.Close()
		b, err := io.ReadAll(io.LimitReader(fh, f.lim.ResultsBytes+1))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.File, err)
		}
		if got := SHA256Hex(b); got != a.SHA256 {
			return nil, fmt.Errorf("%s hashes to %s, but %s attachments[%d].sha256 records %s", a.File, got, ResultsFile, i, a.SHA256)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%s: not among the folder's attachments", name)
}
