package rm

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDuplicatesInSnapshot: a node, a work or a process id listed twice is
// taken once, the first wins, and the trace says so.
func TestDuplicatesInSnapshot(t *testing.T) {
	cfg := flat(DefaultConfig())
	a := Work{ID: 1, Kind: ManagedReservation, User: "u", Class: "fixed", Memory: 4 * GiB, SubmitTime: t0,
		Procs: []Proc{{ID: "7.1", Node: "a", State: ProcRunning, StartedAt: t0}}}
	b := Work{ID: 2, Kind: ManagedReservation, User: "u", Class: "fixed", Memory: 4 * GiB, SubmitTime: t0.Add(time.Second),
		Procs: []Proc{{ID: "7.1", Node: "b", State: ProcRunning, StartedAt: t0}}}
	c := job(3, "v", "normal", 4*GiB, 10)
	in := Input{Now: t0.Add(time.Minute), Config: cfg,
		Nodes: []Node{{Name: "a", MemSchedulable: 8 * GiB}, {Name: "b", MemSchedulable: 4 * GiB}, {Name: "a", MemSchedulable: 64 * GiB}},
		Work:  []Work{a, b, {ID: 1, Kind: Job, User: "x", Class: "normal", Memory: GiB, SubmitTime: t0, ItemsRemaining: 5}, c}}
	p := Schedule(in)
	for _, want := range []string{"node a listed twice; using the first", "work 1 listed twice; using the first", "process id 7.1 appears twice; ignoring the second"} {
		if !slices.ContainsFunc(p.Trace, func(l string) bool { return strings.Contains(l, want) }) {
			t.Errorf("trace lacks %q", want)
		}
	}
	// Work 2 lost its process to the duplicate id, so it is started again,
	// beside work 1 on a (8 GiB: the first a); the job gets b, the only
	// space left.
	starts := map[uint64][]string{}
	for _, s := range p.Starts {
		starts[s.WorkID] = append(starts[s.WorkID], s.Node)
	}
	if got := starts[2]; len(got) != 1 || got[0] != "a" {
		t.Errorf("work 2 starts on %v, want [a]", got)
	}
	if got := starts[3]; len(got) != 1 || got[0] != "b" {
		t.Errorf("job 3 starts on %v, want [b]", got)
	}
	if len(starts[1]) != 0 {
		t.Errorf("work 1 started again on %v", starts[1])
	}
}

// TestSubmitOrder: works are ordered by time.Time.Compare on their submit
// times, then id, with or without monotonic clock readings.
func TestSubmitOrder(t *testing.T) {
	now := time.Now() // has a monotonic reading
	for name, base := range map[string]time.Time{"wall": t0, "monotonic": now} {
		ws := []Work{{ID: 5, SubmitTime: base.Add(time.Second)}, {ID: 3, SubmitTime: base}, {ID: 4, SubmitTime: base},
			{ID: 1, SubmitTime: base.Add(time.Nanosecond)}, {ID: 2, SubmitTime: base.Add(-time.Hour)}}
		var keys []workKey
		for i := range ws {
			keys = append(keys, newWorkKey(&ws[i], i))
		}
		sortWorkKeys(keys)
		var got []uint64
		for _, k := range keys {
			got = append(got, ws[k.i].ID)
		}
		if want := []uint64{2, 3, 4, 1, 5}; !slices.Equal(got, want) {
			t.Errorf("%s: order %v, want %v", name, got, want)
		}
	}
}
