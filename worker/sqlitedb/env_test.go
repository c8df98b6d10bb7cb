package sqlitedb

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"idemlab/worker/faultvfs"
	"idemlab/worker/protocol"
)

// TestFromEnv checks that unset variables keep a worker's defaults and
// that a misspelt value is refused rather than silently ignored.
func TestFromEnv(t *testing.T) {
	def := Options{Path: "x", JournalMode: "WAL", Synchronous: "NORMAL"}
	tests := []struct {
		name    string
		env     map[string]string
		want    Options
		wantErr string
	}{
		{"defaults kept", nil, def, ""},
		{"all set", map[string]string{protocol.EnvVFS: protocol.VFSFault, protocol.EnvJournalMode: "DELETE", protocol.EnvSynchronous: "EXTRA"},
			Options{Path: "x", VFS: faultvfs.Name, JournalMode: "DELETE", Synchronous: "EXTRA"}, ""},
		{"bad mode", map[string]string{protocol.EnvJournalMode: "wal"}, def, protocol.EnvJournalMode},
		{"bad sync", map[string]string{protocol.EnvSynchronous: "2"}, def, protocol.EnvSynchronous},
		{"bad vfs", map[string]string{protocol.EnvVFS: "lazyfs"}, def, protocol.EnvVFS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{protocol.EnvVFS, protocol.EnvJournalMode, protocol.EnvSynchronous} {
				t.Setenv(k, tt.env[k])
			}
			got, err := FromEnv(def)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FromEnv = %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromEnv (-want +got):\n%s", diff)
			}
		})
	}
}
