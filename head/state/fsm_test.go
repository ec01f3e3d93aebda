package state

import (
	"bytes"
	"io"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/wire"
)

func apply(t *testing.T, f *FSM, idx uint64, cmds ...Command) []Result {
	t.Helper()
	data, err := Encode(cmds...)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := f.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: data}).([]Result)
	return res
}

func managed() *Work {
	return &Work{Kind: wire.WorkManaged, User: "alice", UID: 1000, Class: "fixed", Memory: 1 << 30, Path: "true"}
}

func TestManagedLifecycle(t *testing.T) {
	tests := []struct {
		name           string
		events         []wire.ProcStatus // after assignment of proc "1.1"
		cancel         bool
		wantState      WorkState
		wantCompletion Completion
		wantExit       int
		wantOOMKills   uint64
		wantReason     string
	}{
		{name: "exit 0", events: []wire.ProcStatus{{State: wire.ProcRunning, PID: 10}, {State: wire.ProcExited, ExitCode: 0}},
			wantState: StateCompleted, wantCompletion: CompletionProgramExit},
		{name: "exit 7", events: []wire.ProcStatus{{State: wire.ProcRunning, PID: 10}, {State: wire.ProcExited, ExitCode: 7}},
			wantState: StateCompleted, wantCompletion: CompletionProgramExit, wantExit: 7},
		{name: "exit before running report", events: []wire.ProcStatus{{State: wire.ProcExited, ExitCode: 3}, {State: wire.ProcRunning, PID: 10}},
			wantState: StateCompleted, wantCompletion: CompletionProgramExit, wantExit: 3},
		{name: "launch failure", events: []wire.ProcStatus{{State: wire.ProcLaunchFailed, ExitCode: -1, Reason: "no such file"}},
			wantState: StateCompleted, wantCompletion: CompletionLaunchFailure, wantExit: -1},
		{name: "running", events: []wire.ProcStatus{{State: wire.ProcRunning, PID: 10}}, wantState: StateRunning},
		{name: "canceled", events: []wire.ProcStatus{{State: wire.ProcRunning, PID: 10}, {State: wire.ProcExited, ExitCode: 143}}, cancel: true,
			wantState: StateCompleted, wantCompletion: CompletionCanceledByUser, wantExit: 143},
		{name: "child killed at the cap", events: []wire.ProcStatus{{State: wire.ProcRunning, PID: 10},
			{State: wire.ProcExited, OOMKills: 2, Reason: "exited normally; memory cap hit: 2 processes killed by the OOM killer (cap 1 GiB)"}},
			wantState: StateCompleted, wantCompletion: CompletionProgramExit, wantOOMKills: 2,
			wantReason: "exited normally; memory cap hit: 2 processes killed by the OOM killer (cap 1 GiB)"},
		{name: "lost", events: []wire.ProcStatus{{State: wire.ProcLost, ExitCode: -1}},
			wantState: StateCompleted, wantCompletion: CompletionProcessFailure, wantExit: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := New()
			res := apply(t, f, 1, Command{Type: CmdSubmit, Time: 100, Work: managed()})
			if res[0].ID != 1 {
				t.Fatalf("first id %d, want 1", res[0].ID)
			}
			res = apply(t, f, 2, Command{Type: CmdAssign, Time: 110, WorkID: 1, Assign: &Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}})
			if res[0].ProcID != "1.1" {
				t.Fatalf("proc id %q", res[0].ProcID)
			}
			idx := uint64(3)
			if tc.cancel {
				apply(t, f, idx, Command{Type: CmdCancel, Time: 115, WorkID: 1, By: "alice"})
				idx++
			}
			for _, ev := range tc.events {
				ev.ID, ev.WorkID = "1.1", 1
				apply(t, f, idx, Command{Type: CmdProc, Time: 120, Proc: &ev})
				idx++
			}
			f.View(func(v *View) {
				w := v.Work(1)
				if w.State != tc.wantState || w.Completion != tc.wantCompletion || w.ExitCode != tc.wantExit {
					t.Errorf("state %s/%s/%d, want %s/%s/%d", w.State, w.Completion, w.ExitCode, tc.wantState, tc.wantCompletion, tc.wantExit)
				}
				if p := w.Procs[0]; p.OOMKills != tc.wantOOMKills {
					t.Errorf("process records %d OOM kills, want %d", p.OOMKills, tc.wantOOMKills)
				}
				if tc.wantReason != "" && w.Reason != tc.wantReason {
					t.Errorf("reason %q, want %q", w.Reason, tc.wantReason)
				}
			})
		})
	}
}

func TestCancelPending(t *testing.T) {
	f := New()
	apply(t, f, 1, Command{Type: CmdSubmit, Time: 1, Work: managed()})
	apply(t, f, 2, Command{Type: CmdCancel, Time: 2, WorkID: 1, By: "root"})
	f.View(func(v *View) {
		w := v.Work(1)
		if !w.Ended() || w.Completion != CompletionCanceledByAdmin {
			t.Errorf("pending work canceled by root: %s %s", w.State, w.Completion)
		}
	})
	res := apply(t, f, 3, Command{Type: CmdAssign, Time: 3, WorkID: 1, Assign: &Assignment{Node: "n1"}})
	if res[0].Err == nil {
		t.Errorf("assigning ended work succeeded")
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	f := New()
	apply(t, f, 1, Command{Type: CmdSubmit, Time: 1, Work: managed()}, Command{Type: CmdSubmit, Time: 1, Work: managed()})
	apply(t, f, 2, Command{Type: CmdAssign, Time: 2, WorkID: 2, Assign: &Assignment{Node: "n1", Shares: 2, MemoryLimit: 2 << 30}})
	g := roundTrip(t, f)
	var a, b []*Work
	var na, nb uint64
	f.View(func(v *View) { a, na = v.All(), v.NextID() })
	g.View(func(v *View) { b, nb = v.All(), v.NextID() })
	if !reflect.DeepEqual(a, b) || na != nb || nb != 3 {
		t.Errorf("restored state differs: next %d/%d", na, nb)
	}
}

func TestGarbageEntryIsAnErrorNotAPanic(t *testing.T) {
	f := New()
	res, _ := f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte{0xff, 0x00, 0x13}}).([]Result)
	if len(res) != 1 || res[0].Err == nil {
		t.Errorf("garbage entry: %v", res)
	}
	if err := f.Restore(io.NopCloser(bytes.NewReader([]byte("not cbor")))); err == nil {
		t.Errorf("garbage snapshot restored")
	}
}

type sink struct{ *bytes.Buffer }

func (s *sink) ID() string    { return "test" }
func (s *sink) Cancel() error { return nil }
func (s *sink) Close() error  { return nil }

// TestSubmitWithAssignment: a submission that carries its assignment
// (placed at submission) assigns its first process in the same command
// only when the work gets the id it was planned under, and only for work
// that is neither a job nor a service; the node's index and a snapshot
// hold the process like one a CmdAssign made.
func TestSubmitWithAssignment(t *testing.T) {
	job := func() *Work {
		w := managed()
		w.Kind, w.Job = wire.WorkJob, &Job{Spec: wire.JobSpec{Executable: "true"}}
		return w
	}
	assign := &Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}
	tests := []struct {
		name     string
		before   int // submissions committed before it (it was planned as id 1)
		work     func() *Work
		refused  Completion
		wantProc string
	}{
		{name: "planned id", work: managed, wantProc: "1.1"},
		{name: "another submission came first", before: 1, work: managed},
		{name: "a job", work: job},
		{name: "refused at once", work: managed, refused: CompletionServicesUnavail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := New()
			idx := uint64(0)
			for range tc.before {
				idx++
				apply(t, f, idx, Command{Type: CmdSubmit, Time: 90, Work: managed()})
			}
			idx++
			res := apply(t, f, idx, Command{Type: CmdSubmit, Time: 100, Work: tc.work(), WorkID: 1, Assign: assign,
				Completion: tc.refused, Reason: string(tc.refused)})
			if len(res) != 1 || res[0].Err != nil || res[0].ProcID != tc.wantProc {
				t.Fatalf("submit: %+v, want proc %q", res, tc.wantProc)
			}
			id := res[0].ID
			check := func(who string, f *FSM) {
				f.View(func(v *View) {
					w := v.Work(id)
					var onNode []string
					for _, p := range v.NodeProcs("n1") {
						onNode = append(onNode, p.ID)
					}
					if tc.wantProc == "" {
						if len(w.Procs) != 0 || len(onNode) != 0 {
							t.Errorf("%s: work %d has %d processes, n1 %v; want none", who, id, len(w.Procs), onNode)
						}
						return
					}
					if len(w.Procs) != 1 || w.Procs[0].ID != tc.wantProc || w.Procs[0].Node != "n1" ||
						w.Procs[0].AssignedAt != 100 || w.State != StateAssigned || !reflect.DeepEqual(onNode, []string{tc.wantProc}) {
						t.Errorf("%s: work %d is %s with %+v, n1 %v; want %s assigned to n1", who, id, w.State, w.Procs, onNode, tc.wantProc)
					}
				})
			}
			check("applied", f)
			g := roundTrip(t, f)
			check("restored from a snapshot", g)
		})
	}
}
