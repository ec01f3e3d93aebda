package state

import (
	"strings"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// drivenJob is a job whose items come from a driver process.
func drivenJob() *Work {
	return &Work{Kind: wire.WorkJob, User: "bob", Class: "normal", Memory: 1 << 30,
		Job: &Job{Spec: wire.JobSpec{Executable: "w", DriverExecutable: "d", DriverMemory: 512 << 20, MaxJobErrors: 5, FailuresLimit: 5},
			DriverClass: "fixed"}}
}

// applyAll applies commands one log entry each, numbering entries from
// *idx, and returns the last results.
func applyAll(t *testing.T, f *FSM, idx *uint64, cmds ...Command) []Result {
	t.Helper()
	var res []Result
	for _, c := range cmds {
		*idx++
		c.Time = int64(*idx)
		res = apply(t, f, *idx, c)
	}
	return res
}

func startDriver(t *testing.T, f *FSM, idx *uint64) {
	t.Helper()
	for _, r := range applyAll(t, f, idx,
		Command{Type: CmdSubmit, Work: drivenJob(), Last: true},
		Command{Type: CmdAssign, WorkID: 1, Assign: &Assignment{Node: "n1", Shares: 1, MemoryLimit: 512 << 20, Kind: wire.ProcDriver}},
		Command{Type: CmdProc, Proc: &wire.ProcStatus{ID: "1.1", WorkID: 1, State: wire.ProcRunning, PID: 20}},
	) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
}

func TestDriverJobStates(t *testing.T) {
	f := New()
	var idx uint64
	startDriver(t, f, &idx)
	state := func() (s WorkState, items int, committed bool) {
		f.View(func(v *View) {
			w := v.Work(1)
			s, items, committed = w.State, len(w.Job.Items), w.Job.Committed
		})
		return
	}
	// A submission with Last and no items does not end a driven job, and
	// placing and starting its driver keeps it WaitingForDriver.
	if s, _, _ := state(); s != StateWaitingForDriver {
		t.Fatalf("state %s, want %s", s, StateWaitingForDriver)
	}
	// A second driver is refused.
	if res := applyAll(t, f, &idx, Command{Type: CmdAssign, WorkID: 1, Assign: &Assignment{Node: "n1", Shares: 1, Kind: wire.ProcDriver}}); res[0].Err == nil {
		t.Fatal("a second driver process was assigned")
	}
	applyAll(t, f, &idx, Command{Type: CmdReady, WorkID: 1, ProcID: "1.1", InitMS: 30})
	if s, _, _ := state(); s != StateWaitingForResources {
		t.Fatalf("after the driver's ready: state %s, want %s", s, StateWaitingForResources)
	}
	f.View(func(v *View) {
		if j := v.Work(1).Job; !j.DriverReady || j.EverReady || j.InitCount != 0 {
			t.Errorf("the driver's readiness counted as a job process's: %+v", j)
		}
	})
}

// Chunks are numbered: one applied twice (its answer lost in a failover)
// adds nothing, an overlapping one adds only what is new, a gap is refused.
func TestDriverItemsIdempotent(t *testing.T) {
	f := New()
	var idx uint64
	startDriver(t, f, &idx)
	applyAll(t, f, &idx, Command{Type: CmdReady, WorkID: 1, ProcID: "1.1"})
	chunk := func(base int, items []string, last bool) Command {
		return Command{Type: CmdDriverItems, WorkID: 1, ProcID: "1.1", FirstItem: int64(base), Items: items, Last: last}
	}
	for _, tc := range []struct {
		name    string
		cmd     Command
		want    []string
		wantErr string
	}{
		{"first", chunk(0, []string{"a", "b"}, false), []string{"a", "b"}, ""},
		{"resent", chunk(0, []string{"a", "b"}, false), []string{"a", "b"}, ""},
		{"overlap", chunk(1, []string{"b", "c"}, false), []string{"a", "b", "c"}, ""},
		{"gap", chunk(5, []string{"x"}, false), []string{"a", "b", "c"}, "only 3"},
		{"wrong process", Command{Type: CmdDriverItems, WorkID: 1, ProcID: "1.9", FirstItem: 3, Items: []string{"x"}}, []string{"a", "b", "c"}, "no live driver"},
		{"last", chunk(3, []string{"d"}, true), []string{"a", "b", "c", "d"}, ""},
		{"last resent", chunk(3, []string{"d"}, true), []string{"a", "b", "c", "d"}, ""},
	} {
		res := applyAll(t, f, &idx, tc.cmd)
		if tc.wantErr == "" && res[0].Err != nil || tc.wantErr != "" && (res[0].Err == nil || !strings.Contains(res[0].Err.Error(), tc.wantErr)) {
			t.Fatalf("%s: error %v, want %q", tc.name, res[0].Err, tc.wantErr)
		}
		var got []string
		f.View(func(v *View) {
			for _, it := range v.Work(1).Job.Items {
				got = append(got, it.Data)
			}
		})
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Fatalf("%s: items %v, want %v", tc.name, got, tc.want)
		}
	}
	f.View(func(v *View) {
		if j := v.Work(1).Job; !j.Committed {
			t.Error("the last chunk did not commit the job")
		}
	})
}

func TestDriverEnds(t *testing.T) {
	exited := func(code int, reason string) Command {
		return Command{Type: CmdProc, Proc: &wire.ProcStatus{ID: "1.1", WorkID: 1, State: wire.ProcExited, ExitCode: code, Reason: reason}}
	}
	for _, tc := range []struct {
		name       string
		cmds       []Command
		completion Completion // "" = still running
		reason     string
	}{
		{"dies before ready", []Command{exited(3, "exited with code 3; last lines of its log: no corpus")},
			CompletionDriverInitFailure, "failed to initialize: exited with code 3; last lines of its log: no corpus"},
		{"dies after ready", []Command{{Type: CmdReady, WorkID: 1, ProcID: "1.1"},
			{Type: CmdDriverItems, WorkID: 1, ProcID: "1.1", Items: []string{"a"}}, exited(5, "exited with code 5")},
			CompletionDriverFailed, "ended before its last work item: exited with code 5"},
		{"written off with its node", []Command{{Type: CmdReady, WorkID: 1, ProcID: "1.1"},
			{Type: CmdProc, Proc: &wire.ProcStatus{ID: "1.1", WorkID: 1, State: wire.ProcLost, ExitCode: -1, Reason: "node n1 is down"}}},
			CompletionDriverFailed, "node n1 is down"},
		{"the agent lost its items", []Command{{Type: CmdReady, WorkID: 1, ProcID: "1.1"},
			{Type: CmdDriverItems, WorkID: 1, ProcID: "1.1", Failure: "the agent restarted"}},
			CompletionDriverFailed, "failed: the agent restarted"},
		{"exits after its last item", []Command{{Type: CmdReady, WorkID: 1, ProcID: "1.1"},
			{Type: CmdDriverItems, WorkID: 1, ProcID: "1.1", Items: []string{"a"}, Last: true}, exited(0, "exited normally")},
			"", ""},
		{"canceled", []Command{{Type: CmdReady, WorkID: 1, ProcID: "1.1"}, {Type: CmdCancel, WorkID: 1, By: "bob"},
			exited(-1, "killed by SIGTERM")},
			CompletionCanceledByUser, ""},
		{"no items at all", []Command{{Type: CmdReady, WorkID: 1, ProcID: "1.1"},
			{Type: CmdDriverItems, WorkID: 1, ProcID: "1.1", Last: true}},
			CompletionNoWorkItemsFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := New()
			var idx uint64
			startDriver(t, f, &idx)
			applyAll(t, f, &idx, tc.cmds...)
			f.View(func(v *View) {
				w := v.Work(1)
				if w.Completion != tc.completion || !strings.Contains(w.Reason, tc.reason) {
					t.Errorf("completion %q (%q), want %q (%q); state %s", w.Completion, w.Reason, tc.completion, tc.reason, w.State)
				}
			})
		})
	}
}
