package review

import (
	"fmt"
	"strings"

	"idemlab/experiments/backend"
	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/suite"
)

// OnPostgres names the scenarios of a folder that ran on PostgreSQL, as
// the folder's own input copy and each scenario's recorded overrides
// resolve the backend, the way the run resolved it. A folder made with
// --dsn records no more than one made on a throwaway cluster, since where
// the server ran changes no result.
func OnPostgres(f *results.Folder, reg scenario.Registry) ([]string, error) {
	if f == nil || f.Results == nil || f.Input == nil {
		return nil, nil
	}
	in, err := suite.ParseInput(results.InputCopyFile, f.Input, reg)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, rs := range f.Results.Scenarios {
		bflags, _ := backend.Split(rs.Overrides)
		spec, err := backend.Resolve(in.Backend, bflags)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", rs.Name, err)
		}
		if !spec.IsSQLite() {
			names = append(names, rs.Name)
		}
	}
	return names, nil
}

// CheckRerunServer says, before anything runs, whether verify --rerun of
// dir can run its PostgreSQL scenarios (pg) again: on the server dsn
// names, or on a throwaway cluster, for which find must find the server's
// binaries. It refuses --dsn for a folder that has no PostgreSQL scenario.
func CheckRerunServer(dir string, pg []string, dsn string, find func() (string, error)) error {
	switch {
	case len(pg) == 0 && dsn != "":
		return fmt.Errorf("%w: --%s: %s was made on SQLite, which needs no server; leave --%s out", errclass.ErrUsage, backend.FlagDSN, dir, backend.FlagDSN)
	case len(pg) == 0 || dsn != "":
		return nil
	}
	if find == nil {
		find = backend.FindBinaries
	}
	if _, err := find(); err != nil {
		return fmt.Errorf("%w: verify --rerun %s: the folder ran %s on PostgreSQL, and its rerun needs a server, but the server's binaries are not installed and no --%s was given: install the package %s (apt-get install %s), or pass --%s with an existing server's connection string",
			errclass.ErrUsage, dir, strings.Join(pg, ", "), backend.FlagDSN, backend.Package, backend.Package, backend.FlagDSN)
	}
	return nil
}
