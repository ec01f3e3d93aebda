package head_test

import (
	"testing"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

func TestSubmitJobWithDriver(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	f.node("n1", 8*gib)
	spec := wire.JobSpec{Executable: "/bin/worker", Memory: gib, DriverExecutable: "/bin/reader", DriverArgs: []string{"--corpus", "c"}}

	// A driver and items at once are refused.
	err := call(t, f.h, wire.MethodSubmit, alice, wire.SubmitJobRequest{Spec: spec, Items: []string{"a"}}, nil)
	wantErr(t, err, wire.CodeUsage, "gets its items from the driver process")

	id := f.submitJob(t, alice, wire.SubmitJobRequest{Spec: spec})
	if w := f.work(id); w.State != state.StateWaitingForDriver || w.Job.DriverClass != "fixed" || w.Job.Spec.DriverMemory != wire.DefaultDriverMemory {
		t.Fatalf("submitted: %s, driver class %q, memory %d", w.State, w.Job.DriverClass, w.Job.Spec.DriverMemory)
	}
	drv := f.waitProc(t, id)
	if !drv.IsDriver() || drv.Node != "n1" {
		t.Fatalf("first process %+v, want the driver", drv)
	}
	f.report(t, "n1", wire.ProcStatus{ID: drv.ID, WorkID: id, State: wire.ProcRunning, PID: 7, Node: "n1"})
	if info := f.show(t, id); info.State != string(state.StateWaitingForDriver) || info.Reason != "driver process "+drv.ID+" is initializing" {
		t.Errorf("before the driver is ready: %s %q", info.State, info.Reason)
	}
	var rep wire.DriverReply
	f.mustCall(t, wire.MethodDriver, root, wire.DriverRequest{JobID: id, ProcID: drv.ID, Node: "n1", Ready: true, Items: []string{"x", "y"}}, &rep)
	if rep.Have != 2 || rep.Room != 998 || rep.Stop {
		t.Fatalf("driver reply %+v", rep)
	}
	// An item over the size limit ends the job: the driver broke the protocol.
	big := make([]byte, 1<<20+1)
	f.mustCall(t, wire.MethodDriver, root, wire.DriverRequest{JobID: id, ProcID: drv.ID, Node: "n1", Ready: true, Base: 2, Items: []string{string(big)}}, &rep)
	info := f.show(t, id)
	if info.Completion != string(state.CompletionDriverFailed) || !rep.Stop {
		t.Fatalf("after an item of 1 MiB + 1: %s %q, reply %+v", info.Completion, info.Reason, rep)
	}
	var kinds []wire.ProcKind
	for _, p := range info.Procs {
		kinds = append(kinds, p.Kind)
	}
	if len(kinds) == 0 || kinds[0] != wire.ProcDriver {
		t.Errorf("show lists processes of kinds %v, want the driver first", kinds)
	}
}
