// Package statetest helps test code that applies commands to the head's
// state: Applier applies them straight to an FSM, as a one-node Raft would.
package statetest

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// Applier applies commands to FSM in order, one log entry per call.
type Applier struct {
	FSM *state.FSM
	// HoldLater keeps ApplyLater's commands until ReleaseLater, as a
	// busy Raft member keeps them for the next entry: a test sees the
	// window in which a process's start is reported but not written.
	HoldLater bool

	mu    sync.Mutex
	index uint64
	held  []heldLater
}

// heldLater is one ApplyLater call kept by HoldLater.
type heldLater struct {
	cmds []state.Command
	then func([]state.Result, error)
}

// Apply encodes the commands as one entry and applies it.
func (a *Applier) Apply(_ context.Context, cmds ...state.Command) ([]state.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	data, err := state.Encode(cmds...)
	if err != nil {
		return nil, err
	}
	a.index++
	res, _ := a.FSM.Apply(&raft.Log{Index: a.index, Type: raft.LogCommand, Data: data}).([]state.Result)
	return res, nil
}

// ApplyLater applies the commands at once, as one entry, and tells then:
// a one-node Raft with no other caller in the window; with HoldLater it
// keeps them for ReleaseLater.
func (a *Applier) ApplyLater(cmds []state.Command, _ time.Duration, then func([]state.Result, error)) {
	a.mu.Lock()
	if a.HoldLater {
		a.held = append(a.held, heldLater{cmds, then})
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	res, err := a.Apply(context.Background(), cmds...)
	if then != nil {
		then(res, err)
	}
}

// ReleaseLater applies what HoldLater kept, each call as one entry, and
// tells each its results.
func (a *Applier) ReleaseLater() {
	a.mu.Lock()
	held := a.held
	a.held = nil
	a.mu.Unlock()
	for _, h := range held {
		res, err := a.Apply(context.Background(), h.cmds...)
		if h.then != nil {
			h.then(res, err)
		}
	}
}

// Applied returns how many entries were applied.
func (a *Applier) Applied() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.index
}

// JobHistory returns the log entries of jobs finished jobs of items items
// each, in the shape the head writes them: the submission with the first
// chunk of items, the rest in chunks of 1,000, four job processes
// assigned, running and ready, their outcomes in batches of 40 (one
// exchange each), then the processes' exits and the job's end. The items
// are their line numbers, the results those of a worker that answers
// {"ok": true}. Tests and benchmarks use it to build a long history.
func JobHistory(jobs, items int) [][]state.Command {
	const chunk, batch, procs = 1000, 40, 4
	var out [][]state.Command
	line := func(i int) string { return strconv.Itoa(i) }
	for j := range jobs {
		id := uint64(j + 1)
		t := int64(j) * 60_000
		first := make([]string, 0, min(chunk, items))
		for i := range min(chunk, items) {
			first = append(first, line(i))
		}
		w := &state.Work{Kind: wire.WorkJob, User: "alice", UID: 1000, GID: 1000, Class: "normal", Memory: 1 << 30,
			Job: &state.Job{Spec: wire.JobSpec{Executable: "/usr/bin/python3", Args: []string{"fast.py"}, Memory: 1 << 30,
				MaxJobErrors: 15, FailuresLimit: 3}}}
		for _, it := range first {
			w.Job.Items = append(w.Job.Items, state.Item{Data: it})
		}
		out = append(out, []state.Command{{Type: state.CmdSubmit, Time: t, Work: w, Last: items <= chunk}})
		for lo := chunk; lo < items; lo += chunk {
			var c []string
			for i := lo; i < min(lo+chunk, items); i++ {
				c = append(c, line(i))
			}
			out = append(out, []state.Command{{Type: state.CmdItems, Time: t, WorkID: id, Items: c, Last: lo+chunk >= items}})
		}
		pid := func(p int) string { return strconv.FormatUint(id, 10) + "." + strconv.Itoa(p+1) }
		for p := range procs {
			out = append(out, []state.Command{{Type: state.CmdAssign, Time: t + 1, WorkID: id,
				Assign: &state.Assignment{Node: "n1", Shares: 1, MemoryLimit: 1 << 30}}})
			out = append(out, []state.Command{{Type: state.CmdProc, Time: t + 2,
				Proc: &wire.ProcStatus{ID: pid(p), WorkID: id, State: wire.ProcRunning, PID: 100 + p}}})
			out = append(out, []state.Command{{Type: state.CmdReady, Time: t + 3, WorkID: id, ProcID: pid(p), InitMS: 40}})
		}
		for lo := 0; lo < items; lo += batch {
			var oc []wire.ItemOutcome
			for i := lo; i < min(lo+batch, items); i++ {
				oc = append(oc, wire.ItemOutcome{Index: i, OK: true, Millis: 1})
			}
			out = append(out, []state.Command{{Type: state.CmdOutcomes, Time: t + 4, WorkID: id, ProcID: pid(lo / batch % procs), Outcomes: oc}})
		}
		for p := range procs {
			out = append(out, []state.Command{{Type: state.CmdProc, Time: t + 5,
				Proc: &wire.ProcStatus{ID: pid(p), WorkID: id, State: wire.ProcExited}}})
		}
	}
	return out
}
