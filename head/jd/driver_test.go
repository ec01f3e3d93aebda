package jd

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/head/state/statetest"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// setupDriven makes a job whose items come from driver process 1.1.
func setupDriven(t *testing.T, js wire.JobSpec) (*state.FSM, *statetest.Applier, *clock) {
	f := state.New()
	app := &statetest.Applier{FSM: f}
	ctx := context.Background()
	js.Executable, js.DriverExecutable = "w", "d"
	spec.JobDefaults(&js)
	for _, c := range []state.Command{
		{Type: state.CmdSubmit, Time: 1, Work: &state.Work{Kind: wire.WorkJob, User: "u", Job: &state.Job{Spec: js, DriverClass: "fixed"}}},
		{Type: state.CmdAssign, Time: 2, WorkID: 1, Assign: &state.Assignment{Node: "n1", Shares: 1, Kind: wire.ProcDriver}},
		{Type: state.CmdProc, Time: 3, Proc: &wire.ProcStatus{ID: "1.1", WorkID: 1, State: wire.ProcRunning, PID: 9, StartedAt: 3}},
	} {
		if res, err := app.Apply(ctx, c); err != nil || res[0].Err != nil {
			t.Fatal(err, res)
		}
	}
	return f, app, &clock{}
}

func items(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint("item-", from+i)
	}
	return out
}

func drive(t *testing.T, d *Driver, req wire.DriverRequest) wire.DriverReply {
	t.Helper()
	req.JobID, req.ProcID, req.Ready = 1, "1.1", true
	rep, err := d.Pump(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestHighWater(t *testing.T) {
	for _, tc := range []struct{ pipelines, procs, want int }{
		{4, 0, 1000}, {4, 10, 1000}, {8, 40, 1280}, {0, 300, 1200},
	} {
		if got := HighWater(tc.pipelines, tc.procs); got != tc.want {
			t.Errorf("HighWater(%d, %d) = %d, want %d", tc.pipelines, tc.procs, got, tc.want)
		}
	}
}

// The job driver asks for items only while the job's queue is under its
// high-water mark, and a chunk sent twice is added once.
func TestDriverBackPressure(t *testing.T) {
	f, app, c := setupDriven(t, wire.JobSpec{Pipelines: 2})
	d := New(f, app, c.now, slog.Default())
	if rep := drive(t, d, wire.DriverRequest{}); rep.Have != 0 || rep.Room != 1000 || rep.Stop {
		t.Fatalf("ready: %+v, want room for 1000", rep)
	}
	f.View(func(v *state.View) {
		if w := v.Work(1); w.State != state.StateWaitingForResources || !w.Job.DriverReady {
			t.Fatalf("after ready: %s %+v", w.State, w.Job)
		}
	})
	if rep := drive(t, d, wire.DriverRequest{Base: 0, Items: items(0, 1000)}); rep.Have != 1000 || rep.Room != 0 {
		t.Fatalf("after 1000 items: %+v, want no room", rep)
	}
	// The same chunk again (its answer was lost): nothing is added.
	if rep := drive(t, d, wire.DriverRequest{Base: 0, Items: items(0, 1000)}); rep.Have != 1000 || rep.Room != 0 {
		t.Fatalf("chunk resent: %+v", rep)
	}
	// A job process takes 10 items: room for 10.
	ctx := context.Background()
	app.Apply(ctx, state.Command{Type: state.CmdAssign, Time: 4, WorkID: 1, Assign: &state.Assignment{Node: "n1", Shares: 1}})
	app.Apply(ctx, state.Command{Type: state.CmdProc, Time: 5, Proc: &wire.ProcStatus{ID: "1.2", WorkID: 1, State: wire.ProcRunning, PID: 10, StartedAt: 5}})
	if got := indices(ex(t, d, "1.2", 10, nil).Items); len(got) != 10 || got[0] != 0 {
		t.Fatalf("the job process got %v", got)
	}
	if rep := drive(t, d, wire.DriverRequest{Base: 1000}); rep.Room != 10 {
		t.Fatalf("after 10 dispatched: %+v, want room for 10", rep)
	}
	drive(t, d, wire.DriverRequest{Base: 1000, Items: items(1000, 10)})
	// A long poll returns once half the high-water mark was dispatched
	// (its clock never passes the deadline: it returns on the dispatch).
	got := make(chan wire.DriverReply, 1)
	go func() {
		rep, _ := d.Pump(ctx, wire.DriverRequest{JobID: 1, ProcID: "1.1", Ready: true, Base: 1010, WaitMS: 1000})
		got <- rep
	}()
	ex(t, d, "1.2", 600, nil) // it says it holds none of its 10: they go back to the queue
	if rep := <-got; rep.Room < 500 {
		t.Fatalf("long poll: %+v, want room for at least half the high-water mark", rep)
	}
	// The last chunk commits the job; the driver is asked for nothing more.
	if rep := drive(t, d, wire.DriverRequest{Base: 1010, Items: items(1010, 1), End: true}); !rep.Stop || rep.Have != 1011 {
		t.Fatalf("end: %+v", rep)
	}
	f.View(func(v *state.View) {
		if j := v.Work(1).Job; !j.Committed || len(j.Items) != 1011 || j.Items[1010].Data != "item-1010" {
			t.Fatalf("after the end: committed %v, %d items", j.Committed, len(j.Items))
		}
	})
}

func TestDriverRefusals(t *testing.T) {
	f, app, c := setupDriven(t, wire.JobSpec{})
	d := New(f, app, c.now, slog.Default())
	if _, err := d.Pump(context.Background(), wire.DriverRequest{JobID: 1, ProcID: "1.7", Ready: true}); wire.ErrorCode(err) != wire.CodeUsage {
		t.Errorf("unknown driver process: %v", err)
	}
	drive(t, d, wire.DriverRequest{})
	if _, err := d.Pump(context.Background(), wire.DriverRequest{JobID: 1, ProcID: "1.1", Base: 5, Items: items(5, 1)}); wire.ErrorCode(err) != wire.CodeUsage {
		t.Errorf("a gap: %v", err)
	}
	app.Apply(context.Background(), state.Command{Type: state.CmdCancel, Time: 9, WorkID: 1, By: "u"})
	if rep := drive(t, d, wire.DriverRequest{Base: 0, Items: items(0, 3)}); !rep.Stop {
		t.Errorf("canceled job: %+v, want stop", rep)
	}
	f.View(func(v *state.View) {
		if n := len(v.Work(1).Job.Items); n != 0 {
			t.Errorf("a canceled job took %d items", n)
		}
	})
}

// A driver that does not say ready within process_initialization_time_max
// is stopped, and the job ends DriverInitializationFailure saying so.
func TestDriverInitTimeLimit(t *testing.T) {
	f, app, c := setupDriven(t, wire.JobSpec{InitTimeMaxMS: 1000})
	d := New(f, app, c.now, slog.New(slog.DiscardHandler))
	c.t = time.UnixMilli(3).Add(500 * time.Millisecond)
	d.Tick(context.Background(), c.t)
	c.t = c.t.Add(time.Second)
	d.Tick(context.Background(), c.t)
	f.View(func(v *state.View) {
		if p := v.Work(1).Procs[0]; !p.Stop || !p.StopCounts {
			t.Fatalf("the driver was not stopped: %+v", p)
		}
	})
	app.Apply(context.Background(), state.Command{Type: state.CmdProc, Time: 9, Proc: &wire.ProcStatus{ID: "1.1", WorkID: 1, State: wire.ProcExited, ExitCode: -1, Signal: "SIGTERM", Reason: "killed by SIGTERM"}})
	f.View(func(v *state.View) {
		if w := v.Work(1); w.Completion != state.CompletionDriverInitFailure || !strings.Contains(w.Reason, "did not initialize within 1s") {
			t.Errorf("job ended %s %q", w.Completion, w.Reason)
		}
	})
}
