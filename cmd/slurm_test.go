package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slurmTools are the programs a single-host Slurm cluster needs, from the
// Debian packages slurm-wlm and munge.
var slurmTools = []string{"munged", "mungekey", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo"}

// slurmTool finds a program of slurmTools: on PATH, or in the sbin
// folders a user's PATH may lack.
func slurmTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin"} {
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// slurmCluster is munged, slurmctld and slurmd on this host, with their
// key, configuration, state and logs in one temporary folder.
type slurmCluster struct {
	t    *testing.T
	dir  string
	conf string
	env  []string
	// daemons, in the order they started.
	daemons []*exec.Cmd
}

// startSlurm brings up the cluster, or skips the test saying why it
// cannot. Cleanup stops the daemons and fails the test if any process
// of the cluster (a daemon, a job step, a job) outlives them.
func startSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	tools := map[string]string{}
	for _, name := range slurmTools {
		p, err := slurmTool(name)
		if err != nil {
			t.Skipf("Slurm test skipped: %v; install the Debian packages slurm-wlm and munge to run it", err)
		}
		tools[name] = p
	}
	if os.Geteuid() != 0 {
		t.Skip("Slurm test skipped: slurmd starts jobs as their user, which needs root; run it as root")
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".")
	// A short path: munge's socket name must fit a Unix socket address.
	dir, err := os.MkdirTemp("", "idemlab-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	c := &slurmCluster{t: t, dir: dir, conf: filepath.Join(dir, "slurm.conf")}
	t.Cleanup(c.stop)
	for _, sub := range []string{"munge", "ctld", "slurmd", "log"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	key, sock := filepath.Join(dir, "munge", "munge.key"), filepath.Join(dir, "munge", "munge.sock")
	if out, err := exec.Command(tools["mungekey"], "--create", "--keyfile", key).CombinedOutput(); err != nil {
		t.Fatalf("mungekey: %v\n%s", err, out)
	}
	ports := freePorts(t, 2)
	conf := fmt.Sprintf(`ClusterName=idemlab
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%[4]s
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[5]s/ctld
SlurmdSpoolDir=%[5]s/slurmd
SlurmctldPidFile=%[5]s/slurmctld.pid
SlurmdPidFile=%[5]s/slurmd.pid
SlurmctldLogFile=%[5]s/log/slurmctld.log
SlurmdLogFile=%[5]s/log/slurmd.log
PlugStackConfig=%[5]s/plugstack.conf
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MailProg=/bin/true
NodeName=%[1]s NodeAddr=127.0.0.1 CPUs=%[6]d State=UNKNOWN
PartitionName=idemlab Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`, host, ports[0], ports[1], sock, dir, 2)
	if err := os.WriteFile(c.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugstack.conf"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.env = append(os.Environ(), "SLURM_CONF="+c.conf)
	// munged refuses to run as root unless forced; here root is the
	// only user of the cluster.
	c.daemon("munged", tools["munged"], "--foreground", "--force", "--socket="+sock, "--key-file="+key,
		"--log-file="+filepath.Join(dir, "log", "munged.log"), "--pid-file="+filepath.Join(dir, "munge", "munged.pid"),
		"--seed-file="+filepath.Join(dir, "munge", "munged.seed"))
	c.waitFor("munged's socket", func() bool { _, err := os.Stat(sock); return err == nil })
	c.daemon("slurmctld", tools["slurmctld"], "-D", "-i", "-f", c.conf)
	c.daemon("slurmd", tools["slurmd"], "-D", "-N", host, "-f", c.conf)
	c.waitFor("the node to be idle", func() bool {
		out, err := c.run("sinfo", "-h", "-o", "%T")
		return err == nil && strings.TrimSpace(out) == "idle"
	})
	return c
}

// freePorts are n TCP ports on the loopback address nothing listens on.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// daemon starts a daemon in the foreground, in a process group of its
// own, its output in the log folder.
func (c *slurmCluster) daemon(name, path string, args ...string) {
	c.t.Helper()
	log, err := os.Create(filepath.Join(c.dir, "log", name+".out"))
	if err != nil {
		c.t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(path, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = c.env, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start %s: %v", name, err)
	}
	c.daemons = append(c.daemons, cmd)
}

// waitFor polls ok for a minute, failing the test with the daemons' logs
// if it never holds.
func (c *slurmCluster) waitFor(what string, ok func() bool) {
	c.t.Helper()
	for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			c.t.Fatalf("waited a minute for %s\n%s", what, c.logs())
		}
	}
}

// run runs a Slurm client in the cluster's environment.
func (c *slurmCluster) run(name string, args ...string) (string, error) {
	path, err := slurmTool(name)
	if err != nil {
		return "", err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = c.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// logs are the daemons' output, for a failure.
func (c *slurmCluster) logs() string {
	var b strings.Builder
	for _, name := range []string{"munged", "slurmctld", "slurmd"} {
		out, _ := os.ReadFile(filepath.Join(c.dir, "log", name+".out"))
		fmt.Fprintf(&b, "== %s\n%s\n", name, out)
	}
	return b.String()
}

// stop stops the daemons, last started first, each with SIGTERM and,
// after 20 s, SIGKILL to its group; then fails the test if a process of
// the cluster is left (one whose environment names its configuration,
// as every daemon, job step and job of it has), and removes the folder.
func (c *slurmCluster) stop() {
	for i := len(c.daemons) - 1; i >= 0; i-- {
		d := c.daemons[i]
		d.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { d.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			c.t.Errorf("%s did not stop in 20 s of SIGTERM; killed", d.Path)
			syscall.Kill(-d.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left := c.processes()
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			c.t.Errorf("processes of the cluster outlived it: %s", strings.Join(left, "; "))
			break
		}
	}
	os.RemoveAll(c.dir)
}

// processes lists the processes whose environment names the cluster's
// configuration, but this test's own.
func (c *slurmCluster) processes() []string {
	var out []string
	mark := []byte("SLURM_CONF=" + c.conf + "\x00")
	pids, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range pids {
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil || !bytes.Contains(env, mark) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		out = append(out, fmt.Sprintf("%s %s", filepath.Base(p), strings.ReplaceAll(string(cmdline), "\x00", " ")))
	}
	return out
}

// slurmJob is a job or array task as scontrol shows it.
type slurmJob struct {
	id, state, exit, restarts string
}

var slurmField = regexp.MustCompile(`(\w+)=(\S*)`)

// jobs are the jobs the controller knows, by id (12, or 11_3 for task 3
// of array 11).
func (c *slurmCluster) jobs() map[string]slurmJob {
	c.t.Helper()
	out, err := c.run("scontrol", "show", "job", "--oneliner")
	if err != nil {
		c.t.Fatalf("scontrol show job: %v\n%s", err, out)
	}
	jobs := map[string]slurmJob{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := map[string]string{}
		for _, m := range slurmField.FindAllStringSubmatch(line, -1) {
			if _, ok := f[m[1]]; !ok {
				f[m[1]] = m[2]
			}
		}
		if f["JobId"] == "" {
			continue
		}
		id := f["JobId"]
		if f["ArrayTaskId"] != "" {
			id = f["ArrayJobId"] + "_" + f["ArrayTaskId"]
		}
		jobs[id] = slurmJob{id: id, state: f["JobState"], exit: f["ExitCode"], restarts: f["Restarts"]}
	}
	return jobs
}

// settle waits until no job is pending or running, and returns them. A
// job pending on a dependency that can never be met fails the test.
func (c *slurmCluster) settle(limit time.Duration) map[string]slurmJob {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		jobs := c.jobs()
		busy := false
		for _, j := range jobs {
			busy = busy || j.state == "PENDING" || j.state == "RUNNING" || j.state == "CONFIGURING" || j.state == "COMPLETING"
		}
		if !busy {
			return jobs
		}
		if time.Now().After(deadline) {
			out, _ := c.run("scontrol", "show", "job")
			c.t.Fatalf("jobs still pending or running after %s:\n%s\n%s", limit, out, c.logs())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestSlurmRecipe submits the sharding topic's Slurm recipe, as merge
// --help and "idemlab help sharding" print it, to a real single-host cluster: a job array of 4 shards,
// then the merge after them. The merged folder verifies and gives what
// one unsharded run gives. Then Slurm requeues a finished array task:
// the rerun finds its shard done, exits 0, and the shards merge as they
// did.
func TestSlurmRecipe(t *testing.T) {
	c := startSlurm(t)
	start := time.Now()
	// The job folder, as a shared file system would hold it: the binary
	// built once, and an input of few trials.
	jobDir := filepath.Join(c.dir, "job")
	if err := os.Mkdir(jobDir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(idemlabBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jobDir, "idemlab"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	writeSmallInput(t, filepath.Join(jobDir, "input.json"))
	t.Logf("built: %s", time.Since(start).Round(time.Second))
	start = time.Now()
	submit := exec.Command("sh", "-c", slurmRecipe())
	submit.Dir, submit.Env = jobDir, c.env
	out, err := submit.CombinedOutput()
	if err != nil {
		t.Fatalf("the recipe: %v\n%s", err, out)
	}
	jobs := c.settle(5 * time.Minute)
	t.Logf("the recipe on Slurm: %s from submit to the merge's end", time.Since(start).Round(time.Second))
	var array string
	for id, j := range jobs {
		if j.state != "COMPLETED" || j.exit != "0:0" {
			t.Errorf("job %s: %s, exit %s\n%s", id, j.state, j.exit, slurmOutput(t, jobDir, id))
		}
		if a, task, ok := strings.Cut(id, "_"); ok && task == "2" {
			array = a
		}
	}
	if len(jobs) != 5 || array == "" {
		t.Fatalf("the recipe made jobs %v, want 4 array tasks and a merge", jobs)
	}
	merged := filepath.Join(jobDir, "merged")
	if r := execIn(t, Hooks{}, "verify", merged); r.code != 0 {
		t.Errorf("verify merged: exit %d\n%s", r.code, r.stdout)
	}
	// The unsharded run, by the jobs' binary in their folder.
	whole := filepath.Join(t.TempDir(), "whole")
	unsharded := exec.Command(filepath.Join(jobDir, "idemlab"), "experiment", "--quiet", "--scenario", "explore", "--out", whole)
	unsharded.Dir = jobDir
	if out, err := unsharded.CombinedOutput(); err != nil {
		t.Fatalf("unsharded: %v\n%s", err, out)
	}
	sameAsWhole(t, "explore", whole, merged, 4)
	t.Logf("and the unsharded run: %s", time.Since(start).Round(time.Second))

	// Slurm requeues a finished task, as it does after a node failure.
	task := array + "_2"
	shard2 := filepath.Join(jobDir, "shard-2")
	before := snapshot(t, shard2)
	if out, err := c.run("scontrol", "requeue", task); err != nil {
		t.Fatalf("scontrol requeue %s: %v\n%s", task, err, out)
	}
	// A requeued job waits two minutes to start again; not here.
	if out, err := c.run("scontrol", "update", "JobId="+task, "StartTime=now"); err != nil {
		t.Fatalf("scontrol update %s: %v\n%s", task, err, out)
	}
	j := c.settle(time.Minute)[task]
	log := slurmOutput(t, jobDir, task)
	if j.restarts != "1" || j.state != "COMPLETED" || j.exit != "0:0" || !strings.Contains(log, "shard 2/4 already done in shard-2") {
		t.Errorf("requeued %s: %d restart(s), %s, exit %s, want 1, COMPLETED, 0:0, saying the shard was done\n%s", task, atoi(j.restarts), j.state, j.exit, log)
	}
	if snapshot(t, shard2) != before {
		t.Errorf("the requeued task changed %s", shard2)
	}
	if p := partials(t, shard2); len(p) > 0 {
		t.Errorf("the requeued task left %v", p)
	}
	again := filepath.Join(t.TempDir(), "merged-again")
	shards := []string{"merge", "--out", again}
	for i := 1; i <= 4; i++ {
		shards = append(shards, filepath.Join(jobDir, fmt.Sprintf("shard-%d", i)))
	}
	if r := execIn(t, Hooks{}, shards...); r.code != 0 {
		t.Fatalf("merge after the requeue: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sameAsWhole(t, "explore", whole, again, 4)
	t.Logf("with the requeue: %s in all", time.Since(start).Round(time.Second))
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

// writeSmallInput writes the project's input with explore cut to a few
// trials and no races, whose random crashes still break every class
// explore's articles list as known unsafe.
func writeSmallInput(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile("../input.json")
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]map[string]any
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	in["explore"]["trials"], in["explore"]["rounds"], in["explore"]["seed"] = 4, 0, 1
	b, err = json.MarshalIndent(in, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// slurmOutput is what job id wrote to its default output file,
// slurm-ARRAY_TASK.out or slurm-ID.out.
func slurmOutput(t *testing.T, dir, id string) string {
	b, err := os.ReadFile(filepath.Join(dir, "slurm-"+id+".out"))
	if errors.Is(err, os.ErrNotExist) {
		return "(no slurm-" + id + ".out)"
	}
	return string(b)
}

// TestSlurmRecipePrinted: the sharding topic, "idemlab help sharding" and
// merge --help print the recipe TestSlurmRecipe submits, every line of
// it, unchanged.
func TestSlurmRecipePrinted(t *testing.T) {
	topic, err := topicMarkdown("sharding")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(slurmRecipe(), "sbatch") {
		t.Fatalf("the recipe read from the topic is not Slurm's: %q", slurmRecipe())
	}
	t.Setenv("COLUMNS", "80")
	tests := []struct {
		name, text, want string
	}{
		{"the sharding topic", topic, "```sh\n" + slurmRecipe() + "\n```\n"},
		{"idemlab help sharding", execIn(t, Hooks{}, "help", "sharding").stdout, indent(slurmRecipe(), "  ") + "\n"},
		{"merge --help", execIn(t, Hooks{}, "merge", "--help").stdout, indent(slurmRecipe(), "  ") + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(tt.text, tt.want) {
				t.Errorf("%s lacks the Slurm recipe as TestSlurmRecipe submits it:\n%s", tt.name, tt.want)
			}
		})
	}
}
