package protocol

import (
	"errors"
	"fmt"
	"strings"
)

// MaxArgValue is the longest value, in bytes, that a harness passes to a
// child as one argument or one environment variable's value: an id, a
// key, a message, a command's word. The kernel refuses one argument over
// 128 KiB (E2BIG) and any argument with a NUL byte (EINVAL), which would
// surface as the harness's own fault (exit 3) at exec; a value this
// long is a mistake in the input long before that.
const MaxArgValue = 4096

// CheckArg says what makes v unfit to be an argument or an environment
// variable's value, or nil. The caller names the field. (A user's claim
// statement, --claim-sql, has its own check, which allows 32 KiB.)
func CheckArg(v string) error {
	if strings.IndexByte(v, 0) >= 0 {
		return errors.New("contains a NUL byte")
	}
	if len(v) > MaxArgValue {
		return fmt.Errorf("is %d bytes, more than %d", len(v), MaxArgValue)
	}
	return nil
}

// CheckFields checks each value of named, field name then value, with
// CheckArg, and names the first unfit one as section.field.
func CheckFields(section string, named ...string) error {
	for i := 0; i+1 < len(named); i += 2 {
		if err := CheckArg(named[i+1]); err != nil {
			return fmt.Errorf("%s.%s: %w", section, named[i], err)
		}
	}
	return nil
}
