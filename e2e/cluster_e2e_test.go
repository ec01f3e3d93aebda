package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// fiveNodes is the harness's cluster: three head-eligible agents and two
// workers.
var fiveNodes = []netNodeSpec{{"h1", true}, {"h2", true}, {"h3", true}, {"w1", false}, {"w2", false}}

// netWorker is seenWorker with a per-item time of argv[1] seconds.
const netWorker = `import json, os, sys, time
per = float(sys.argv[1])
seen = open(os.path.join(os.path.dirname(sys.argv[0]), "seen"), "a")
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    seen.write(m["item"] + "\n"); seen.flush()
    time.sleep(per)
    print(json.dumps({"id": m["id"], "ok": True, "result": m["item"]}), flush=True)
`

// netJob submits a job of netWorker through node via.
func netJob(t *testing.T, c *netCluster, via *nsNode, items, procs int) string {
	t.Helper()
	py := needPython(t)
	w := filepath.Join(c.dir, "seen.py")
	if err := os.WriteFile(w, []byte(netWorker), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(c.dir, "seen"))
	input := filepath.Join(c.dir, "items")
	if err := os.WriteFile(input, []byte(strings.Join(seqItems(items), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := via.ducc("submit", "--process-executable", py, "--process-executable-args", w+" 0.05",
		"--process-memory-size", "1G", "--input-file", input, "--process-deployments-max", fmt.Sprint(procs),
		"--log-directory", filepath.Join(c.dir, "logs"))
	if code != 0 {
		t.Fatalf("submit: exit %d: %s %s", code, out, errs)
	}
	return strings.Fields(out)[1]
}

func netShow(t *testing.T, via *nsNode, id string) wire.WorkInfo {
	t.Helper()
	var w wire.WorkInfo
	for range 50 { // the head may be changing hands
		out, _, code := via.ducc("show", id, "--json")
		if code == 0 && jsonInto(out, &w) == nil {
			return w
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("ducc show %s via %s keeps failing", id, via.name)
	return w
}

// waitJob waits until cond holds for the job.
func waitNetJob(t *testing.T, via *nsNode, id string, d time.Duration, what string, cond func(wire.WorkInfo) bool) wire.WorkInfo {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		w := netShow(t, via, id)
		if cond(w) {
			return w
		}
		if w.Ended {
			t.Fatalf("job %s ended (%s %q) while waiting for %s: %+v", id, w.Completion, w.Reason, what, w.Job)
		}
		time.Sleep(100 * time.Millisecond)
	}
	w := netShow(t, via, id)
	t.Fatalf("job %s: no %s within %s: %s %q %+v", id, what, d, w.State, w.Reason, w.Job)
	return w
}

func runningProcs(w wire.WorkInfo) []wire.ProcInfo {
	var out []wire.ProcInfo
	for _, p := range w.Procs {
		if p.State == wire.ProcRunning && p.PID > 0 {
			out = append(out, p)
		}
	}
	return out
}

// checkResults checks that results report every item once, done.
func checkResults(t *testing.T, via *nsNode, id string, items int) {
	t.Helper()
	out, errs, code := via.ducc("results", id)
	if code != 0 {
		t.Fatalf("results: exit %d: %s", code, errs)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r wire.ItemResult
		if err := jsonInto(line, &r); err != nil {
			t.Fatalf("results line %q: %v", line, err)
		}
		if !r.OK {
			t.Errorf("item %s failed: %s", r.Item, r.Error)
		}
		seen[r.Item]++
	}
	if len(seen) != items {
		t.Errorf("results name %d distinct items, want %d", len(seen), items)
	}
	for item, n := range seen {
		if n != 1 {
			t.Errorf("results report item %s %d times", item, n)
		}
	}
}

// processedOnce checks the record the workers keep in dir/seen: no item
// was started twice, and items distinct items were started.
func processedOnce(t *testing.T, dir string, items int) {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "seen"))
	count := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		count[l]++
	}
	for item, n := range count {
		if n > 1 {
			t.Errorf("item %s was processed %d times", item, n)
		}
	}
	if len(count) != items {
		t.Errorf("%d distinct items processed, want %d", len(count), items)
	}
}

// TestMultiNodeCluster is the harness of issue 6: five agents in network
// namespaces (three head-eligible, two workers) elect a head, run a job
// across nodes, survive kill -9 of the head and of a worker, re-adopt
// processes after an agent restart, and refuse a node with the wrong key.
func TestMultiNodeCluster(t *testing.T) {
	// Without prediction the jobs expand to their process cap at once
	// (short jobs would otherwise stay on one process).
	c := startNetCluster(t, fairConfig, fiveNodes...)
	h1, w1, w2 := c.nodes["h1"], c.nodes["w1"], c.nodes["w2"]

	t.Run("head elected and followed", func(t *testing.T) {
		head := c.headNode(w1)
		if !head.head {
			t.Fatalf("head %s is not head-eligible", head.name)
		}
		st, _ := w2.status()
		if st.Head != head.name || len(st.Peers) != 3 || st.Cluster != "e2e" {
			t.Errorf("w2 sees %+v; want head %s with 3 Raft peers", st, head.name)
		}
		info, ok := w1.idInfo()
		if !ok || info.HeadEligible || info.JoinError != "" || !strings.HasSuffix(info.Addrs[0], "/p2p/"+info.PeerID) {
			t.Errorf("ducc id on w1: %+v", info)
		}
	})

	t.Run("cluster metrics only from the head", func(t *testing.T) { checkClusterMetricsFromHead(t, c) })

	t.Run("wrong cluster key refused", func(t *testing.T) {
		x := c.addNode("x1", 30, false)
		badKey := filepath.Join(c.dir, "other.key")
		if out, code := runKeygen(badKey); code != 0 {
			t.Fatal(out)
		}
		x.writeConfig(badKey, []string{"/ip4/" + h1.ip + "/tcp/42134"}, 0, "")
		x.start()
		defer x.kill9()
		var info string
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) && !strings.Contains(info, "cannot join cluster: cluster key mismatch?") {
			if i, ok := x.idInfo(); ok {
				info = i.JoinError
			}
			time.Sleep(200 * time.Millisecond)
		}
		if !strings.Contains(info, "cannot join cluster: cluster key mismatch?") {
			t.Fatalf("a node with the wrong key reports %q", info)
		}
		_, errs, code := x.ducc("status")
		if code != exitUnreachable || !strings.Contains(errs, "cluster key mismatch?") {
			t.Errorf("status on the wrong-key node: exit %d: %s", code, errs)
		}
		if st, _ := w1.status(); st.NodesAll != 5 {
			t.Errorf("the wrong-key node got into the cluster: %+v", st)
		}
	})

	t.Run("job spans nodes and streams remote output", func(t *testing.T) {
		id := netJob(t, c, w1, 200, 6)
		end := waitNetJob(t, w1, id, 90*time.Second, "end", func(w wire.WorkInfo) bool { return w.Ended })
		if end.Completion != "EndOfJob" || end.Job.Done != 200 {
			t.Fatalf("job ended %s %q: %+v", end.Completion, end.Reason, end.Job)
		}
		nodes := map[string]bool{}
		for _, p := range end.Procs {
			if p.Done > 0 {
				nodes[p.Node] = true
			}
		}
		if len(nodes) < 2 {
			t.Errorf("items were processed on %d node(s), want several: %+v", len(nodes), end.Procs)
		}
		checkResults(t, w1, id, 200)
		// The output of a managed reservation on another node reaches
		// the caller, and so does its exit code.
		for _, tc := range []struct{ via, on string }{{"w1", "w2"}, {"w2", "h3"}} {
			out, errs, code := c.nodes[tc.via].ducc("run", "--machine", tc.on, "--memory", "1G", "--", "sh", "-c", "echo line-1; sleep 0.3; echo line-2; exit 7")
			if code != 7 || !strings.Contains(out, "line-1\nline-2") {
				t.Errorf("ducc run via %s on %s: exit %d: %q %q", tc.via, tc.on, code, out, errs)
			}
		}
		// A user's log on another node reaches the user, and nobody else.
		if isRoot() {
			ensureUser(t, "ducc-e2e")
			ensureUser(t, "ducc-e2e2")
			logDir := userLogDir(t, scratchDir(t), "ducc-e2e")
			out, errs, code := w1.ducc("run", "--as", "ducc-e2e", "--detach", "--log-dir", logDir, "--machine", "w2", "--memory", "1G", "--", "echo", "remote-log-line")
			if code != 0 {
				t.Fatalf("run as ducc-e2e on w2: exit %d: %s", code, errs)
			}
			id := strings.TrimSpace(out)
			w1.ducc("wait", id)
			if out, errs, code := w1.ducc("logs", id, "--as", "ducc-e2e"); code != 0 || out != "remote-log-line\n" {
				t.Errorf("the owner's remote log: exit %d: %q %q", code, out, errs)
			}
			if out, errs, code := w1.ducc("logs", id, "--as", "ducc-e2e2"); code != 2 || strings.Contains(out, "remote-log-line") || !strings.Contains(errs, "private to ducc-e2e") {
				t.Errorf("another user's remote log: exit %d: %q %q", code, out, errs)
			}
		}
	})

	t.Run("kill -9 of the head during a job", func(t *testing.T) {
		id := netJob(t, c, w1, 600, 4)
		before := waitNetJob(t, w1, id, 60*time.Second, "4 running processes and progress", func(w wire.WorkInfo) bool {
			return len(runningProcs(w)) == 4 && w.Job != nil && w.Job.Done > 20
		})
		head := c.headNode(w1)
		t0 := time.Now()
		head.kill9()
		var newHead string
		for time.Since(t0) < hangGuard {
			if st, ok := w2.status(); ok && st.Head != "" && st.Head != head.name {
				newHead = st.Head
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if newHead == "" {
			t.Fatalf("no new head within %v of killing %s (it usually takes about a second)", hangGuard, head.name)
		}
		t.Logf("killed head %s; %s took over after %v", head.name, newHead, time.Since(t0).Round(time.Millisecond))
		head.start() // the restarted agent re-adopts its processes
		end := waitNetJob(t, w1, id, 2*time.Minute, "end", func(w wire.WorkInfo) bool { return w.Ended })
		if end.Completion != "EndOfJob" || end.Job.Done != 600 {
			t.Fatalf("job ended %s %q: %+v", end.Completion, end.Reason, end.Job)
		}
		// No process was restarted: the processes running before the kill
		// finished the job, and no other process started.
		pids := map[string]int{}
		for _, p := range runningProcs(before) {
			pids[p.ID] = p.PID
		}
		for _, p := range end.Procs {
			if pid, ok := pids[p.ID]; !ok || pid != p.PID {
				t.Errorf("process %s (pid %d on %s) was not running before the failover (%v)", p.ID, p.PID, p.Node, pids)
			}
			if p.State == wire.ProcLost {
				t.Errorf("process %s was written off: %s", p.ID, p.Reason)
			}
		}
		checkResults(t, w1, id, 600)
		processedOnce(t, c.dir, 600)
		if !strings.Contains(head.agentLog(), "re-adopted process") && hasProcsOn(before, head.name) {
			t.Errorf("the restarted agent %s did not re-adopt its processes", head.name)
		}
		c.waitUp(5, 30*time.Second)
	})

	t.Run("kill -9 of a worker", func(t *testing.T) {
		id := netJob(t, c, w1, 400, 6)
		head := c.headNode(w1)
		// The victim: a node other than the head that runs some of the
		// job's processes, a worker if possible.
		var victim *nsNode
		before := waitNetJob(t, head, id, 60*time.Second, "processes off the head and progress", func(w wire.WorkInfo) bool {
			if len(runningProcs(w)) < 3 || w.Job == nil || w.Job.Done < 20 {
				return false
			}
			for _, name := range []string{"w2", "w1", "h1", "h2", "h3"} {
				if name != head.name && hasProcsOn(w, name) {
					victim = c.nodes[name]
					return true
				}
			}
			return false
		})
		var oldPIDs []int
		for _, p := range runningProcs(before) {
			if p.Node == victim.name {
				oldPIDs = append(oldPIDs, p.PID)
			}
		}
		t0 := time.Now()
		victim.kill9() // the agent dies; its workers are cut off from the head
		for c.nodeState(head, victim.name) != "Down" {
			if time.Since(t0) > 20*time.Second {
				t.Fatalf("%s not declared down within 20s (node_timeout 3s)", victim.name)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("%s declared down %v after its agent was killed (node_timeout 3s)", victim.name, time.Since(t0).Round(time.Millisecond))
		end := waitNetJob(t, head, id, 2*time.Minute, "end", func(w wire.WorkInfo) bool { return w.Ended })
		if end.Completion != "EndOfJob" || end.Job.Done != 400 {
			t.Fatalf("job ended %s %q: %+v", end.Completion, end.Reason, end.Job)
		}
		lost := 0
		for _, p := range end.Procs {
			if p.Node == victim.name && p.State == wire.ProcLost {
				lost++
			}
		}
		if lost == 0 {
			t.Errorf("no process of %s was written off: %+v", victim.name, end.Procs)
		}
		checkResults(t, head, id, 400)
		// The node rejoins: the processes it still runs are no longer
		// wanted and are stopped.
		victim.start()
		c.waitUp(5, 30*time.Second)
		deadline := time.Now().Add(30 * time.Second)
		for _, pid := range oldPIDs {
			for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			if syscall.Kill(pid, 0) == nil {
				t.Errorf("process %d of the written-off work still runs on %s after it rejoined", pid, victim.name)
			}
		}
	})

	t.Run("partitioned head steps down and its node keeps its work", func(t *testing.T) { partitionHead(t, c, w1) })

	t.Run("dead head-eligible agent removed with remove-server", func(t *testing.T) { removeDeadServer(t, c, w1) })
}

// removeDeadServer kills a head-eligible agent that is not the head and
// retires it from the head group with `ducc admin remove-server`; the two
// voters left carry on.
func removeDeadServer(t *testing.T, c *netCluster, w1 *nsNode) {
	const exitUsage = 2 // bad input (README, "Exit codes")
	head := c.headNode(w1)
	var victim *nsNode
	for _, name := range []string{"h1", "h2", "h3"} {
		if name != head.name {
			victim = c.nodes[name]
			break
		}
	}
	voters := func() map[string]string {
		st, _ := w1.status()
		m := map[string]string{}
		for _, v := range st.Voters {
			m[v.Node] = v.State
		}
		return m
	}
	// The group settles first: a member that just came back (the
	// partition test before this one) may still report Candidate.
	for t0 := time.Now(); ; {
		got := voters()
		if len(got) == 3 && got[head.name] == "Leader" && got[victim.name] == "Follower" {
			break
		}
		if time.Since(t0) > 30*time.Second {
			t.Fatalf("head group did not settle within 30s: %v", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, errs, code := w1.ducc("admin", "remove-server", victim.name); code != exitUsage || !strings.Contains(errs, "is alive") {
		t.Errorf("remove-server of a live member: exit %d: %s", code, errs)
	}
	victim.kill9()
	t0 := time.Now()
	for voters()[victim.name] != wire.VoterUnreachable {
		if time.Since(t0) > 30*time.Second {
			t.Fatalf("%s not shown unreachable within 30s of its death (node_timeout 3s): %v", victim.name, voters())
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, errs, code := w1.ducc("admin", "remove-server", victim.name)
	if code != 0 || !strings.Contains(out, "Removed "+victim.name+" from the head group") {
		t.Fatalf("remove-server %s: exit %d: %s %s", victim.name, code, out, errs)
	}
	st, _ := w1.status()
	if len(st.Voters) != 2 || len(st.Peers) != 2 {
		t.Errorf("status after the removal: %+v", st)
	}
	for _, v := range st.Voters {
		if v.Node == victim.name || (v.State != "Leader" && v.State != "Follower") {
			t.Errorf("voter after the removal: %+v", v)
		}
	}
	// The name as a word: peer ids (base58) may hold it ("...CPh1Vg...").
	text, _, _ := w1.ducc("status")
	named := regexp.MustCompile(`\b` + regexp.QuoteMeta(victim.name) + `\b`)
	if !strings.Contains(text, "Head group:") || named.MatchString(text) {
		t.Errorf("ducc status after the removal:\n%s", text)
	}
	// The two voters left still commit: a managed reservation runs.
	if out, errs, code := w1.ducc("run", "--memory", "1G", "--", "true"); code != 0 {
		t.Errorf("run with two voters: exit %d: %s %s", code, out, errs)
	}
}

func hasProcsOn(w wire.WorkInfo, node string) bool {
	for _, p := range runningProcs(w) {
		if p.Node == node {
			return true
		}
	}
	return false
}

func jsonInto(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// BenchmarkFailover measures, on the namespace harness with the default
// timings (heartbeat 1s, node_timeout 10s, Raft timeouts 500ms), how long
// the cluster is without a head after kill -9 of the head's agent (until
// another agent announces itself), and how long a dead node takes to be
// declared down. Run with -benchtime 10x for the median of ten.
func BenchmarkFailover(b *testing.B) {
	c := startNetClusterTimed(b, "1s", "10s", "", netNodeSpec{"h1", true}, netNodeSpec{"h2", true}, netNodeSpec{"h3", true}, netNodeSpec{"w1", false})
	w1 := c.nodes["w1"]
	var failovers []time.Duration
	b.ResetTimer()
	for range b.N {
		st, ok := w1.status()
		if !ok || c.nodes[st.Head] == nil {
			b.Fatalf("no head: %+v", st)
		}
		old := c.nodes[st.Head]
		t0 := time.Now()
		old.kill9()
		for {
			if st, ok := w1.status(); ok && st.Head != "" && st.Head != old.name {
				break
			}
			if time.Since(t0) > 30*time.Second {
				b.Fatalf("no new head within 30s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		failovers = append(failovers, time.Since(t0))
		b.StopTimer()
		old.start()
		c.waitUp(4, 60*time.Second)
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(failovers, func(i, j int) bool { return failovers[i] < failovers[j] })
	b.ReportMetric(float64(failovers[len(failovers)/2].Milliseconds()), "ms-median-failover")
	b.ReportMetric(float64(failovers[len(failovers)-1].Milliseconds()), "ms-max-failover")
	// Node death: kill a worker's agent and its processes.
	head := c.headNode(w1)
	t0 := time.Now()
	w1.kill9()
	for c.nodeState(head, "w1") != "Down" {
		if time.Since(t0) > 60*time.Second {
			b.Fatalf("w1 not declared down within 60s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.ReportMetric(float64(time.Since(t0).Milliseconds()), "ms-node-death-detection")
}

// hangGuard bounds the waits for an election: they take about a second;
// the bound only turns a hang into a failure on a busy machine.
const hangGuard = 45 * time.Second

// partitionHead cuts the head off the network: it must step down, place
// nothing, and keep its processes until it returns.
func partitionHead(t *testing.T, c *netCluster, w1 *nsNode) {
	head := c.headNode(w1)
	out, errs, code := w1.ducc("run", "--detach", "--machine", head.name, "--memory", "1G", "--", "sleep", "600")
	if code != 0 {
		t.Fatalf("run: exit %d: %s %s", code, out, errs)
	}
	id := strings.TrimSpace(out)
	w := waitNetJob(t, w1, id, 30*time.Second, "a running process", func(w wire.WorkInfo) bool { return len(runningProcs(w)) == 1 })
	pid := w.Procs[0].PID
	ipCmd(t, "-n", c.sw, "link", "set", "p"+head.name, "down")
	healed := false
	heal := func() {
		if !healed {
			ipCmd(t, "-n", c.sw, "link", "set", "p"+head.name, "up")
			healed = true
		}
	}
	defer heal()
	t0 := time.Now()
	for {
		if st, ok := w1.status(); ok && st.Head != "" && st.Head != head.name {
			t.Logf("%s cut off; %s became head after %v", head.name, st.Head, time.Since(t0).Round(time.Millisecond))
			break
		}
		if time.Since(t0) > hangGuard {
			t.Fatalf("the majority elected no new head within %v", hangGuard)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The cut-off head has lost its quorum: it stepped down and places
	// nothing.
	for {
		_, _, code := head.ducc("status")
		if code == exitUnreachable {
			break
		}
		if time.Since(t0) > hangGuard {
			t.Fatalf("the cut-off node still answers as head after %v", hangGuard)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, errs, code := head.ducc("run", "--detach", "--memory", "1G", "--", "true"); code != exitUnreachable {
		t.Errorf("a submission on the cut-off node: exit %d, want %d: %s %s", code, exitUnreachable, out, errs)
	}
	// Its agent keeps its process running past node_timeout.
	time.Sleep(4 * time.Second)
	if syscall.Kill(pid, 0) != nil {
		t.Errorf("process %d on the cut-off node died during the partition", pid)
	}
	heal()
	c.waitUp(5, 30*time.Second)
	// Written off while cut off, the process is stopped on return.
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("process %d still runs after its node rejoined; it was written off", pid)
	}
	_, _, _ = w1.ducc("cancel", id)
}
