package agent

import (
	"slices"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// A desired state that replaces a queued one keeps its acknowledgements:
// the head sends each once (orch's delivered).
func TestAcceptDesiredKeepsAcks(t *testing.T) {
	a := &Agent{desire: make(chan wire.DesiredState, 1)}
	a.acceptDesired(wire.DesiredState{Version: 2, Ack: []string{"1.1", "2.1"}})
	a.acceptDesired(wire.DesiredState{Version: 3, Ack: []string{"2.1", "3.1"}})
	a.acceptDesired(wire.DesiredState{Version: 1, Ack: []string{"0.1"}}) // older: kept for its acks only
	ds := <-a.desire
	slices.Sort(ds.Ack)
	if ds.Version != 3 || !slices.Equal(ds.Ack, []string{"0.1", "1.1", "2.1", "3.1"}) {
		t.Errorf("queued %d %v; want version 3 with every acknowledgement", ds.Version, ds.Ack)
	}
}

// The reporter sends each process's newest state once, first queued
// first, and never lets a late start report replace an end.
func TestReporterBatches(t *testing.T) {
	r := newReporter()
	r.add(wire.ProcStatus{ID: "1.1", State: wire.ProcRunning, PID: 10})
	r.add(wire.ProcStatus{ID: "2.1", State: wire.ProcRunning, PID: 20})
	r.add(wire.ProcStatus{ID: "1.1", State: wire.ProcExited, PID: 10, ExitCode: 3})
	r.add(wire.ProcStatus{ID: "3.1", State: wire.ProcExited, ExitCode: 1})
	r.add(wire.ProcStatus{ID: "3.1", State: wire.ProcRunning}) // late: dropped
	select {
	case <-r.wake:
	default:
		t.Fatal("no wake-up queued")
	}
	got := r.take()
	want := []wire.ProcStatus{
		{ID: "1.1", State: wire.ProcExited, PID: 10, ExitCode: 3},
		{ID: "2.1", State: wire.ProcRunning, PID: 20},
		{ID: "3.1", State: wire.ProcExited, ExitCode: 1},
	}
	if !slices.EqualFunc(got, want, func(a, b wire.ProcStatus) bool {
		return a.ID == b.ID && a.State == b.State && a.ExitCode == b.ExitCode && a.PID == b.PID
	}) {
		t.Errorf("batch %+v, want %+v", got, want)
	}
	if again := r.take(); again != nil {
		t.Errorf("second take %+v, want nothing", again)
	}
}
