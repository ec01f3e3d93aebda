package state

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/wire"
)

// indexView is what the index answers, in the form a scan computes it.
type indexView struct {
	Live     []uint64
	ByState  map[WorkState][]uint64
	Services map[string]uint64
	Nodes    map[string][]string // node → proc ids, in NodeProcs order
}

// scanIndex computes by brute force over all work what the index must
// answer.
func scanIndex(f *FSM) indexView {
	iv := indexView{ByState: map[WorkState][]uint64{}, Services: map[string]uint64{}, Nodes: map[string][]string{}}
	f.View(func(v *View) {
		for _, w := range v.All() {
			for _, p := range w.Procs {
				if !p.Ended() {
					iv.Nodes[p.Node] = append(iv.Nodes[p.Node], p.ID)
				}
			}
			if w.Ended() {
				continue
			}
			iv.Live = append(iv.Live, w.ID)
			iv.ByState[w.State] = append(iv.ByState[w.State], w.ID)
			if w.Service != nil {
				iv.Services[w.Service.Spec.Endpoint] = w.ID
			}
		}
	})
	return iv
}

// readIndex reads the index through View's methods.
func readIndex(f *FSM) indexView {
	iv := indexView{ByState: map[WorkState][]uint64{}, Services: map[string]uint64{}, Nodes: map[string][]string{}}
	f.View(func(v *View) {
		for w := range v.LiveWork() {
			iv.Live = append(iv.Live, w.ID)
		}
		if n := v.LiveCount(); n != len(iv.Live) {
			iv.Live = append(iv.Live, uint64(n)) // a mismatch the comparison shows
		}
		var active []uint64
		for _, w := range v.Active() {
			active = append(active, w.ID)
		}
		if !slices.Equal(active, iv.Live) {
			iv.Live = append(iv.Live, 0) // Active disagrees with LiveWork
		}
		for st := range v.f.idx.byState {
			for w := range v.LiveInState(st) {
				iv.ByState[st] = append(iv.ByState[st], w.ID)
			}
		}
		for ep := range v.f.idx.services {
			if w := v.ActiveService(ep); w != nil {
				iv.Services[ep] = w.ID
			}
		}
		for node := range v.f.idx.nodes {
			for w, p := range v.NodeProcs(node) {
				if w.proc(p.ID) != p {
					p = &Proc{ID: p.ID + " (not of its work)"}
				}
				iv.Nodes[node] = append(iv.Nodes[node], p.ID)
			}
		}
	})
	return iv
}

func checkIndex(t *testing.T, f *FSM, when string) {
	t.Helper()
	want, got := scanIndex(f), readIndex(f)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: the index does not match a scan of all work\nindex: %+v\nscan:  %+v", when, got, want)
	}
	if n := len(f.idx.filed); n != len(want.Live) {
		t.Fatalf("%s: %d pieces of work filed, %d live", when, n, len(want.Live))
	}
}

// cmdGen makes random commands against the current state: valid ones
// mostly, and some that refer to work or processes that do not exist.
type cmdGen struct {
	r   *rand.Rand
	now int64
}

var (
	genNodes     = []string{"n1", "n2", "n3"}
	genEndpoints = []string{"UIMA-AS:a", "UIMA-AS:b", "HTTP:c"}
	genProcState = []string{wire.ProcStarting, wire.ProcRunning, wire.ProcExited, wire.ProcExited, wire.ProcLost, wire.ProcLaunchFailed}
	genSvcOps    = []SvcOp{SvcOpStart, SvcOpStop, SvcOpEnable, SvcOpDisable, SvcOpObserve, SvcOpIgnore, SvcOpRefStart,
		SvcOpRefStop, SvcOpAdd, SvcOpDelete, SvcOpAutostart, SvcOpLastUse, SvcOpReady}
)

func (g *cmdGen) pick(list []string) string { return list[g.r.IntN(len(list))] }

// work picks an id: mostly one that exists, sometimes one that does not.
func (g *cmdGen) work(v *View) uint64 { return uint64(g.r.IntN(int(v.NextID()) + 1)) }

// proc picks a process of w, or a made-up id.
func (g *cmdGen) proc(w *Work) string {
	if w == nil || len(w.Procs) == 0 || g.r.IntN(10) == 0 {
		return "99.9"
	}
	return w.Procs[g.r.IntN(len(w.Procs))].ID
}

func (g *cmdGen) command(v *View) Command {
	g.now += int64(g.r.IntN(1000))
	c := Command{Time: g.now}
	id := g.work(v)
	w := v.Work(id)
	switch g.r.IntN(16) {
	case 0:
		c.Type = CmdSubmit
		c.Work = &Work{Kind: []wire.WorkKind{wire.WorkManaged, wire.WorkReservation}[g.r.IntN(2)], User: "alice", Class: "normal", Memory: 1 << 20}
		if g.r.IntN(8) == 0 {
			c.Completion, c.Reason = CompletionServicesUnavail, "refused"
		}
	case 1:
		c.Type, c.Last = CmdSubmit, g.r.IntN(2) == 0
		c.Work = &Work{Kind: wire.WorkJob, User: "bob", Class: "normal", Memory: 1 << 20,
			Job: &Job{Spec: wire.JobSpec{MaxJobErrors: 3, MaxItemRetries: 1, FailuresLimit: 2}}}
		for i := range g.r.IntN(4) {
			c.Work.Job.Items = append(c.Work.Job.Items, Item{Data: fmt.Sprint(i)})
		}
		if g.r.IntN(4) == 0 {
			c.Work.Deps = []string{g.pick(genEndpoints)}
		}
	case 2:
		c.Type = CmdSvcRegister
		c.Work = &Work{User: "carol", Class: "normal", Memory: 1 << 20, Service: &Service{Spec: wire.ServiceSpec{
			Endpoint: g.pick(genEndpoints), Executable: "/bin/srv", Instances: 1 + g.r.IntN(2), MaxInstances: 3,
			FailuresLimit: 1, InitFailuresLimit: 1, FailuresWindowMS: 10_000}}}
	case 3, 4, 5:
		c.Type, c.WorkID = CmdAssign, id
		c.Assign = &Assignment{Node: g.pick(genNodes), Shares: 1, MemoryLimit: 1 << 20, Instance: g.r.IntN(3)}
	case 6, 7, 8, 9:
		c.Type = CmdProc
		c.Proc = &wire.ProcStatus{ID: g.proc(w), WorkID: id, State: g.pick(genProcState), PID: 1 + g.r.IntN(100)}
	case 10:
		c.Type, c.WorkID, c.By = CmdCancel, id, []string{"alice", "root"}[g.r.IntN(2)]
	case 11:
		c.Type, c.WorkID, c.Completion = CmdFinish, id, CompletionCanceledBySystem
	case 12:
		c.Type, c.WorkID, c.ProcID, c.Reason, c.Counts = CmdStopProc, id, g.proc(w), "preempted", g.r.IntN(2) == 0
	case 13:
		switch g.r.IntN(4) {
		case 0:
			c.Type, c.WorkID, c.Items, c.Last = CmdItems, id, []string{"x", "y"}, g.r.IntN(2) == 0
		case 1:
			c.Type, c.WorkID, c.ProcID, c.InitMS = CmdReady, id, g.proc(w), 5
		case 2:
			c.Type, c.WorkID, c.Requeued = CmdRequeued, id, 1
		default:
			c.Type, c.WorkID = CmdDepsMet, id
		}
	case 14:
		c.Type, c.WorkID, c.ProcID = CmdOutcomes, id, g.proc(w)
		for range 1 + g.r.IntN(3) {
			c.Outcomes = append(c.Outcomes, wire.ItemOutcome{Index: g.r.IntN(5), OK: g.r.IntN(3) > 0, Millis: int64(g.r.IntN(50))})
		}
	default:
		switch g.r.IntN(3) {
		case 0:
			c.Type, c.WorkID, c.ProcID = CmdSvcChange, id, g.proc(w)
			c.Service = &ServiceChange{Op: genSvcOps[g.r.IntN(len(genSvcOps))], N: int64(g.r.IntN(3)), IDs: []int{g.r.IntN(3)}, Bool: g.r.IntN(2) == 0}
		case 1:
			c.Type, c.Node, c.NodeState = CmdNodeAdmin, g.pick(genNodes), []NodeAdminState{NodeNormal, NodeVariedOff}[g.r.IntN(2)]
		default:
			c.Type, c.Config = CmdConfig, []byte("classes: {}")
		}
	}
	return c
}

// restored returns a new FSM restored from a snapshot of f.
func restored(t *testing.T, f *FSM) *FSM {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	g := New()
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	return g
}

// The index answers what a scan of all work answers, after any sequence of
// commands (valid or not, one or several per log entry) and after a
// snapshot is restored, on which the sequence goes on.
func TestIndexMatchesScan(t *testing.T) {
	tests := []struct {
		seed      uint64
		steps     int
		maxBatch  int
		restoreAt int // every that many steps
	}{
		{seed: 1, steps: 1500, maxBatch: 1, restoreAt: 500},
		{seed: 2, steps: 1500, maxBatch: 4, restoreAt: 250},
		{seed: 3, steps: 1000, maxBatch: 8, restoreAt: 97},
		{seed: 4, steps: 2000, maxBatch: 2, restoreAt: 400},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("seed=%d", tc.seed), func(t *testing.T) {
			g := &cmdGen{r: rand.New(rand.NewPCG(tc.seed, 0x5eed)), now: 1_000_000}
			f := New()
			var idx uint64
			kinds := map[CommandType]int{}
			for step := 1; step <= tc.steps; step++ {
				var cmds []Command
				f.View(func(v *View) {
					for range 1 + g.r.IntN(tc.maxBatch) {
						cmds = append(cmds, g.command(v))
					}
				})
				idx++
				for i, r := range apply(t, f, idx, cmds...) {
					if r.Err == nil {
						kinds[cmds[i].Type]++
					}
				}
				checkIndex(t, f, fmt.Sprintf("step %d", step))
				if step%tc.restoreAt == 0 {
					f = restored(t, f)
					checkIndex(t, f, fmt.Sprintf("restore after step %d", step))
				}
			}
			// The sequence must have exercised the index: work ended and
			// live, processes on nodes.
			var live, total int
			f.View(func(v *View) { live, total = v.LiveCount(), len(v.All()) })
			if live == 0 || live == total {
				t.Errorf("%d live of %d: the sequence did not exercise both live and ended work", live, total)
			}
			for _, typ := range []CommandType{CmdSubmit, CmdSvcRegister, CmdAssign, CmdProc, CmdCancel, CmdFinish, CmdStopProc, CmdOutcomes, CmdSvcChange} {
				if kinds[typ] == 0 {
					t.Errorf("no command of type %d applied without error", typ)
				}
			}
		})
	}
}

// A process of finished work that still runs stays on its node's list
// (the node must be told to stop it) until it ends.
func TestNodeProcsKeepsStoppingProcessesOfFinishedWork(t *testing.T) {
	f := New()
	apply(t, f, 1, Command{Type: CmdSubmit, Time: 1, Work: managed()},
		Command{Type: CmdAssign, Time: 2, WorkID: 1, Assign: &Assignment{Node: "n1", Shares: 1}},
		Command{Type: CmdFinish, Time: 3, WorkID: 1, Completion: CompletionCanceledBySystem})
	procs := func() (out []string) {
		f.View(func(v *View) {
			for _, p := range v.NodeProcs("n1") {
				out = append(out, p.ID+":"+p.State)
			}
		})
		return out
	}
	if got, want := procs(), []string{"1.1:" + wire.ProcStopping}; !slices.Equal(got, want) {
		t.Fatalf("n1 after finish: %v, want %v", got, want)
	}
	apply(t, f, 2, Command{Type: CmdProc, Time: 4, Proc: &wire.ProcStatus{ID: "1.1", WorkID: 1, State: wire.ProcExited}})
	if got := procs(); len(got) != 0 {
		t.Fatalf("n1 after the exit: %v, want nothing", got)
	}
	checkIndex(t, f, "end")
}

type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }

var _ raft.SnapshotSink = (*memSink)(nil)
