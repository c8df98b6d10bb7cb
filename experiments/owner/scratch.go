package owner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// A scratch folder's owner record is a file beside it, the folder's path
// and recordExt, so nothing inside the folder changes: a trial's
// database, or the backing tree a power-loss mount shows, holds only what
// the trial wrote.
const recordExt = ".owner"

// Me is this process as an owner, read once.
var Me = sync.OnceValues(Self)

// MkdirTemp makes a scratch folder under tmp, as os.MkdirTemp does, and
// records this process as its owner beside it, so that SweepTemp removes
// it once this process is gone without removing it (SIGKILL).
func MkdirTemp(tmp, prefix string) (string, error) {
	self, err := Me()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(tmp, prefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(dir+recordExt, []byte(self.String()+"\n"), 0o644); err != nil {
		return "", errors.Join(fmt.Errorf("record the owner of %s: %w", dir, err), os.Remove(dir))
	}
	return dir, nil
}

// Forget removes a scratch folder's owner record, once the folder is
// gone; a folder made by os.MkdirTemp has none, and that is no error.
func Forget(dir string) error {
	if err := os.Remove(dir + recordExt); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// SweepTemp removes the scratch folders under tmp named prefix… for one of
// prefixes whose owner record names a process that is gone (Owner.Gone),
// and their records, and returns one line per folder saying so. A folder
// without a record (one being made this moment, or of a version that
// recorded none), with an owner that runs, or with anything mounted at or
// under it, is left alone: never by age.
func SweepTemp(tmp string, prefixes ...string) []string {
	self, err := Me()
	if err != nil {
		return []string{fmt.Sprintf("could not sweep scratch folders: %v", err)}
	}
	if tmp == "" {
		tmp = os.TempDir()
	}
	var lines []string
	for _, prefix := range prefixes {
		records, _ := filepath.Glob(filepath.Join(tmp, prefix+"*"+recordExt))
		for _, rec := range records {
			if line := sweepOne(strings.TrimSuffix(rec, recordExt), rec, self); line != "" {
				lines = append(lines, line)
			}
		}
	}
	return lines
}

// sweepOne removes dir and its record rec if the record's owner is gone
// and nothing is mounted there; "" when it is left alone.
func sweepOne(dir, rec string, self Owner) string {
	b, err := os.ReadFile(rec)
	if err != nil {
		return ""
	}
	o, err := Parse(strings.TrimSpace(string(b)))
	if err != nil || !o.Gone(self) {
		return ""
	}
	if m := mountedUnder(dir); m != "" {
		return fmt.Sprintf("left %s, a scratch folder of a run that is gone (%s): %s is still mounted", dir, o, m)
	}
	if err := errors.Join(os.RemoveAll(dir), os.Remove(rec)); err != nil {
		return fmt.Sprintf("could not remove %s, a scratch folder of a run that is gone (%s): %v", dir, o, err)
	}
	return fmt.Sprintf("removed %s, a scratch folder of a run that is gone (%s)", dir, o)
}

// mountedUnder names a mount point at or under dir, as
// /proc/self/mountinfo lists them (any filesystem), or "".
func mountedUnder(dir string) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "/proc/self/mountinfo unreadable"
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		m := strings.ReplaceAll(f[4], `\040`, " ")
		if m == dir || strings.HasPrefix(m, dir+"/") {
			return m
		}
	}
	return ""
}

// RemoveAll removes a scratch folder and its owner record.
func RemoveAll(dir string) error { return errors.Join(os.RemoveAll(dir), Forget(dir)) }
