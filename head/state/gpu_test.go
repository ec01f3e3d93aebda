package state

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// The GPUs the scheduler assigned a process travel in its assignment into
// the process record, survive a snapshot and restore (what a new head
// rebuilds the allocation from), and count in its accounting record.
func TestGPUAssignmentDurable(t *testing.T) {
	tests := []struct {
		name    string
		work    *Work
		assign  Assignment
		wantDev float64 // devices held for accounting
	}{
		{"whole GPUs", &Work{Kind: wire.WorkManaged, User: "a", Class: "fixed", Memory: 1 << 30, Path: "true", GPUs: 2},
			Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30, GPUs: []string{"GPU-a", "GPU-b"}}, 2},
		{"a slice", &Work{Kind: wire.WorkManaged, User: "a", Class: "fixed", Memory: 1 << 30, Path: "true", GPUMemory: 20 << 30, GPUModel: "H100"},
			Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30, GPUs: []string{"GPU-b"}, GPUSlice: 20 << 30, GPUDeviceMemory: 80 << 30}, 0.25},
		{"a reservation holds its node's GPUs", &Work{Kind: wire.WorkReservation, User: "a", Class: "reserve", Memory: 64 << 30, GPUs: 1},
			Assignment{Node: "n1", Shares: 64, MemoryLimit: 64 << 30, GPUs: []string{"GPU-a", "GPU-b"}}, 2},
		{"no GPUs", managed(), Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := New()
			res := apply(t, f, 1, Command{Type: CmdSubmit, Time: 1000, Work: tc.work})
			id := res[0].ID
			a := tc.assign
			res = apply(t, f, 2, Command{Type: CmdAssign, Time: 2000, WorkID: id, Assign: &a})
			if res[0].Err != nil {
				t.Fatal(res[0].Err)
			}
			g := roundTrip(t, f)
			w := g.work[id]
			p := w.Procs[0]
			if !reflect.DeepEqual(p.GPUs, a.GPUs) || p.GPUSlice != a.GPUSlice || p.GPUDeviceMemory != a.GPUDeviceMemory {
				t.Fatalf("restored process GPUs %v slice %d of %d, want %v %d of %d", p.GPUs, p.GPUSlice, p.GPUDeviceMemory, a.GPUs, a.GPUSlice, a.GPUDeviceMemory)
			}
			if w.GPUs != tc.work.GPUs || w.GPUMemory != tc.work.GPUMemory || w.GPUModel != tc.work.GPUModel {
				t.Fatalf("restored request %d/%d/%q, want %d/%d/%q", w.GPUs, w.GPUMemory, w.GPUModel, tc.work.GPUs, tc.work.GPUMemory, tc.work.GPUModel)
			}
			if got := p.GPUDevices(); got != tc.wantDev {
				t.Fatalf("GPUDevices %v, want %v", got, tc.wantDev)
			}
			if w.Kind == wire.WorkReservation {
				return
			}
			apply(t, g, 3, Command{Type: CmdProc, Time: 3000, Proc: &wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcRunning, PID: 9, StartedAt: 3000}})
			apply(t, g, 4, Command{Type: CmdProc, Time: 13000, Proc: &wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcExited,
				EndedAt: 13000, GPUMemoryPeak: 5 << 30}})
			r := RecordOf(g.work[id])
			if want := tc.wantDev * 10; math.Abs(r.GPUSeconds-want) > 1e-9 {
				t.Fatalf("GPU seconds %v, want %v", r.GPUSeconds, want)
			}
			if r.GPUs != tc.work.GPUs || r.GPUMemory != tc.work.GPUMemory || r.GPUMemoryPeak != 5<<30 {
				t.Fatalf("record %+v", r)
			}
		})
	}
}

// A process its agent stopped over its GPU memory slice ends its managed
// reservation with exit code wire.CodeGPUSlice and the agent's reason.
func TestGPUSliceExceededExitCode(t *testing.T) {
	f := New()
	w := managed()
	w.GPUMemory = 20 << 30
	id := apply(t, f, 1, Command{Type: CmdSubmit, Time: 1000, Work: w})[0].ID
	apply(t, f, 2, Command{Type: CmdAssign, Time: 2000, WorkID: id, Assign: &Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30,
		GPUs: []string{"GPU-a"}, GPUSlice: 20 << 30, GPUDeviceMemory: 80 << 30}})
	reason := "GPU memory slice exceeded: used 21 GiB of 20 GiB"
	apply(t, f, 3, Command{Type: CmdProc, Time: 3000, Proc: &wire.ProcStatus{ID: fmt.Sprintf("%d.1", id), WorkID: id, State: wire.ProcExited,
		ExitCode: -1, Signal: "KILL", Reason: reason, GPUSliceExceeded: true, GPUMemoryPeak: 21 << 30}})
	got := f.work[id]
	if got.ExitCode != wire.CodeGPUSlice || got.Reason != reason || got.Procs[0].GPUMemoryPeak != 21<<30 {
		t.Fatalf("work ended with exit %d, reason %q, peak %d", got.ExitCode, got.Reason, got.Procs[0].GPUMemoryPeak)
	}
}
