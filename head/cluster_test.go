package head_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/head/state/statetest"
	"github.com/ducc-project/ducc/wire"
)

// nodeInfo returns a node as 'ducc nodes' shows it.
func (f *fixture) nodeInfo(t *testing.T, name string) (wire.NodeInfo, bool) {
	t.Helper()
	var list wire.NodeList
	f.mustCall(t, wire.MethodNodes, alice, nil, &list)
	for _, n := range list.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return wire.NodeInfo{}, false
}

func TestUnknownMethodAndMalformedBody(t *testing.T) {
	f := newFixture(t, options{})
	err := call(t, f.h, "frobnicate", alice, nil, nil)
	wantErr(t, err, wire.CodeUsage, `unknown method "frobnicate"`)

	// A body that is not the request of the method is a usage error, for
	// every method that reads one.
	for _, m := range []string{wire.MethodRun, wire.MethodCancel, wire.MethodShow, wire.MethodWait, wire.MethodJobs,
		wire.MethodSubmit, wire.MethodItems, wire.MethodResults, wire.MethodExchange, wire.MethodDriver, wire.MethodReserve,
		wire.MethodReconfigure, wire.MethodNodeAdmin, wire.MethodServiceRegister, wire.MethodServiceControl,
		wire.MethodServiceQuery, wire.MethodReport} {
		t.Run(m, func(t *testing.T) {
			err := call(t, f.h, m, alice, rawBody{0xff, 0x00, 0x13}, nil)
			wantErr(t, err, wire.CodeUsage, m)
		})
	}
}

func TestNodesAndStatus(t *testing.T) {
	f := newFixture(t, options{})
	var st wire.StatusInfo
	f.mustCall(t, wire.MethodStatus, alice, nil, &st)
	if st.Head != "head-node" || st.HeadPeer != "head-peer" || st.Version != "test" || st.Quantum != gib || st.NodesAll != 0 {
		t.Errorf("status of a head without nodes: %+v", st)
	}
	var list wire.NodeList
	f.mustCall(t, wire.MethodNodes, alice, nil, &list)
	if len(list.Nodes) != 0 {
		t.Errorf("nodes before any heartbeat: %+v", list.Nodes)
	}

	f.heartbeat(wire.Heartbeat{Node: "n2", Seq: 1, MemTotal: 9 * gib, MemSchedulable: 8 * gib, MemUsed: gib, CPUs: 8, Load1: 0.5,
		Addrs: []string{"/ip4/10.0.0.2/udp/4001/quic-v1"}})
	f.node("n1", 4*gib)
	f.mustCall(t, wire.MethodNodes, alice, nil, &list)
	if len(list.Nodes) != 2 || list.Nodes[0].Name != "n1" || list.Nodes[1].Name != "n2" {
		t.Fatalf("nodes are listed by name: %+v", list.Nodes)
	}
	n2 := list.Nodes[1]
	if n2.State != "Up" || n2.PeerID != "peer-n2" || n2.Shares != 8 || n2.MemTotal != 9*gib || n2.MemUsed != gib ||
		n2.CPUs != 8 || n2.Load1 != 0.5 || len(n2.Addrs) != 1 || n2.LastHeartbeat != f.clock.Now().UnixMilli() {
		t.Errorf("n2 as listed: %+v", n2)
	}
	f.mustCall(t, wire.MethodStatus, alice, nil, &st)
	if st.NodesUp != 2 || st.NodesAll != 2 {
		t.Errorf("status counts %d up of %d, want 2 of 2", st.NodesUp, st.NodesAll)
	}

	// A process on a node uses its shares.
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true", Memory: 3 * gib, MachineList: []string{"n1"}})
	if p := f.waitProc(t, id); p.Node != "n1" {
		t.Fatalf("a run limited to n1 went to %s", p.Node)
	}
	n1, _ := f.nodeInfo(t, "n1")
	if n1.SharesUsed != 3 || n1.Procs != 1 {
		t.Errorf("n1 with a 3 GiB process: %d shares used, %d processes", n1.SharesUsed, n1.Procs)
	}
}

func TestHeartbeatFoldsProcessStates(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 8*gib)
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Memory: gib})
	p := f.waitProc(t, id)
	f.heartbeat(wire.Heartbeat{Node: "n1", Seq: 2, MemSchedulable: 8 * gib,
		Procs: []wire.ProcStatus{{ID: p.ID, WorkID: id, State: wire.ProcRunning, PID: 99, RSS: 1 << 20, CPUSeconds: 1.5}}})
	info := f.show(t, id)
	if info.State != string(state.StateRunning) || info.Procs[0].PID != 99 || info.Procs[0].RSS != 1<<20 || info.Procs[0].CPUSeconds != 1.5 {
		t.Errorf("after a heartbeat with the running process: %+v", info)
	}
	f.heartbeat(wire.Heartbeat{Node: "n1", Seq: 3, MemSchedulable: 8 * gib,
		Procs: []wire.ProcStatus{{ID: p.ID, WorkID: id, State: wire.ProcLaunchFailed, Reason: "no such file"}}})
	if info := f.show(t, id); !info.Ended || info.Completion != string(state.CompletionLaunchFailure) || info.Reason != "no such file" {
		t.Errorf("after a heartbeat with the launch failure: %+v", info)
	}
}

func TestReportsOfUnknownWorkAreIgnored(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 8*gib)
	f.report(t, "n1", wire.ProcStatus{ID: "9.1", WorkID: 9, State: wire.ProcExited})
	f.fsm.View(func(v *state.View) {
		if len(v.All()) != 0 {
			t.Errorf("a report of unknown work created work")
		}
	})
}

func TestNodeTimeoutWritesOffProcesses(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 8*gib)
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Memory: gib})
	p := f.waitProc(t, id)
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcRunning, PID: 5})
	f.clock.Add(11 * time.Second)
	f.node("n2", 8*gib) // a new node asks for a cycle
	eventually(t, "n1 is declared down and its process written off", func() bool {
		n, _ := f.nodeInfo(t, "n1")
		return n.State == "Down" && f.work(id).Ended()
	})
	info := f.show(t, id)
	if !info.Ended || info.Completion != string(state.CompletionProcessFailure) || !strings.Contains(info.Reason, "node n1 stopped sending heartbeats") {
		t.Errorf("work of a dead node: %+v", info)
	}
}

func TestSeededNodesAreUnknownUntilTheyReport(t *testing.T) {
	var id uint64
	f := newFixture(t, options{seed: func(t *testing.T, app *statetest.Applier) {
		t.Helper()
		res, err := app.Apply(t.Context(), state.Command{Type: state.CmdSubmit, Time: 1,
			Work: &state.Work{Kind: wire.WorkManaged, User: "alice", Class: "fixed", Path: "/bin/sleep", Memory: gib}})
		if err != nil {
			t.Fatal(err)
		}
		id = res[0].ID
		mustApply(t, app, state.Command{Type: state.CmdAssign, Time: 2, WorkID: id, Assign: &state.Assignment{Node: "n9", Shares: 1, MemoryLimit: gib}})
		mustApply(t, app, state.Command{Type: state.CmdProc, Time: 3, Proc: &wire.ProcStatus{ID: procID(id), WorkID: id, State: wire.ProcRunning, PID: 8}})
	}})
	// A new head knows the node from the durable state only: its process
	// stands, and the node gets nothing new until it reports.
	eventually(t, "n9 is known", func() bool { _, ok := f.nodeInfo(t, "n9"); return ok })
	if n, _ := f.nodeInfo(t, "n9"); n.State != "Unknown" {
		t.Errorf("n9 before its heartbeat is %s, want Unknown", n.State)
	}
	var st wire.StatusInfo
	f.mustCall(t, wire.MethodStatus, alice, nil, &st)
	if st.NodesUp != 0 || st.NodesAll != 1 {
		t.Errorf("status %d up of %d, want 0 of 1", st.NodesUp, st.NodesAll)
	}
	f.heartbeat(wire.Heartbeat{Node: "n9", Seq: 40, MemSchedulable: 8 * gib,
		Procs: []wire.ProcStatus{{ID: procID(id), WorkID: id, State: wire.ProcRunning, PID: 8}}})
	if n, _ := f.nodeInfo(t, "n9"); n.State != "Up" || n.Procs != 1 {
		t.Errorf("n9 after its heartbeat: %+v", n)
	}
	if info := f.show(t, id); info.Ended || info.State != string(state.StateRunning) {
		t.Errorf("the work on n9 survived the new head: %+v", info)
	}
}

// procID is the id of the first process of a piece of work.
func procID(id uint64) string { return fmt.Sprintf("%d.1", id) }

func mustApply(t *testing.T, app *statetest.Applier, cmds ...state.Command) {
	t.Helper()
	res, err := app.Apply(t.Context(), cmds...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
}

func TestClasses(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	var list wire.ClassList
	f.mustCall(t, wire.MethodClasses, alice, nil, &list)
	var names []string
	for _, c := range list.Classes {
		names = append(names, c.Name)
	}
	if want := []string{"normal", "fixed", "reserve", "private", "capped", "small"}; !slices.Equal(names, want) {
		t.Fatalf("classes %v, want the config's order %v", names, want)
	}
	if c := list.Classes[1]; c.Policy != "FIXED_SHARE" || !c.Default || c.Quantum != gib || c.Pool != "default" {
		t.Errorf("class fixed: %+v", c)
	}

	// The last cycle's demand and allocation show per class.
	f.node("n1", 8*gib)
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true", Memory: 2 * gib})
	f.waitProc(t, id)
	eventually(t, "class fixed shows the allocation", func() bool {
		f.mustCall(t, wire.MethodClasses, alice, nil, &list)
		return list.Classes[1].Works == 1 && list.Classes[1].Allocated > 0
	})
}

func TestReconfigure(t *testing.T) {
	f := newFixture(t, options{})
	newConfig := []byte(`
scheduler:
  classes:
    - {name: normal, policy: FAIR_SHARE, priority: 10, default: true}
    - {name: gpu, policy: FIXED_SHARE, priority: 5, default: true}
`)
	tests := []struct {
		name   string
		caller wire.Caller
		yaml   []byte
		parts  []string
	}{
		{"not an administrator", alice, newConfig, []string{"only root or an administrator may reconfigure"}},
		{"not YAML", carol, []byte("classes: [\n"), []string{"not valid, nothing changed"}},
		{"invalid", carol, []byte("share_quantum: 1K\n"), []string{"not valid, nothing changed", "share_quantum"}},
		{"unknown key", carol, []byte("clases: []\n"), []string{"not valid, nothing changed", "clases"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := call(t, f.h, wire.MethodReconfigure, tc.caller, wire.ReconfigureRequest{Scheduler: tc.yaml}, &wire.ClassList{})
			wantErr(t, err, wire.CodeUsage, tc.parts...)
			var list wire.ClassList
			f.mustCall(t, wire.MethodClasses, alice, nil, &list)
			if len(list.Classes) != 7 {
				t.Errorf("a refused reconfiguration changed the classes: %d", len(list.Classes))
			}
			f.fsm.View(func(v *state.View) {
				if v.SchedulerConfig() != nil {
					t.Errorf("a refused reconfiguration reached the log")
				}
			})
		})
	}

	var list wire.ClassList
	f.mustCall(t, wire.MethodReconfigure, carol, wire.ReconfigureRequest{Scheduler: newConfig}, &list)
	if len(list.Classes) != 2 || list.Classes[1].Name != "gpu" {
		t.Errorf("reconfigure answered %+v", list.Classes)
	}
	f.fsm.View(func(v *state.View) {
		if string(v.SchedulerConfig()) != string(newConfig) {
			t.Errorf("the new config is not in the log: %q", v.SchedulerConfig())
		}
	})
	// Runs go to the new default class; the old classes are gone.
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true"})
	if c := f.work(id).Class; c != "gpu" {
		t.Errorf("run after reconfigure went to %q, want gpu", c)
	}
	err := call(t, f.h, wire.MethodRun, alice, wire.RunRequest{Path: "/bin/true", Class: "fixed"}, &wire.SubmitReply{})
	wantErr(t, err, wire.CodeUsage, `unknown class "fixed"`, "gpu")
	// root may reconfigure too.
	f.mustCall(t, wire.MethodReconfigure, root, wire.ReconfigureRequest{Scheduler: newConfig}, nil)
}

func TestANewHeadUsesTheReconfiguredScheduler(t *testing.T) {
	tests := []struct {
		name    string
		config  string
		classes int
	}{
		{"valid", "classes:\n  - {name: only, policy: FIXED_SHARE, default: true}\n", 1},
		{"broken: the config file stays", "classes: [\n", 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, options{seed: func(t *testing.T, app *statetest.Applier) {
				mustApply(t, app, state.Command{Type: state.CmdConfig, Time: 1, Config: []byte(tc.config)})
			}})
			var list wire.ClassList
			f.mustCall(t, wire.MethodClasses, alice, nil, &list)
			if len(list.Classes) != tc.classes {
				t.Errorf("%d classes, want %d", len(list.Classes), tc.classes)
			}
		})
	}
}

func TestNodeAdmin(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 8*gib)
	tests := []struct {
		name   string
		caller wire.Caller
		req    wire.NodeAdminRequest
		parts  []string
	}{
		{"not an administrator", alice, wire.NodeAdminRequest{Node: "n1", State: string(state.NodeVariedOff)}, []string{"only root or an administrator may vary nodes"}},
		{"unknown state", carol, wire.NodeAdminRequest{Node: "n1", State: "Asleep"}, []string{`unknown node state "Asleep"`}},
		{"unknown node", carol, wire.NodeAdminRequest{Node: "n9", State: string(state.NodeVariedOff)}, []string{`no node "n9"`, "ducc nodes"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := call(t, f.h, wire.MethodNodeAdmin, tc.caller, tc.req, &wire.NodeList{})
			wantErr(t, err, wire.CodeUsage, tc.parts...)
			if n, _ := f.nodeInfo(t, "n1"); n.State != "Up" {
				t.Errorf("a refused vary changed n1 to %s", n.State)
			}
		})
	}

	// Varied off, a node takes no new work; varied on, it does again.
	var list wire.NodeList
	f.mustCall(t, wire.MethodNodeAdmin, carol, wire.NodeAdminRequest{Node: "n1", State: string(state.NodeVariedOff)}, &list)
	if len(list.Nodes) != 1 || list.Nodes[0].State != string(state.NodeVariedOff) {
		t.Errorf("vary-off answered %+v", list.Nodes)
	}
	f.fsm.View(func(v *state.View) {
		if v.NodeAdmin()["n1"] != state.NodeVariedOff {
			t.Errorf("the vary-off is not durable: %v", v.NodeAdmin())
		}
	})
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true", Memory: gib})
	eventually(t, "the run says why it waits", func() bool { return f.show(t, id).Reason != "" })
	if w := f.work(id); len(w.Procs) != 0 {
		t.Fatalf("a varied-off node got new work: %+v", w.Procs[0])
	}

	f.mustCall(t, wire.MethodNodeAdmin, root, wire.NodeAdminRequest{Node: "n1", State: string(state.NodeQuiescing)}, &list)
	if list.Nodes[0].State != string(state.NodeQuiescing) {
		t.Errorf("quiesce answered %+v", list.Nodes)
	}
	f.mustCall(t, wire.MethodNodeAdmin, carol, wire.NodeAdminRequest{Node: "n1"}, &list)
	if list.Nodes[0].State != "Up" {
		t.Errorf("vary-on answered %+v", list.Nodes)
	}
	if p := f.waitProc(t, id); p.Node != "n1" {
		t.Errorf("after vary-on the run went to %s", p.Node)
	}
}
