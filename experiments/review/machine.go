package review

import (
	"context"
	"fmt"

	"idemlab/experiments/errclass"
	"idemlab/experiments/results"
	"idemlab/experiments/scenario"
	"idemlab/experiments/suite"
)

// CheckRerunMachine says, before anything runs, whether verify --rerun of
// dir can run its scenarios again on this machine: where this machine's
// FUSE differs from the folder's record and a scenario's plan depends on
// it (a program's power class, the fs layer), the rerun would run other
// conditions than the run did, so it is refused in one line that says
// what the machine lacks or has. Plain verify never calls this: it plans
// with the record alone.
func CheckRerunMachine(ctx context.Context, dir string, f *results.Folder, reg scenario.Registry) error {
	if f == nil || f.Results == nil || f.Input == nil {
		return nil
	}
	rec, here := suite.RecordedMachine(f.Results.Environment), suite.ProbeMachine()
	if rec == here {
		return nil
	}
	in, err := suite.ParseInput(results.InputCopyFile, f.Input, reg)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errclass.ErrFindings, dir, err)
	}
	for _, rs := range f.Results.Scenarios {
		s, ok := reg.Lookup(rs.Name)
		if !ok {
			continue
		}
		plans, err := suite.PlanAll(ctx, []scenario.Scenario{s}, in, rs.Overrides, f, here)
		if err == nil && len(derivedDiffs(rs.Settings, scenario.Marshal(plans[0].Plan.Settings()))) == 0 {
			continue
		}
		if here.FUSE != "" {
			return fmt.Errorf("%w: verify --rerun %s: the folder ran %s on a machine with FUSE, and its rerun needs it, but this machine has none: %s", errclass.ErrUsage, dir, rs.Name, here.FUSE)
		}
		return fmt.Errorf("%w: verify --rerun %s: the folder ran %s on a machine without FUSE (%s), and this machine has it, so its rerun would plan other conditions; rerun it on a machine without FUSE", errclass.ErrUsage, dir, rs.Name, rec.FUSE)
	}
	return nil
}
