package owner

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"idemlab/experiments/procstat"
)

// TestOwnerGone checks the owner record's identity: this process is not
// gone; the same pid with another start time (a reused pid), a pid no
// process has, and an earlier boot are; an owner on another host never
// is, for this host cannot tell. Each record reads back as written.
func TestOwnerGone(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if self.PID != os.Getpid() || self.Start == 0 || self.Boot == "" || self.Host == "" {
		t.Fatalf("Self() = %+v", self)
	}
	with := func(f func(*Owner)) Owner { o := self; f(&o); return o }
	for _, tt := range []struct {
		name  string
		owner Owner
		gone  bool
	}{
		{"this process", self, false},
		{"a reused pid", with(func(o *Owner) { o.Start++ }), true},
		{"no such pid", with(func(o *Owner) { o.PID = 1 << 30 }), true},
		{"an earlier boot", with(func(o *Owner) { o.Boot = "other" }), true},
		{"another host", with(func(o *Owner) { o.Host = "elsewhere"; o.PID = 1 << 30 }), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.owner.Gone(self); got != tt.gone {
				t.Errorf("Gone = %v, want %v", got, tt.gone)
			}
			back, err := Parse(tt.owner.String())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.owner, back); diff != "" {
				t.Errorf("Parse(String()) (-want +got):\n%s", diff)
			}
		})
	}
	// A child that has exited but is not reaped yet, as a SIGKILLed
	// harness whose parent has not waited for it, is gone.
	z := exec.Command("true")
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	defer z.Wait()
	zombie := Owner{PID: z.Process.Pid, Boot: self.Boot, Host: self.Host}
	deadline := time.Now().Add(5 * time.Second)
	var st procstat.Stat
	for {
		var err error
		st, err = procstat.Read(zombie.PID)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child is %c, not a zombie, after 5 s", st.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	zombie.Start = st.Start
	if !zombie.Gone(self) {
		t.Error("an exited child not yet reaped (a zombie) is not gone")
	}
	for _, bad := range []string{"", "pid=1 start=2 boot=b", "pid=x start=2 boot=b host=h", "pid=1 start=2 boot=b host=h extra=1"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted it", bad)
		}
	}
}
