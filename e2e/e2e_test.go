package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// Tests of the CLI against a dev cluster: managed reservations, wait and
// cancel, agent restarts, users.

func TestRun(t *testing.T) {
	c := startCluster(t)
	tests := []struct {
		name      string
		args      []string
		wantCode  int
		wantOut   string
		wantErr   string
		needsRoot bool
	}{
		{name: "output and exit code", args: []string{"run", "--", "sh", "-c", "echo hello; echo oops >&2; exit 7"}, wantCode: 7, wantOut: "hello\noops\n"},
		{name: "success", args: []string{"run", "--memory", "512M", "--", "true"}, wantCode: 0},
		{name: "memory cap kill", args: []string{"run", "--memory", "512M", "--", "sh", "-c", "head -c 3000M /dev/zero | tail"},
			wantCode: 137, wantErr: "exceeded its memory limit of 512 MiB", needsRoot: true},
		{name: "missing executable", args: []string{"run", "--", "/no/such/program"}, wantCode: 1, wantErr: "LaunchFailure"},
		{name: "unknown class", args: []string{"run", "--class", "hgih", "--", "true"}, wantCode: 2, wantErr: `unknown class "hgih"; the classes 'ducc run' and services may use (FIXED_SHARE) are: fixed `},
		{name: "fair class refused", args: []string{"run", "--class", "normal", "--", "true"}, wantCode: 2, wantErr: "needs a FIXED_SHARE class"},
		{name: "bad memory", args: []string{"run", "--memory", "12X", "--", "true"}, wantCode: 2, wantErr: `--memory: memory size "12X": unknown unit`},
		{name: "too big for any node", args: []string{"run", "--memory", "64G", "--", "true"}, wantCode: 2, wantErr: "no node can hold 64 GiB; largest schedulable is 16 GiB"},
		{name: "unknown flag", args: []string{"run", "--bogus", "--", "true"}, wantCode: 2, wantErr: "unknown flag: --bogus"},
		{name: "no command", args: []string{"run"}, wantCode: 2},
		{name: "unknown service", args: []string{"services", "start", "HTTP:nowhere:1/"}, wantCode: 2, wantErr: "no registered service"},
		{name: "missing spec", args: []string{"submit", "no-such-job.yaml"}, wantCode: 2, wantErr: "no-such-job.yaml"},
		{name: "bad id", args: []string{"wait", "x17"}, wantCode: 2, wantErr: `bad id "x17"`},
		{name: "no such work", args: []string{"show", "99999"}, wantCode: 2, wantErr: "no work with id 99999"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needsRoot && !isRoot() {
				t.Skip("needs root for cgroups")
			}
			out, errs, code := c.ducc(tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, out, errs)
			}
			if tc.wantOut != "" && out != tc.wantOut {
				t.Errorf("stdout %q, want %q", out, tc.wantOut)
			}
			if !strings.Contains(errs, tc.wantErr) {
				t.Errorf("stderr %q does not contain %q", errs, tc.wantErr)
			}
			if code == 2 && strings.Count(strings.TrimSpace(errs), "\n") > 0 && tc.name != "no command" {
				t.Errorf("usage error is more than one line: %q", errs)
			}
		})
	}
}

func TestDetachWaitCancel(t *testing.T) {
	c := startCluster(t)
	out, errs, code := c.ducc("run", "--detach", "--", "sh", "-c", "sleep 0.5; exit 3")
	if code != 0 {
		t.Fatalf("detach: exit %d: %s", code, errs)
	}
	id := strings.TrimSpace(out)
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		t.Fatalf("--detach printed %q, want an id", out)
	}
	if _, errs, code := c.ducc("wait", id); code != 3 {
		t.Fatalf("wait %s: exit %d, want 3 (%s)", id, code, errs)
	}

	// Cancel: the process traps SIGTERM and exits 42, so we see that it got
	// the signal and was allowed to end by itself.
	out, _, _ = c.ducc("run", "--detach", "--", "sh", "-c", "trap 'exit 42' TERM; while :; do sleep 0.1; done")
	id = strings.TrimSpace(out)
	c.waitRunning(id)
	if out, errs, code := c.ducc("cancel", id); code != 0 {
		t.Fatalf("cancel: exit %d: %s %s", code, out, errs)
	}
	if _, _, code := c.ducc("wait", id); code != 42 {
		t.Errorf("wait after cancel: exit %d, want 42 (the process's own code)", code)
	}
	w := c.show(id)
	if w.Completion != "CanceledByUser" {
		t.Errorf("completion %q, want CanceledByUser", w.Completion)
	}

	// jobs lists active work; --all includes the ended.
	out, _, _ = c.ducc("jobs", "--all", "--json")
	var list wire.WorkList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("jobs --json: %v: %s", err, out)
	}
	if len(list.Work) != 2 {
		t.Errorf("jobs --all lists %d, want 2: %s", len(list.Work), out)
	}
	out, _, _ = c.ducc("jobs")
	if !strings.HasPrefix(out, "ID") || strings.Contains(out, "\n"+id+" ") {
		t.Errorf("jobs (active only) lists ended work:\n%s", out)
	}
}

func TestAgentKill9ReadoptAndRestart(t *testing.T) {
	c := startCluster(t)
	out, errs, code := c.ducc("run", "--detach", "--", "sh", "-c", "sleep 2; exit 5")
	if code != 0 {
		t.Fatalf("detach: %s", errs)
	}
	id := strings.TrimSpace(out)
	before := c.waitRunning(id)
	c.kill9()
	// The process survives the agent.
	if err := syscall.Kill(before.Procs[0].PID, 0); err != nil {
		t.Fatalf("process %d died with the agent: %v", before.Procs[0].PID, err)
	}
	c.start()
	if _, errs, code := c.ducc("wait", id); code != 5 {
		t.Fatalf("wait after agent restart: exit %d, want 5 (%s)\n%s", code, errs, c.agentLog())
	}
	after := c.show(id)
	if after.Procs[0].PID != before.Procs[0].PID {
		t.Errorf("process restarted: pid %d, was %d", after.Procs[0].PID, before.Procs[0].PID)
	}
	if !strings.Contains(c.agentLog(), "re-adopted process") {
		t.Errorf("agent log does not mention re-adoption")
	}

	// A full clean restart keeps the history (Raft log and snapshot).
	c.stop()
	c.start()
	out, _, _ = c.ducc("jobs", "--all", "--json")
	var list wire.WorkList
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Work) != 1 || list.Work[0].ExitCode != 5 {
		t.Fatalf("history after restart: %v %s", err, out)
	}
	// New ids continue after the old ones.
	out, _, _ = c.ducc("run", "--detach", "--", "true")
	if got := strings.TrimSpace(out); got == id {
		t.Errorf("id %s reused after restart", got)
	}
}

func TestSecondAgentRefused(t *testing.T) {
	c := startCluster(t)
	cmd := exec.Command(duccBin, "agent", "--dev", "--data-dir", filepath.Join(c.dir, "data"))
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("second agent started on the same data dir")
	}
	if !strings.Contains(string(out), "already running on data dir") {
		t.Errorf("second agent says %q", out)
	}
}

func TestNoAgent(t *testing.T) {
	_, errs, code := runDucc(filepath.Join(t.TempDir(), "none.sock"), "jobs")
	if code != 3 {
		t.Fatalf("exit %d, want 3", code)
	}
	if !strings.Contains(errs, "no ducc agent answers") || strings.Count(errs, "\n") != 1 {
		t.Errorf("stderr %q: want one line saying no agent answers", errs)
	}
}

func TestNodesAndStatus(t *testing.T) {
	c := startCluster(t)
	out, _, code := c.ducc("nodes", "--json")
	var nl wire.NodeList
	if code != 0 || json.Unmarshal([]byte(out), &nl) != nil || len(nl.Nodes) != 1 {
		t.Fatalf("nodes: %d %s", code, out)
	}
	n := nl.Nodes[0]
	if n.Name != "n1" || n.State != "Up" || n.MemSchedulable != 16<<30 || n.Shares != 16 {
		t.Errorf("node %+v", n)
	}
	out, _, _ = c.ducc("status")
	for _, want := range []string{"Head:", "n1", "Leader", "Nodes up:", "1 of 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if out, _, code := c.ducc("version"); code != 0 || !strings.HasPrefix(out, "ducc ") {
		t.Errorf("version: %d %q", code, out)
	}
}

func TestRunAsAnotherUser(t *testing.T) {
	if !isRoot() {
		t.Skip("needs root to create users and switch to them")
	}
	u := ensureUser(t, "ducc-e2e")
	c := startCluster(t)
	logDir := sharedLogDir(t, filepath.Join(c.dir, "logs"))
	out, errs, code := c.ducc("run", "--as", "ducc-e2e", "--log-dir", logDir, "--", "sh", "-c", "id -un; id -u")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want := "ducc-e2e\n" + u.Uid + "\n"; out != want {
		t.Errorf("ran as %q, want %q", out, want)
	}
	// The log is <log-dir>/<id>/<id>-POP-<node>-<pid>.log, owned by the user.
	matches, _ := filepath.Glob(filepath.Join(logDir, "*", "*-POP-n1-*.log"))
	if len(matches) != 1 {
		t.Fatalf("log files %v", matches)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(matches[0], &st); err != nil || strconv.Itoa(int(st.Uid)) != u.Uid {
		t.Errorf("log %s owned by uid %d, want %s", matches[0], st.Uid, u.Uid)
	}
	// Another user may not cancel it; root may.
	out, _, _ = c.ducc("run", "--as", "ducc-e2e", "--log-dir", logDir, "--detach", "--", "sleep", "30")
	id := strings.TrimSpace(out)
	c.waitRunning(id)
	ensureUser(t, "ducc-e2e2")
	if _, errs, code := c.ducc("cancel", "--as", "ducc-e2e2", id); code != 2 || !strings.Contains(errs, "belongs to ducc-e2e") {
		t.Errorf("other user's cancel: exit %d %q", code, errs)
	}
	if _, errs, code := c.ducc("cancel", id); code != 0 {
		t.Errorf("root cancel: exit %d %q", code, errs)
	}
	c.ducc("wait", id)
}

// BenchmarkRunTrue measures `ducc run -- true` end to end on a warm dev
// cluster: CLI start, submit through Raft, schedule, shim, exit, report
// through Raft, answer.
func BenchmarkRunTrue(b *testing.B) {
	c := startCluster(b)
	c.ducc("run", "--", "true") // warm up
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, errs, code := c.ducc("run", "--", "true"); code != 0 {
			b.Fatalf("exit %d: %s", code, errs)
		}
		durs = append(durs, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "median-ms")
}
