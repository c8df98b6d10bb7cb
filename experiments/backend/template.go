package backend

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"idemlab/experiments/fstree"
	"os"
	"path/filepath"
	"strings"
)

// initdb's output is the same every time for the same binaries, OS user
// and options, and initdb is most of a throwaway cluster's start (about
// 0.9 s of 1.0 s on a quiet 2-core machine). So the first start keeps a
// copy of that output, a template, in the user's cache folder, and later
// starts copy the template into their own temp folder instead of running
// initdb. The template is never started itself: every run still gets a
// cluster of its own, which it stops and removes.

// NoTemplateEnv, set to any value, makes every start run initdb and keep
// no template: a start "from nothing", as BenchmarkClusterStart measures
// it cold.
const NoTemplateEnv = "IDEMLAB_PG_NO_TEMPLATE"

// templateComplete is the file a template holds once it is whole; a
// folder without it is ignored.
const templateComplete = "idemlab-template-complete"

// templateDir is where the template for these binaries, this OS user and
// these initdb arguments lives; "" when there is no cache folder or the
// templates are turned off. The key changes with the binaries (the size
// and time of initdb and postgres), so an upgrade makes a new template.
func templateDir(bin, runAs string, initArgs []string) string {
	if _, off := os.LookupEnv(NoTemplateEnv); off {
		return ""
	}
	root, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%s\x00", bin, runAs, os.Getuid(), strings.Join(initArgs, "\x00"))
	for _, b := range []string{"initdb", "postgres"} {
		st, err := os.Stat(filepath.Join(bin, b))
		if err != nil {
			return ""
		}
		fmt.Fprintf(h, "%s %d %d\x00", b, st.Size(), st.ModTime().UnixNano())
	}
	return filepath.Join(root, "idemlab", "pg-templates", hex.EncodeToString(h.Sum(nil))[:16])
}

// fromTemplate copies the template at tpl into data, owned by uid and
// gid; ok is false when there is no whole template there.
func fromTemplate(tpl, data string, uid, gid int) (ok bool, err error) {
	if tpl == "" {
		return false, nil
	}
	if _, err := os.Stat(filepath.Join(tpl, templateComplete)); err != nil {
		return false, nil
	}
	if err := fstree.Copy(filepath.Join(tpl, "data"), data, uid, gid); err != nil {
		return false, errors.Join(fmt.Errorf("copy the template %s: %w", tpl, err), os.RemoveAll(data))
	}
	return true, nil
}

// saveTemplate keeps a copy of initdb's fresh output at tpl. It is made
// under a temp name beside tpl and renamed into place whole, so a run
// that starts meanwhile, or a second run saving the same template, never
// sees half of one.
func saveTemplate(data, tpl string) error {
	if tpl == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(tpl), 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(tpl), ".saving-")
	if err != nil {
		return err
	}
	err = fstree.Copy(data, filepath.Join(tmp, "data"), os.Getuid(), os.Getgid())
	if err == nil {
		err = os.WriteFile(filepath.Join(tmp, templateComplete), nil, 0o600)
	}
	if err == nil {
		if err = os.Rename(tmp, tpl); err != nil && templateExists(tpl) {
			// Another run saved it first: keep theirs.
			return os.RemoveAll(tmp)
		}
	}
	if err != nil {
		return errors.Join(fmt.Errorf("keep a template of the cluster at %s: %w", tpl, err), os.RemoveAll(tmp))
	}
	return nil
}

func templateExists(tpl string) bool {
	_, err := os.Stat(filepath.Join(tpl, templateComplete))
	return err == nil
}
