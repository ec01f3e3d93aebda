package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// TestMultiNodeFrozenAgent stops (SIGSTOP) the agent of the worker that
// runs a job for twice node_timeout, then lets it go on (SIGCONT). The head
// declares the node down and writes off its processes, re-queueing their
// items; when the node comes back, its old processes are stopped, what they
// still hold or answer late does not go back in flight, and the job
// completes with every item counted once.
//
// The head's own node is varied off so that every process of the job runs
// on the frozen worker: the re-queued items then wait for the node's
// return, which is when a written-off process used to take them back and
// keep them dispatched forever.
func TestMultiNodeFrozenAgent(t *testing.T) {
	const nodeTimeout = 2 * time.Second
	c := startNetClusterTimed(t, "250ms", nodeTimeout.String(), fairConfig, netNodeSpec{"h1", true}, netNodeSpec{"w1", false})
	h1, w1 := c.nodes["h1"], c.nodes["w1"]
	if out, errs, code := h1.ducc("admin", "vary-off", "h1"); code != 0 {
		t.Fatalf("vary-off h1: exit %d: %s %s", code, out, errs)
	}
	const items = 600
	id := netJob(t, c, h1, items, 2)
	before := waitNetJob(t, h1, id, 60*time.Second, "2 processes on w1 and progress", func(w wire.WorkInfo) bool {
		return len(runningProcs(w)) == 2 && w.Job != nil && w.Job.Done > 20
	})
	var oldPIDs []int
	for _, p := range runningProcs(before) {
		if p.Node != "w1" {
			t.Fatalf("process %s runs on %s; h1 is varied off", p.ID, p.Node)
		}
		oldPIDs = append(oldPIDs, p.PID)
	}

	// Freeze w1's agent (its workers go on) for twice node_timeout, and
	// at least until the head has declared it down.
	t0 := time.Now()
	if err := w1.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			_ = w1.cmd.Process.Signal(syscall.SIGCONT)
			resumed = true
		}
	}
	defer resume()
	time.Sleep(2 * nodeTimeout)
	for c.nodeState(h1, "w1") != "Down" {
		if time.Since(t0) > 60*time.Second {
			t.Fatalf("w1 not declared down within 60s of freezing its agent (node_timeout %s)", nodeTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	mid := netShow(t, h1, id)
	resume()
	t.Logf("w1's agent frozen for %v; the job had %d of %d items done", time.Since(t0).Round(time.Millisecond), mid.Job.Done, items)

	end := waitNetJob(t, h1, id, 3*time.Minute, "end", func(w wire.WorkInfo) bool { return w.Ended })
	if end.Completion != "EndOfJob" || end.Job.Done != items || end.Job.Failed != 0 || end.Job.Dispatched != 0 {
		t.Fatalf("job ended %s %q: %+v", end.Completion, end.Reason, end.Job)
	}
	lost := 0
	for _, p := range end.Procs {
		if p.State == wire.ProcLost {
			lost++
		}
	}
	if lost == 0 {
		t.Errorf("no process of w1 was written off while its agent was frozen: %+v", end.Procs)
	}
	checkResults(t, h1, id, items)

	// The head and w1 agree on what runs: the written-off processes are
	// stopped.
	deadline := time.Now().Add(60 * time.Second)
	for _, pid := range oldPIDs {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("written-off process %d still runs on w1", pid)
		}
	}
	if log := w1.agentLog(); !strings.Contains(log, "not wanted by the head") {
		t.Errorf("w1's agent did not stop the processes the head wrote off")
	}
}
