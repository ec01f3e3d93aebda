package head

import (
	"slices"
	"testing"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// TestReasonCodeTable: every scheduler wait code has a reason code, and
// every reason code is listed (and so documented).
func TestReasonCodeTable(t *testing.T) {
	for c := rm.WaitResources; c <= rm.HeldInitFailures; c++ {
		r, ok := reasonCodes[c]
		if !ok {
			t.Errorf("wait code %d has no reason code", c)
		}
		if !slices.Contains(wire.ReasonCodes, r) {
			t.Errorf("reason code %q of wait code %d is not in wire.ReasonCodes", r, c)
		}
	}
}

func TestStopTextAndNodes(t *testing.T) {
	w := &state.Work{Kind: wire.WorkJob, Procs: []*state.Proc{
		{ID: "1.1", Node: "n1", State: wire.ProcExited, Stop: true, StopReason: "work completed", ExitCode: 143},
		{ID: "1.2", Node: "n2", State: wire.ProcExited, Stop: true, StopReason: "preempted"},
		{ID: "1.3", Node: "n3", State: wire.ProcExited, Stop: true, StopReason: "item timed out", StopCounts: true},
		{ID: "1.4", Node: "n1", State: wire.ProcExited, ExitCode: 1},
	}}
	for i, want := range []string{"job ended", "preempted", "", ""} {
		if got := stopText(w, w.Procs[i]); got != want {
			t.Errorf("process %s: stopped %q, want %q", w.Procs[i].ID, got, want)
		}
	}
	if got := liveNodes(w); !slices.Equal(got, []string{"n1", "n2", "n3"}) {
		t.Errorf("nodes of ended work %v, want every node once", got)
	}
	w.Procs = append(w.Procs, &state.Proc{ID: "1.5", Node: "n4", State: wire.ProcRunning},
		&state.Proc{ID: "1.6", Node: "n2", State: wire.ProcRunning}, &state.Proc{ID: "1.7", Node: "n4", State: wire.ProcRunning})
	if got := liveNodes(w); !slices.Equal(got, []string{"n4", "n2"}) {
		t.Errorf("nodes of running work %v, want those of its live processes", got)
	}
}
