package head_test

import (
	"strings"
	"testing"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// One process of a job can be canceled (DUCC's --dpid): it is stopped, its
// items go back to the queue for the job's other processes, and the job
// is neither canceled nor charged a failure.
func TestCancelOneJobProcess(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 8*gib)
	id := f.submitJob(t, alice, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/w", Memory: 2 * gib, Pipelines: 2},
		Items: []string{"a", "b", "c"}})
	p := f.waitProc(t, id)
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcRunning, PID: 11})
	var rep wire.ExchangeReply
	f.mustCall(t, wire.MethodExchange, root, wire.ExchangeRequest{JobID: id, Node: "n1", ProcID: p.ID, Ready: true, Want: 2}, &rep)
	if len(rep.Items) != 2 {
		t.Fatalf("the process got %d items, want 2", len(rep.Items))
	}

	// Refusals first: another user, a run, a process the job lacks.
	err := call(t, f.h, wire.MethodCancel, bob, wire.CancelRequest{ID: id, Process: p.ID}, &wire.WorkInfo{})
	wantErr(t, err, wire.CodeUsage, "belongs to alice")
	run := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true"})
	err = call(t, f.h, wire.MethodCancel, alice, wire.CancelRequest{ID: run, Process: "x"}, &wire.WorkInfo{})
	wantErr(t, err, wire.CodeUsage, "only a job's processes can be canceled one by one")
	err = call(t, f.h, wire.MethodCancel, alice, wire.CancelRequest{ID: id, Process: "99.9"}, &wire.WorkInfo{})
	wantErr(t, err, wire.CodeUsage, "has no process 99.9", p.ID)

	var info wire.WorkInfo
	f.mustCall(t, wire.MethodCancel, alice, wire.CancelRequest{ID: id, Process: p.ID, Reason: "stuck"}, &info)
	if info.Ended || f.work(id).Canceling {
		t.Fatalf("canceling one process canceled the job: %+v", info)
	}
	eventually(t, "n1 is told to stop the process", func() bool {
		ds, ok := f.push.last("n1")
		for _, sp := range ds.Procs {
			if sp.ID == p.ID {
				return ok && sp.Stop
			}
		}
		return false
	})
	if w := f.work(id); !strings.Contains(w.Procs[0].StopReason, "canceled by alice: stuck") || w.Procs[0].StopCounts {
		t.Errorf("stop reason %q counts %v", w.Procs[0].StopReason, w.Procs[0].StopCounts)
	}
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcExited, ExitCode: -1, Signal: "TERM"})
	eventually(t, "the process's items are queued again", func() bool {
		info := f.show(t, id)
		return info.Job.Dispatched == 0 && !info.Ended
	})
	if w := f.work(id); w.Job.ProcFailures != 0 || w.State == state.StateCompleted {
		t.Errorf("the canceled process counted as a failure: %d failures, state %s", w.Job.ProcFailures, w.State)
	}
}

// As DUCC allows: a reservation in a FIXED_SHARE class (memory in shares,
// not a whole machine) and a job in a RESERVE class (each process a whole
// machine of exactly its memory) are admitted and placed.
func TestClassPoliciesAsDUCC(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 8*gib)
	var rep wire.SubmitReply
	f.mustCall(t, wire.MethodReserve, alice, wire.ReserveRequest{Memory: gib, Class: "fixed"}, &rep)
	eventually(t, "the FIXED_SHARE reservation holds 1 GiB on n1", func() bool {
		w := f.work(rep.ID)
		return len(w.Procs) == 1 && w.Procs[0].Node == "n1" && w.Procs[0].MemoryLimit == gib
	})
	id := f.submitJob(t, bob, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/w", Memory: 8 * gib, Class: "reserve"},
		Items: []string{"a"}})
	if w := f.work(id); w.Class != "reserve" {
		t.Fatalf("job class %q", w.Class)
	}
}
