package state

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// historyFixture: managed 1 (alice) ran on n1 and ended at 1000; job 2
// (bob, three items) ran on n1 and n2 and ended at 2000, its process on n2
// still being stopped; managed 3 (alice) runs.
func historyFixture(t *testing.T) (*FSM, *uint64) {
	t.Helper()
	f := New()
	idx := uint64(0)
	next := func(cmds ...Command) []Result {
		idx++
		return apply(t, f, idx, cmds...)
	}
	m := managed()
	m.Description = "first"
	next(Command{Type: CmdSubmit, Time: 100, Work: m})
	job := &Work{Kind: wire.WorkJob, User: "bob", Class: "normal", Memory: 1 << 30,
		Job: &Job{Spec: wire.JobSpec{MaxJobErrors: 5, MaxItemRetries: 1, FailuresLimit: 2},
			Items: []Item{{Data: "a"}, {Data: "b"}, {Data: "c"}}}}
	next(Command{Type: CmdSubmit, Time: 200, Work: job, Last: true})
	next(Command{Type: CmdSubmit, Time: 300, Work: managed()})
	next(Command{Type: CmdAssign, Time: 400, WorkID: 1, Assign: &Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}})
	next(Command{Type: CmdProc, Time: 500, Proc: &wire.ProcStatus{ID: "1.1", WorkID: 1, State: wire.ProcRunning, PID: 9, StartedAt: 450}})
	next(Command{Type: CmdProc, Time: 1000, Proc: &wire.ProcStatus{ID: "1.1", WorkID: 1, State: wire.ProcExited, ExitCode: 3,
		EndedAt: 990, MaxRSS: 5 << 20, CPUSeconds: 1.5}})
	next(Command{Type: CmdAssign, Time: 1100, WorkID: 2, Assign: &Assignment{Node: "n1", Shares: 2, MemoryLimit: 2 << 30}},
		Command{Type: CmdAssign, Time: 1100, WorkID: 2, Assign: &Assignment{Node: "n2", Shares: 2, MemoryLimit: 2 << 30}})
	for _, id := range []string{"2.1", "2.2"} {
		next(Command{Type: CmdProc, Time: 1200, Proc: &wire.ProcStatus{ID: id, WorkID: 2, State: wire.ProcRunning, PID: 7, StartedAt: 1150}})
		next(Command{Type: CmdReady, Time: 1300, WorkID: 2, ProcID: id, InitMS: 10})
	}
	next(Command{Type: CmdOutcomes, Time: 1500, WorkID: 2, ProcID: "2.1", Outcomes: []wire.ItemOutcome{
		{Index: 0, OK: true, Result: `"A"`}, {Index: 1, OK: false, Error: "boom"}}})
	next(Command{Type: CmdOutcomes, Time: 2000, WorkID: 2, ProcID: "2.2", Outcomes: []wire.ItemOutcome{
		{Index: 1, OK: true, Result: `"B"`}, {Index: 2, OK: true, Result: `"C"`}}})
	next(Command{Type: CmdProc, Time: 2100, Proc: &wire.ProcStatus{ID: "2.1", WorkID: 2, State: wire.ProcExited, MaxRSS: 7 << 20, CPUSeconds: 2}})
	f.View(func(v *View) {
		if w := v.Work(2); !w.Ended() || w.EndedAt != 2000 || len(w.Live()) != 1 {
			t.Fatalf("fixture: job 2 is %s at %d with %d live processes", w.State, w.EndedAt, len(w.Live()))
		}
	})
	return f, &idx
}

func TestPurge(t *testing.T) {
	f, idx := historyFixture(t)
	purge := func(time int64, p Purge) Result {
		*idx++
		return apply(t, f, *idx, Command{Type: CmdPurge, Time: time, Purge: &p})[0]
	}
	// Nothing has ended before 500: nothing goes.
	if r := purge(5000, Purge{Work: 500}); r.Err != nil || r.Count != 0 {
		t.Fatalf("early purge: %+v", r)
	}
	f.View(func(v *View) {
		if at, ok := v.NextPurge(100, 1000, 5000); !ok || at != 1100 {
			t.Errorf("next purge at %d %v, want 1100 (work 1 ended at 1000)", at, ok)
		}
	})
	// Work 1 goes; job 2 ended later; managed 3 runs.
	if r := purge(5000, Purge{Work: 1500}); r.Count != 1 {
		t.Fatalf("purge at 1500 removed %d, want 1", r.Count)
	}
	f.View(func(v *View) {
		if v.Work(1) != nil || v.Work(2) == nil || v.Work(3) == nil {
			t.Fatalf("after the first purge: %v %v %v", v.Work(1), v.Work(2), v.Work(3))
		}
		want := &Record{ID: 1, Kind: wire.WorkManaged, User: "alice", Class: "fixed", Description: "first",
			SubmittedAt: 100, StartedAt: 450, EndedAt: 1000, Completion: CompletionProgramExit, Reason: "", ExitCode: 3,
			Memory: 1 << 30, MemoryLimit: 1 << 30, MaxRSS: 5 << 20, CPUSeconds: 1.5, Procs: 1, Nodes: []string{"n1"}, NodeCount: 1,
			WorkPurgedAt: 5000}
		if got := v.Record(1); !reflect.DeepEqual(got, want) {
			t.Errorf("record 1:\n got %+v\nwant %+v", got, want)
		}
		// Job 2's process on n2 is still being stopped: nothing is due.
		if at, ok := v.NextPurge(0, 0, 100_000); !ok || at != 101_000 {
			t.Errorf("next purge at %d %v, want the record's 101000", at, ok)
		}
	})
	if r := purge(6000, Purge{Work: 3000}); r.Count != 0 {
		t.Fatalf("purged job 2 with a process still stopping: %d", r.Count)
	}
	*idx++
	apply(t, f, *idx, Command{Type: CmdProc, Time: 2200, Proc: &wire.ProcStatus{ID: "2.2", WorkID: 2, State: wire.ProcExited, MaxRSS: 3 << 20, CPUSeconds: 0.5}})
	// Job 2 goes; its items are held (it ended after the results cut-off).
	if r := purge(7000, Purge{Work: 3000, Results: 1000}); r.Count != 1 {
		t.Fatalf("purge of job 2 removed %d, want 1", r.Count)
	}
	f.View(func(v *View) {
		r := v.Record(2)
		if r == nil || v.Work(2) != nil {
			t.Fatalf("job 2 not purged: %v", r)
		}
		if r.Items != 3 || r.Done != 3 || r.Failed != 0 || r.Retried != 1 || r.MaxRSS != 7<<20 || r.CPUSeconds != 2.5 ||
			r.MemoryLimit != 2<<30 || !slices.Equal(r.Nodes, []string{"n1", "n2"}) || r.Procs != 2 || r.ItemsPurgedAt != 0 ||
			r.Completion != CompletionEndOfJob {
			t.Errorf("record 2: %+v", r)
		}
		if items := v.HeldItems(2); len(items) != 3 || items[2].Result != `"C"` {
			t.Errorf("held items of job 2: %+v", items)
		}
	})
	// The items go, the record stays; then record 1 goes.
	if r := purge(8000, Purge{Work: 3000, Results: 2500}); r.Count != 1 {
		t.Fatalf("purge of the items removed %d, want 1", r.Count)
	}
	if r := purge(9000, Purge{Work: 3000, Results: 2500, History: 1500}); r.Count != 1 {
		t.Fatalf("purge of record 1 removed %d, want 1", r.Count)
	}
	f.View(func(v *View) {
		if v.HeldItems(2) != nil || v.Record(2).ItemsPurgedAt != 8000 {
			t.Errorf("items of job 2 not purged: %+v", v.Record(2))
		}
		if v.Record(1) != nil {
			t.Errorf("record 1 outlived the history cut-off")
		}
		if v.Work(3) == nil || v.Work(3).Ended() {
			t.Errorf("running work 3 was touched")
		}
		if _, ok := v.NextPurge(0, 0, 0); !ok {
			t.Errorf("record 2 should be due some time")
		}
	})
	if r := purge(9000, Purge{Work: 3000, Results: 2500, History: 9000}); r.Count != 1 {
		t.Fatalf("purge of record 2 removed %d, want 1", r.Count)
	}
	f.View(func(v *View) {
		if _, ok := v.NextPurge(0, 0, 0); ok {
			t.Errorf("nothing is left, yet a purge is due")
		}
	})
	*idx++
	if r := apply(t, f, *idx, Command{Type: CmdPurge, Time: 1})[0]; r.Err == nil {
		t.Errorf("a purge without cut-offs is accepted")
	}
}

// Work older than the history kept leaves nothing behind; a job purged
// after its results cut-off has its items dropped at once.
func TestPurgeLongAgo(t *testing.T) {
	f, idx := historyFixture(t)
	*idx++
	apply(t, f, *idx, Command{Type: CmdProc, Time: 2200, Proc: &wire.ProcStatus{ID: "2.2", WorkID: 2, State: wire.ProcExited}})
	*idx++
	res := apply(t, f, *idx, Command{Type: CmdPurge, Time: 9000, Purge: &Purge{Work: 5000, Results: 5000, History: 1500}})
	if res[0].Count != 2 {
		t.Fatalf("removed %d, want 2", res[0].Count)
	}
	f.View(func(v *View) {
		if v.Record(1) != nil {
			t.Errorf("work 1 ended before the history cut-off but has a record")
		}
		if r := v.Record(2); r == nil || r.ItemsPurgedAt != 9000 || v.HeldItems(2) != nil {
			t.Errorf("job 2: %+v", r)
		}
	})
}

func TestHistoryQuery(t *testing.T) {
	f, idx := historyFixture(t)
	*idx++
	apply(t, f, *idx, Command{Type: CmdPurge, Time: 5000, Purge: &Purge{Work: 1500}})
	// Record 1 comes from the store, job 2 from the live state.
	ids := func(q HistoryQuery) (out []uint64, more bool) {
		if q.Limit == 0 {
			q.Limit = 100
		}
		if q.Scan == 0 {
			q.Scan = 100
		}
		var recs []Record
		f.View(func(v *View) { recs, _, _, more = v.History(q) })
		for _, r := range recs {
			out = append(out, r.ID)
		}
		return out, more
	}
	tests := []struct {
		name string
		q    HistoryQuery
		want []uint64
	}{
		{name: "all", want: []uint64{1, 2}},
		{name: "user", q: HistoryQuery{User: "bob"}, want: []uint64{2}},
		{name: "class", q: HistoryQuery{Class: "fixed"}, want: []uint64{1}},
		{name: "completion", q: HistoryQuery{Completions: []string{"endofjob", "Error"}}, want: []uint64{2}},
		{name: "since", q: HistoryQuery{Since: 1001}, want: []uint64{2}},
		{name: "until", q: HistoryQuery{Until: 2000}, want: []uint64{1}},
		{name: "range", q: HistoryQuery{Since: 1000, Until: 2001}, want: []uint64{1, 2}},
		{name: "after", q: HistoryQuery{AfterEnd: 1000, AfterID: 1}, want: []uint64{2}},
		{name: "nobody", q: HistoryQuery{User: "carol"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, more := ids(tc.q)
			if !slices.Equal(got, tc.want) || more {
				t.Errorf("got %v (more %v), want %v", got, more, tc.want)
			}
		})
	}
	// Paging: one record per page, then a scan bound with a filter.
	var got []uint64
	q := HistoryQuery{Limit: 1, Scan: 100}
	for range 4 {
		var recs []Record
		var more bool
		f.View(func(v *View) { recs, q.AfterEnd, q.AfterID, more = v.History(q) })
		for _, r := range recs {
			got = append(got, r.ID)
		}
		if !more {
			break
		}
	}
	if !slices.Equal(got, []uint64{1, 2}) {
		t.Errorf("paged: %v", got)
	}
	if got, more := ids(HistoryQuery{User: "bob", Scan: 1}); len(got) != 0 || !more {
		t.Errorf("scan bound: %v more %v", got, more)
	}
}

// A purge is a deterministic command: a replica restored from a snapshot
// at any point, that then applies the same entries, holds the same work,
// history and held items as one that applied them all.
func TestPurgeSurvivesSnapshots(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			g := &cmdGen{r: rand.New(rand.NewPCG(seed, 7))}
			f, r := New(), New()
			for step := 1; step <= 1500; step++ {
				var c Command
				f.View(func(v *View) { c = g.command(v) })
				if step%7 == 0 {
					c = Command{Type: CmdPurge, Time: g.now, Purge: &Purge{
						Work: g.now - 3000, Results: g.now - 6000 - int64(g.r.IntN(3000)), History: g.now - 20_000}}
				}
				apply(t, f, uint64(step), c)
				apply(t, r, uint64(step), c)
				if step%200 == 0 {
					r = restored(t, r)
					checkIndex(t, r, fmt.Sprint("restored at ", step))
				}
			}
			checkIndex(t, f, "end")
			compareHistory(t, f, r)
			compareHistory(t, f, restored(t, f))
			var recs int
			f.View(func(v *View) {
				all, _, _, _ := v.History(HistoryQuery{Limit: 1 << 30, Scan: 1 << 30})
				recs = len(all)
				for _, w := range v.All() {
					if v.Record(w.ID) != nil {
						t.Errorf("work %d is both in the state and in the history", w.ID)
					}
				}
			})
			if recs == 0 {
				t.Errorf("no history at all: the test purges nothing")
			}
		})
	}
}

func compareHistory(t *testing.T, a, b *FSM) {
	t.Helper()
	type view struct {
		work    []*Work
		recs    []Record
		held    map[uint64][]Item
		next    int64
		nextOK  bool
		nextID  uint64
		records int
	}
	read := func(f *FSM) view {
		var x view
		f.View(func(v *View) {
			x.work, x.nextID = v.All(), v.NextID()
			x.recs, _, _, _ = v.History(HistoryQuery{Limit: 1 << 30, Scan: 1 << 30})
			x.held = map[uint64][]Item{}
			for _, r := range x.recs {
				if items := v.HeldItems(r.ID); items != nil {
					x.held[r.ID] = items
				}
				if v.Record(r.ID) != nil {
					x.records++
				}
			}
			x.next, x.nextOK = v.NextPurge(3000, 6000, 20_000)
		})
		return x
	}
	va, vb := read(a), read(b)
	if !reflect.DeepEqual(va, vb) {
		t.Errorf("replicas differ: %d/%d work, %d/%d history records (%d/%d purged), %d/%d held, next purge %d/%d",
			len(va.work), len(vb.work), len(va.recs), len(vb.recs), va.records, vb.records, len(va.held), len(vb.held), va.next, vb.next)
	}
}

// A snapshot of an older ducc has no history part: it restores with an
// empty history, and its finished work is queued for purging.
func TestRestoreSnapshotWithoutHistory(t *testing.T) {
	var buf bytes.Buffer
	w := Work{ID: 4, Kind: wire.WorkManaged, User: "alice", State: StateCompleted, Completion: CompletionProgramExit, EndedAt: 700}
	if err := wire.WriteMsg(&buf, snapHeader{Version: 1, NextID: 5, Count: 1}); err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteMsg(&buf, &w); err != nil {
		t.Fatal(err)
	}
	f := New()
	if err := f.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	f.View(func(v *View) {
		if at, ok := v.NextPurge(100, 100, 100); !ok || at != 800 {
			t.Errorf("next purge %d %v, want 800", at, ok)
		}
		if recs, _, _, _ := v.History(HistoryQuery{Limit: 10, Scan: 10}); len(recs) != 1 || recs[0].ID != 4 {
			t.Errorf("history %+v", recs)
		}
	})
	apply(t, f, 1, Command{Type: CmdPurge, Time: 900, Purge: &Purge{Work: 800, Results: 800}})
	f.View(func(v *View) {
		if v.Work(4) != nil || v.Record(4) == nil {
			t.Errorf("work 4 not purged into a record")
		}
	})
}
