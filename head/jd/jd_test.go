package jd

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/head/state/statetest"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// setup makes a job of n items with two running processes, 1.1 and 1.2.
func setup(t *testing.T, n int, js wire.JobSpec) (*state.FSM, *statetest.Applier, *clock) {
	f := state.New()
	app := &statetest.Applier{FSM: f}
	ctx := context.Background()
	items := make([]state.Item, n)
	for i := range items {
		items[i].Data = "x"
	}
	spec.JobDefaults(&js)
	if _, err := app.Apply(ctx, state.Command{Type: state.CmdSubmit, Time: 1, Last: true,
		Work: &state.Work{Kind: wire.WorkJob, User: "u", Job: &state.Job{Spec: js, Items: items}}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"1.1", "1.2"} {
		app.Apply(ctx, state.Command{Type: state.CmdAssign, Time: 2, WorkID: 1, Assign: &state.Assignment{Node: "n1", Shares: 1}})
		app.Apply(ctx, state.Command{Type: state.CmdProc, Time: 3, Proc: &wire.ProcStatus{ID: id, WorkID: 1, State: wire.ProcRunning, PID: 9, StartedAt: 3}})
	}
	return f, app, &clock{t: time.Unix(1_800_000_000, 0)}
}

func ex(t *testing.T, d *Driver, proc string, want int, held []int, outs ...wire.ItemOutcome) wire.ExchangeReply {
	t.Helper()
	rep, err := d.Exchange(context.Background(), wire.ExchangeRequest{JobID: 1, ProcID: proc, Ready: true, Want: want, Held: held, Outcomes: outs})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func indices(items []wire.WorkItem) []int {
	var out []int
	for _, it := range items {
		out = append(out, it.Index)
	}
	return out
}

func TestDispatchOutcomesAndRelease(t *testing.T) {
	f, app, c := setup(t, 5, wire.JobSpec{})
	d := New(f, app, c.now, slog.Default())
	a := ex(t, d, "1.1", 3, nil)
	b := ex(t, d, "1.2", 3, nil)
	if got := indices(a.Items); len(got) != 3 || got[0] != 0 {
		t.Fatalf("1.1 got %v", got)
	}
	if got := indices(b.Items); len(got) != 2 || got[0] != 3 {
		t.Fatalf("1.2 got %v (items must not be handed out twice)", got)
	}
	ex(t, d, "1.1", 0, nil, wire.ItemOutcome{Index: 0, OK: true}, wire.ItemOutcome{Index: 1, OK: true}, wire.ItemOutcome{Index: 2, OK: true})
	// 1.1 holds nothing and nothing is queued: it is released.
	if rep := ex(t, d, "1.1", 3, nil); !rep.Release {
		t.Errorf("idle process not released: %+v", rep)
	}
	ex(t, d, "1.2", 0, nil, wire.ItemOutcome{Index: 3, OK: true}, wire.ItemOutcome{Index: 4, OK: true})
	f.View(func(v *state.View) {
		if w := v.Work(1); w.Completion != state.CompletionEndOfJob {
			t.Errorf("job %s %s", w.State, w.Completion)
		}
	})
}

func TestRetryGoesFirstAndDeadProcessRequeues(t *testing.T) {
	f, app, c := setup(t, 6, wire.JobSpec{MaxItemRetries: 1})
	d := New(f, app, c.now, slog.Default())
	ex(t, d, "1.1", 2, nil)                                                 // items 0, 1
	ex(t, d, "1.2", 2, nil)                                                 // items 2, 3
	ex(t, d, "1.1", 0, []int{1}, wire.ItemOutcome{Index: 0, Error: "boom"}) // 0 failed once: retried
	rep := ex(t, d, "1.1", 1, []int{1})
	if got := indices(rep.Items); len(got) != 1 || got[0] != 0 {
		t.Fatalf("retry not first: %v", got)
	}
	// 1.2 dies: its items come back only once its end is recorded.
	if rep := ex(t, d, "1.1", 5, []int{0, 1}); len(rep.Items) != 2 || rep.Items[0].Index != 4 {
		t.Fatalf("items of a live process were handed out again: %v", indices(rep.Items))
	}
	app.Apply(context.Background(), state.Command{Type: state.CmdProc, Time: 9, Proc: &wire.ProcStatus{ID: "1.2", WorkID: 1, State: wire.ProcExited, ExitCode: -1}})
	d.ProcGone(context.Background(), 1, "1.2")
	rep = ex(t, d, "1.1", 5, []int{0, 1, 4, 5})
	if got := indices(rep.Items); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("re-queued items %v, want [2 3]", got)
	}
	f.View(func(v *state.View) {
		if j := v.Work(1).Job; j.Preempted != 2 || j.Retried != 1 {
			t.Errorf("stats %+v", j.Stats())
		}
	})
}

// TestOversizedResultIsAnItemError: a result over 64 KiB from an agent
// that did not check it is recorded as an item error, not cut.
func TestOversizedResultIsAnItemError(t *testing.T) {
	f, app, c := setup(t, 2, wire.JobSpec{})
	d := New(f, app, c.now, slog.Default())
	ex(t, d, "1.1", 2, nil)
	ex(t, d, "1.1", 0, nil, wire.ItemOutcome{Index: 0, OK: true, Result: `"` + strings.Repeat("x", wire.MaxResultSize-1) + `"`},
		wire.ItemOutcome{Index: 1, OK: true, Result: `"` + strings.Repeat("x", wire.MaxResultSize-2) + `"`})
	f.View(func(v *state.View) {
		items := v.Work(1).Job.Items
		if it := items[0]; it.State != state.ItemFailed || it.Result != "" || it.Error != "result of 65537 bytes exceeds 64 KiB" {
			t.Errorf("item 0 (65537 bytes): state %d, error %q, result of %d bytes", it.State, it.Error, len(it.Result))
		}
		if it := items[1]; it.State != state.ItemDone || len(it.Result) != wire.MaxResultSize {
			t.Errorf("item 1 (64 KiB): state %d, error %q, result of %d bytes", it.State, it.Error, len(it.Result))
		}
	})
}

func TestNewDriverWaitsForHolders(t *testing.T) {
	f, app, c := setup(t, 4, wire.JobSpec{})
	d := New(f, app, c.now, slog.Default())
	ex(t, d, "1.1", 2, nil) // 0, 1
	ex(t, d, "1.2", 1, nil) // 2: both ready now

	// A failover: a new driver knows nothing of what is in flight.
	d2 := New(f, app, c.now, slog.Default())
	if rep := ex(t, d2, "1.1", 4, []int{0, 1}); len(rep.Items) != 0 {
		t.Fatalf("new driver handed out %v before 1.2 reported", indices(rep.Items))
	}
	if rep := ex(t, d2, "1.2", 4, []int{2}); indices(rep.Items)[0] != 3 || len(rep.Items) != 1 {
		t.Fatalf("after every holder reported: %v, want [3]", indices(rep.Items))
	}
}

func TestItemTimeoutKillsAndBlamesOne(t *testing.T) {
	f, app, c := setup(t, 3, wire.JobSpec{PerItemTimeMaxMS: 1000})
	d := New(f, app, c.now, slog.Default())
	ex(t, d, "1.1", 3, nil)
	c.t = c.t.Add(2 * time.Second)
	d.Tick(context.Background(), c.t)
	var stop bool
	f.View(func(v *state.View) {
		for _, p := range v.Work(1).Procs {
			if p.ID == "1.1" {
				stop = p.Stop && p.StopCounts
			}
		}
	})
	if !stop {
		t.Fatal("process holding a timed-out item was not stopped")
	}
	app.Apply(context.Background(), state.Command{Type: state.CmdProc, Time: 9, Proc: &wire.ProcStatus{ID: "1.1", WorkID: 1, State: wire.ProcExited, ExitCode: -1}})
	d.ProcGone(context.Background(), 1, "1.1")
	f.View(func(v *state.View) {
		j := v.Work(1).Job
		if j.Failed != 1 || j.Items[0].State != state.ItemFailed || j.Preempted != 2 {
			t.Errorf("after timeout: failed %d, item 0 %d, re-queued %d", j.Failed, j.Items[0].State, j.Preempted)
		}
	})
}

// writeOff records that a process's node was declared down and tells the
// driver, as the orchestrator does.
func writeOff(t *testing.T, d *Driver, app *statetest.Applier, proc string) {
	t.Helper()
	if _, err := app.Apply(context.Background(), state.Command{Type: state.CmdProc, Time: 9, Proc: &wire.ProcStatus{
		ID: proc, WorkID: 1, State: wire.ProcLost, EndedAt: 9, ExitCode: -1, Reason: "node n1 stopped sending heartbeats"}}); err != nil {
		t.Fatal(err)
	}
	d.ProcGone(context.Background(), 1, proc)
}

// TestWrittenOffProcessComesBack: a process whose node was declared down
// (its agent was frozen) comes back and says what it holds and what it
// answered. Its items were re-queued when it was written off: it must not
// take them back (they would stay dispatched forever, the job never
// ends), and every item counts once.
func TestWrittenOffProcessComesBack(t *testing.T) {
	tests := []struct {
		name string
		// back is what the frozen process 1.2 says when it comes back,
		// before (false) or after (true) 1.1 took its re-queued items.
		late bool
		held []int
		outs []wire.ItemOutcome
	}{
		{name: "holds its items, before they are handed out again", held: []int{3, 4, 5}},
		{name: "holds its items, after they are handed out again", late: true, held: []int{3, 4, 5}},
		{name: "answers some, holds the rest", held: []int{4, 5}, outs: []wire.ItemOutcome{{Index: 3, OK: true, Result: "late"}}},
		{name: "answers some late", late: true, held: []int{5}, outs: []wire.ItemOutcome{{Index: 3, OK: true, Result: "late"}, {Index: 4, Error: "boom"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, app, c := setup(t, 8, wire.JobSpec{})
			d := New(f, app, c.now, slog.Default())
			ex(t, d, "1.1", 3, nil) // 0, 1, 2
			ex(t, d, "1.2", 3, nil) // 3, 4, 5
			writeOff(t, d, app, "1.2")
			held := map[int]bool{}
			if tt.late {
				rep := ex(t, d, "1.1", 5, []int{0, 1, 2})
				for _, i := range indices(rep.Items) {
					held[i] = true
				}
			}
			if rep := ex(t, d, "1.2", 3, tt.held, tt.outs...); !rep.Release || len(rep.Items) > 0 {
				t.Fatalf("a written-off process got %+v, want only a release", rep)
			}
			// 1.1 works through everything that is left.
			for i := range 3 {
				held[i] = true
			}
			for range 20 {
				var outs []wire.ItemOutcome
				for i := range held {
					outs = append(outs, wire.ItemOutcome{Index: i, OK: true, Result: "ok"})
				}
				clear(held)
				rep := ex(t, d, "1.1", 8, nil, outs...)
				for _, i := range indices(rep.Items) {
					held[i] = true
				}
				if rep.Release {
					break
				}
			}
			f.View(func(v *state.View) {
				w := v.Work(1)
				if w.Completion != state.CompletionEndOfJob || w.Job.Done != 8 || w.Job.Failed != 0 {
					t.Errorf("job %s %s: done %d failed %d of 8, %d in flight", w.State, w.Completion, w.Job.Done, w.Job.Failed, d.InFlight(1))
				}
			})
		})
	}
}

// TestTickRequeuesItemsOfEndedProcess: the end of a process holding items
// was recorded but the driver was not told (ProcGone missed): the next
// tick re-queues them, so the job still finishes.
func TestTickRequeuesItemsOfEndedProcess(t *testing.T) {
	f, app, c := setup(t, 4, wire.JobSpec{})
	d := New(f, app, c.now, slog.Default())
	ex(t, d, "1.1", 2, nil) // 0, 1
	ex(t, d, "1.2", 2, nil) // 2, 3
	if _, err := app.Apply(context.Background(), state.Command{Type: state.CmdProc, Time: 9, Proc: &wire.ProcStatus{
		ID: "1.2", WorkID: 1, State: wire.ProcLost, EndedAt: 9, ExitCode: -1}}); err != nil {
		t.Fatal(err)
	}
	if n := d.InFlight(1); n != 4 {
		t.Fatalf("in flight before the tick: %d, want 4", n)
	}
	d.Tick(context.Background(), c.t)
	if n := d.InFlight(1); n != 2 {
		t.Fatalf("in flight after the tick: %d, want 2 (those of 1.1)", n)
	}
	rep := ex(t, d, "1.1", 4, []int{0, 1})
	if got := indices(rep.Items); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("re-queued items %v, want [2 3]", got)
	}
	ex(t, d, "1.1", 0, nil, wire.ItemOutcome{Index: 0, OK: true}, wire.ItemOutcome{Index: 1, OK: true}, wire.ItemOutcome{Index: 2, OK: true}, wire.ItemOutcome{Index: 3, OK: true})
	f.View(func(v *state.View) {
		if w := v.Work(1); w.Completion != state.CompletionEndOfJob || w.Job.Done != 4 {
			t.Errorf("job %s %s, done %d", w.State, w.Completion, w.Job.Done)
		}
	})
}

// TestHeldSame: an exchange that says HeldSame is trusted only right after
// the exchange of the same feed the driver served last; otherwise the
// driver hands out nothing and drops Tracking, so that the agent lists
// what the process holds, and items it never received go back to the
// queue.
func TestHeldSame(t *testing.T) {
	const feed = 77
	full := func(seq uint64, want int, held []int, outs ...wire.ItemOutcome) wire.ExchangeRequest {
		return wire.ExchangeRequest{JobID: 1, ProcID: "1.1", Ready: true, Feed: feed, Seq: seq, Want: want, Held: held, HeldCount: len(held), Outcomes: outs}
	}
	same := func(seq uint64, want, count int, outs ...wire.ItemOutcome) wire.ExchangeRequest {
		return wire.ExchangeRequest{JobID: 1, ProcID: "1.1", Ready: true, Feed: feed, Seq: seq, Want: want, HeldSame: true, HeldCount: count, Outcomes: outs}
	}
	ok := func(i int) wire.ItemOutcome { return wire.ItemOutcome{Index: i, OK: true} }
	type step struct {
		req       wire.ExchangeRequest
		newDriver bool // a failover before this exchange
		items     []int
		tracking  bool
		release   bool
		inFlight  int // after the exchange
	}
	tests := []struct {
		name  string
		items int
		steps []step
	}{
		{name: "in step", items: 4, steps: []step{
			{req: full(1, 2, nil), items: []int{0, 1}, tracking: true, inFlight: 2},
			{req: same(2, 2, 1, ok(0)), items: []int{2, 3}, tracking: true, inFlight: 3},
			{req: same(3, 0, 0, ok(1), ok(2), ok(3)), tracking: true, inFlight: 0},
			// Nothing held, nothing queued: released (HeldCount, not a list).
			{req: same(4, 2, 0), release: true},
		}},
		{name: "a reply the agent never got", steps: []step{
			{req: full(1, 2, nil), items: []int{0, 1}, tracking: true, inFlight: 2},
			{req: same(2, 2, 2), items: []int{2, 3}, tracking: true, inFlight: 4}, // lost on the way back
			// The agent lists what it holds; 2 and 3 go back to the queue.
			{req: full(3, 2, []int{0, 1}), items: []int{2, 3}, tracking: true, inFlight: 4},
			{req: same(4, 0, 4, ok(0), ok(1), ok(2), ok(3)), tracking: true, inFlight: 0},
		}},
		{name: "a gap in the numbers", steps: []step{
			{req: full(1, 2, nil), items: []int{0, 1}, tracking: true, inFlight: 2},
			{req: same(3, 2, 1, ok(0)), inFlight: 1}, // outcomes kept, nothing handed out
			{req: same(4, 2, 1), inFlight: 1},        // still not trusted
			{req: full(5, 2, []int{1}), items: []int{2, 3}, tracking: true, inFlight: 3},
		}},
		{name: "an older exchange served late", steps: []step{
			{req: full(1, 2, nil), items: []int{0, 1}, tracking: true, inFlight: 2},
			{req: full(3, 2, []int{0, 1}), items: []int{2, 3}, tracking: true, inFlight: 4},
			// 2 came after 3: its list takes 2 and 3 back, and 2 goes out again.
			{req: full(2, 1, []int{0, 1}), items: []int{2}, tracking: true, inFlight: 3},
			{req: same(4, 0, 4), inFlight: 3}, // 3 was not the last one served
			{req: full(5, 0, []int{0, 1, 2, 3}), tracking: true, inFlight: 4},
		}},
		{name: "a new head", steps: []step{
			{req: full(1, 2, nil), items: []int{0, 1}, tracking: true, inFlight: 2},
			{req: same(2, 2, 2), newDriver: true},
			{req: full(3, 2, []int{0, 1}), items: []int{2, 3}, tracking: true, inFlight: 4},
		}},
		{name: "an agent that numbers nothing", steps: []step{
			{req: wire.ExchangeRequest{JobID: 1, ProcID: "1.1", Ready: true, Want: 2}, items: []int{0, 1}, inFlight: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, app, c := setup(t, cmp.Or(tt.items, 6), wire.JobSpec{})
			d := New(f, app, c.now, slog.Default())
			// 1.2 is ready and holds nothing, so a new driver's gate opens
			// once 1.1 has listed its items.
			ex(t, d, "1.2", 0, nil)
			for i, s := range tt.steps {
				if s.newDriver {
					d = New(f, app, c.now, slog.Default())
					ex(t, d, "1.2", 0, nil)
				}
				rep, err := d.Exchange(context.Background(), s.req)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got := indices(rep.Items); !slices.Equal(got, s.items) || rep.Tracking != s.tracking || rep.Release != s.release {
					t.Fatalf("step %d: items %v tracking %v release %v, want %v %v %v", i, got, rep.Tracking, rep.Release, s.items, s.tracking, s.release)
				}
				if n := d.InFlight(1); n != s.inFlight {
					t.Fatalf("step %d: %d items in flight, want %d", i, n, s.inFlight)
				}
			}
		})
	}
}

// TestCanceledJobItemsAreNotPreempted: the items a process of a canceled
// job held when it was stopped are not re-queued nor counted as preempted
// (they were counted in ducc_work_items_preempted_total); a process that
// goes while its job runs still re-queues and counts them.
func TestCanceledJobItemsAreNotPreempted(t *testing.T) {
	tests := []struct {
		name      string
		cancel    bool
		preempted int
	}{
		{"running job", false, 2},
		{"canceled job", true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, app, c := setup(t, 6, wire.JobSpec{})
			d := New(f, app, c.now, slog.Default())
			ctx := context.Background()
			ex(t, d, "1.2", 2, nil) // items 0, 1
			if tc.cancel {
				if _, err := app.Apply(ctx, state.Command{Type: state.CmdCancel, Time: 8, WorkID: 1, By: "u"}); err != nil {
					t.Fatal(err)
				}
			}
			app.Apply(ctx, state.Command{Type: state.CmdProc, Time: 9, Proc: &wire.ProcStatus{ID: "1.2", WorkID: 1, State: wire.ProcExited, ExitCode: -1}})
			d.ProcGone(ctx, 1, "1.2")
			f.View(func(v *state.View) {
				if got := v.Totals().ItemsPreempted; got != uint64(tc.preempted) {
					t.Errorf("items counted preempted: %d, want %d", got, tc.preempted)
				}
				if w := v.Work(1); w != nil && w.Job.Preempted != tc.preempted {
					t.Errorf("job's preempted items: %d, want %d", w.Job.Preempted, tc.preempted)
				}
			})
		})
	}
}
