package orch

import (
	"testing"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

func TestDriverKeyRoundTrip(t *testing.T) {
	for _, id := range []uint64{1, 42, 1 << 40} {
		if got, inst := fromKey(drvKey(id)); got != id || inst != 0 || !isDriverKey(drvKey(id)) {
			t.Errorf("fromKey(drvKey(%d)) = %d, %d", id, got, inst)
		}
		if isDriverKey(id) || isDriverKey(svcKey(id, 3)) {
			t.Errorf("%d or its service key taken for a driver key", id)
		}
	}
}

// submitDriven submits a job whose items come from a driver process.
func (f *fixture) submitDriven(t *testing.T) uint64 {
	t.Helper()
	res, err := f.app.Apply(f.ctx, state.Command{Type: state.CmdSubmit, Time: 1, Work: &state.Work{
		Kind: wire.WorkJob, User: "alice", Class: "normal", Path: "worker", Memory: 1 << 30,
		Job: &state.Job{Spec: wire.JobSpec{Executable: "worker", DriverExecutable: "reader", DriverArgs: []string{"-n", "5"},
			DriverMemory: 512 << 20, Pipelines: 2, FailuresLimit: 5, MaxJobErrors: 5, InitFailuresCap: 5}, DriverClass: "fixed"}}})
	if err != nil {
		t.Fatal(err)
	}
	return res[0].ID
}

// A job's driver process is placed first, alone, in a fixed allocation;
// its job processes come once it is ready and items arrive.
func TestDriverPlacedFirst(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	id := f.submitDriven(t)
	f.o.Heartbeat(ctx, wire.Heartbeat{Node: "n1", Seq: 1, MemSchedulable: 8 << 30}, "peer1")
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	ds := f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Procs) == 1 })
	if p := ds.Procs[0]; p.Kind != wire.ProcDriver || p.Path != "reader" || len(p.Args) != 2 || p.MemoryLimit > 1<<30 {
		t.Fatalf("desired driver %+v", p)
	}
	drv := ds.Procs[0].ID
	f.o.Report(ctx, "n1", []wire.ProcStatus{{ID: drv, WorkID: id, State: wire.ProcRunning, PID: 42}})
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	f.fsm.View(func(v *state.View) {
		if w := v.Work(id); len(w.Procs) != 1 || w.State != state.StateWaitingForDriver {
			t.Fatalf("before the driver is ready: %s, %d processes", w.State, len(w.Procs))
		}
	})
	f.app.Apply(ctx, state.Command{Type: state.CmdReady, Time: 2, WorkID: id, ProcID: drv},
		state.Command{Type: state.CmdDriverItems, Time: 2, WorkID: id, ProcID: drv, Items: []string{"a", "b", "c"}})
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	ds = f.waitPush(t, "n1", func(ds wire.DesiredState) bool { return len(ds.Procs) >= 2 })
	for _, p := range ds.Procs {
		if p.ID != drv && (p.Kind != wire.ProcJob || p.Path != "worker") {
			t.Errorf("job process %+v", p)
		}
	}
	// The node dies: the driver is written off and the job ends.
	f.clock.Add(11 * time.Second)
	if err := f.o.cycle(ctx); err != nil {
		t.Fatal(err)
	}
	f.fsm.View(func(v *state.View) {
		if w := v.Work(id); w.Completion != state.CompletionDriverFailed {
			t.Errorf("after its node died: %s %s %q", w.State, w.Completion, w.Reason)
		}
	})
}
