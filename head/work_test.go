package head_test

import (
	"slices"
	"testing"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// submitRun submits a managed reservation and returns its id.
func (f *fixture) submitRun(t *testing.T, c wire.Caller, r wire.RunRequest) uint64 {
	t.Helper()
	var rep wire.SubmitReply
	f.mustCall(t, wire.MethodRun, c, r, &rep)
	if rep.ID == 0 {
		t.Fatalf("run answered id 0")
	}
	return rep.ID
}

func TestRunRefusesWhatCannotRun(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	f.node("n1", 4*gib)
	// alice already holds the one managed reservation "capped" allows.
	f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Class: "capped", Memory: gib})
	f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Class: "small", Memory: 4 * gib})

	tests := []struct {
		name   string
		caller wire.Caller
		req    wire.RunRequest
		parts  []string
	}{
		{"no command", alice, wire.RunRequest{}, []string{"no command given", "ducc run [flags] -- CMD"}},
		{"negative memory", alice, wire.RunRequest{Path: "/bin/true", Memory: -5}, []string{"process_memory_size must not be negative", "-5"}},
		{"unknown class", alice, wire.RunRequest{Path: "/bin/true", Class: "hgih"}, []string{`unknown class "hgih"; the classes 'ducc run' and services may use (FIXED_SHARE) are: fixed, private, capped, small ('ducc classes' lists all)`}},
		{"fair-share class", alice, wire.RunRequest{Path: "/bin/true", Class: "normal"},
			[]string{`class "normal" is FAIR_SHARE`, "needs a FIXED_SHARE class", "fixed, private, capped, small"}},
		{"reserve class", alice, wire.RunRequest{Path: "/bin/true", Class: "reserve"}, []string{`class "reserve" is RESERVE`}},
		{"fits no node", alice, wire.RunRequest{Path: "/bin/true", Memory: 64 * gib},
			[]string{"no node can hold 64", "largest schedulable is 4"}},
		{"submit acl", alice, wire.RunRequest{Path: "/bin/true", Class: "private", Memory: gib},
			[]string{`user alice may not submit to class "private"`, "ask an administrator or use another class"}},
		{"job limit", alice, wire.RunRequest{Path: "/bin/true", Class: "capped", Memory: gib},
			[]string{"limit reached", "user alice has 1 of at most 1 jobs", `class "capped"`}},
		{"memory limit", alice, wire.RunRequest{Path: "/bin/true", Class: "small", Memory: 4 * gib},
			[]string{"limit reached", "user alice would use 8", "ask for less memory"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before int
			f.fsm.View(func(v *state.View) { before = len(v.All()) })
			err := call(t, f.h, wire.MethodRun, tc.caller, tc.req, &wire.SubmitReply{})
			wantErr(t, err, wire.CodeUsage, tc.parts...)
			f.fsm.View(func(v *state.View) {
				if n := len(v.All()); n != before {
					t.Errorf("a refused run left work behind: %d pieces, was %d", n, before)
				}
			})
		})
	}

	// Others are not held to alice's limits; the ACL lets bob in.
	f.submitRun(t, bob, wire.RunRequest{Path: "/bin/true", Class: "capped", Memory: gib})
	f.submitRun(t, bob, wire.RunRequest{Path: "/bin/true", Class: "private", Memory: gib})
}

func TestRunDefaultsAndKeepsTheRequest(t *testing.T) {
	f := newFixture(t, options{})
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/echo", Args: []string{"hi"}, Env: []string{"A=1"},
		Dir: "/tmp", Description: "greeting", MachineList: []string{"n1"}})
	w := f.work(id)
	if w.Kind != wire.WorkManaged || w.Class != "fixed" || w.Memory != 4*gib {
		t.Errorf("kind %s class %s memory %d; want managed in the default FIXED_SHARE class with 4 GiB", w.Kind, w.Class, w.Memory)
	}
	if w.User != "alice" || w.UID != 1001 || w.Home != "/home/alice" || w.Path != "/bin/echo" ||
		!slices.Equal(w.Args, []string{"hi"}) || !slices.Equal(w.Env, []string{"A=1"}) || w.Dir != "/tmp" ||
		w.Description != "greeting" || !slices.Equal(w.MachineList, []string{"n1"}) {
		t.Errorf("the request was not kept: %+v", w)
	}
	info := f.show(t, id)
	if info.State != string(state.StateWaitingForResources) || info.Ended || info.Command[0] != "/bin/echo" || info.Command[1] != "hi" {
		t.Errorf("show: %+v", info)
	}
	// Without any node it waits, and says why.
	eventually(t, "a reason why the run waits", func() bool { return f.show(t, id).Reason != "" })
}

func TestRunPicksTheFirstFixedClassWithoutADefault(t *testing.T) {
	f := newFixture(t, options{scheduler: `
classes:
  - {name: normal, policy: FAIR_SHARE, priority: 10, default: true}
  - {name: batch, policy: FIXED_SHARE, priority: 5}
  - {name: other, policy: FIXED_SHARE, priority: 5}
`})
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true"})
	if c := f.work(id).Class; c != "batch" {
		t.Errorf("class %q, want the first FIXED_SHARE class, batch", c)
	}
}

func TestRunWithoutAFixedClass(t *testing.T) {
	f := newFixture(t, options{scheduler: `
classes:
  - {name: normal, policy: FAIR_SHARE, priority: 10, default: true}
`})
	err := call(t, f.h, wire.MethodRun, alice, wire.RunRequest{Path: "/bin/true"}, &wire.SubmitReply{})
	wantErr(t, err, wire.CodeUsage, "no FIXED_SHARE class is configured", "policy: FIXED_SHARE")
}

func TestRunLifecycle(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 8*gib)
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Args: []string{"1"}, Memory: 2 * gib})
	p := f.waitProc(t, id)
	if p.Node != "n1" || p.State != wire.ProcStarting {
		t.Fatalf("process %+v, want Starting on n1", p)
	}
	// The node is told to start it, as alice, within its memory.
	eventually(t, "the desired state of n1 lists the process", func() bool {
		ds, ok := f.push.last("n1")
		return ok && len(ds.Procs) == 1 && ds.Procs[0].ID == p.ID
	})
	ds, _ := f.push.last("n1")
	if sp := ds.Procs[0]; sp.User != "alice" || sp.UID != 1001 || sp.Path != "/bin/sleep" || sp.MemoryLimit < 2*gib || sp.Stop {
		t.Errorf("desired process %+v", sp)
	}

	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcRunning, PID: 4242, StartedAt: 5, LogPath: "/log/1"})
	info := f.show(t, id)
	if info.State != string(state.StateRunning) || info.Node != "n1" || len(info.Procs) != 1 || info.Procs[0].PID != 4242 || info.Procs[0].LogPath != "/log/1" {
		t.Errorf("after the running report: %+v", info)
	}

	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcExited, ExitCode: 3, Reason: "exit status 3"})
	info = f.show(t, id)
	if !info.Ended || info.State != string(state.StateCompleted) || info.Completion != string(state.CompletionProgramExit) || info.ExitCode != 3 {
		t.Errorf("after the exit report: %+v", info)
	}
	// The end is acknowledged to the node, and the process no longer wanted.
	eventually(t, "n1 gets the ack of the ended process", func() bool {
		ds, ok := f.push.last("n1")
		return ok && slices.Contains(ds.Ack, p.ID) && len(ds.Procs) == 0
	})
}

func TestReserve(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	tests := []struct {
		name  string
		req   wire.ReserveRequest
		parts []string
	}{
		{"no size", wire.ReserveRequest{}, []string{"say how big a machine to reserve", "--memory 64G"}},
		{"unknown class", wire.ReserveRequest{Memory: gib, Class: "nope"}, []string{`unknown class "nope"; the classes reservations may use (RESERVE or FIXED_SHARE) are: reserve, fixed, `}},
		{"a fair-share class", wire.ReserveRequest{Memory: gib, Class: "normal"},
			[]string{`class "normal" is FAIR_SHARE`, "reservations need a RESERVE class (reserve) or a FIXED_SHARE class (fixed, "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := call(t, f.h, wire.MethodReserve, alice, tc.req, &wire.SubmitReply{})
			wantErr(t, err, wire.CodeUsage, tc.parts...)
		})
	}

	f.node("n1", 8*gib)
	// A size no known machine has is refused at once, with the sizes there are.
	err := call(t, f.h, wire.MethodReserve, alice, wire.ReserveRequest{Memory: 4 * gib}, &wire.SubmitReply{})
	wantErr(t, err, wire.CodeUsage, "no node has exactly 4 GiB", "1 × 8 GiB")
	var rep wire.SubmitReply
	f.mustCall(t, wire.MethodReserve, alice, wire.ReserveRequest{Memory: 8 * gib, Description: "mine"}, &rep)
	w := f.work(rep.ID)
	if w.Kind != wire.WorkReservation || w.Class != "reserve" || w.Memory != 8*gib || w.Description != "mine" {
		t.Errorf("reservation %+v", w)
	}
	eventually(t, "the reservation holds n1", func() bool {
		info := f.show(t, rep.ID)
		return info.State == string(state.StateRunning) && info.Node == "n1"
	})
	// Released by its owner, it ends at once: nothing runs on it.
	var info wire.WorkInfo
	f.mustCall(t, wire.MethodCancel, alice, wire.CancelRequest{ID: rep.ID}, &info)
	if !info.Ended || info.Completion != string(state.CompletionCanceledByUser) {
		t.Errorf("released reservation: %+v", info)
	}
}

func TestReserveWithoutADefaultClass(t *testing.T) {
	f := newFixture(t, options{scheduler: `
classes:
  - {name: normal, policy: FAIR_SHARE, priority: 10, default: true}
  - {name: whole, policy: RESERVE, priority: 1}
`})
	err := call(t, f.h, wire.MethodReserve, alice, wire.ReserveRequest{Memory: gib}, &wire.SubmitReply{})
	wantErr(t, err, wire.CodeUsage, "no default RESERVE class is configured", "default: true")
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name       string
		by         wire.Caller
		completion string
		reason     string
	}{
		{"owner", alice, string(state.CompletionCanceledByUser), "canceled by alice"},
		{"administrator", carol, string(state.CompletionCanceledByAdmin), "canceled by carol"},
		{"root", root, string(state.CompletionCanceledByAdmin), "canceled by root"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, options{})
			id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true"})
			var info wire.WorkInfo
			f.mustCall(t, wire.MethodCancel, tc.by, wire.CancelRequest{ID: id}, &info)
			if !info.Ended || info.Completion != tc.completion || info.Reason != tc.reason {
				t.Errorf("canceled by %s: ended %v completion %q reason %q; want %q %q",
					tc.by.User, info.Ended, info.Completion, info.Reason, tc.completion, tc.reason)
			}
			// Canceling again changes nothing and is no error.
			var again wire.WorkInfo
			f.mustCall(t, wire.MethodCancel, tc.by, wire.CancelRequest{ID: id}, &again)
			if again.Completion != tc.completion || again.EndedAt != info.EndedAt {
				t.Errorf("second cancel changed the work: %+v", again)
			}
		})
	}
}

func TestCancelRefusesOthersWork(t *testing.T) {
	f := newFixture(t, options{})
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true"})
	err := call(t, f.h, wire.MethodCancel, bob, wire.CancelRequest{ID: id}, &wire.WorkInfo{})
	wantErr(t, err, wire.CodeUsage, "belongs to alice", "only alice or an administrator may cancel it")
	if w := f.work(id); w.Ended() || w.Canceling {
		t.Errorf("bob's refused cancel changed alice's work: %s canceling=%v", w.State, w.Canceling)
	}
	err = call(t, f.h, wire.MethodCancel, alice, wire.CancelRequest{ID: 99}, &wire.WorkInfo{})
	wantErr(t, err, wire.CodeUsage, "no work with id 99")
}

func TestCancelStopsTheProcessFirst(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 8*gib)
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Memory: gib})
	p := f.waitProc(t, id)
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcRunning, PID: 7})

	var info wire.WorkInfo
	f.mustCall(t, wire.MethodCancel, alice, wire.CancelRequest{ID: id}, &info)
	if info.Ended || info.Reason != "stopping: canceled by alice" {
		t.Errorf("a canceled running work ends when its process does; got ended %v reason %q", info.Ended, info.Reason)
	}
	eventually(t, "n1 is told to stop the process", func() bool {
		ds, ok := f.push.last("n1")
		return ok && len(ds.Procs) == 1 && ds.Procs[0].Stop
	})
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcExited, ExitCode: -1, Signal: "TERM"})
	if info := f.show(t, id); !info.Ended || info.Completion != string(state.CompletionCanceledByUser) {
		t.Errorf("after the process ended: %+v", info)
	}
}

func TestShowAndWait(t *testing.T) {
	f := newFixture(t, options{})
	err := call(t, f.h, wire.MethodShow, alice, wire.IDRequest{ID: 42}, &wire.WorkInfo{})
	wantErr(t, err, wire.CodeUsage, "no work with id 42")
	err = call(t, f.h, wire.MethodWait, alice, wire.WaitRequest{ID: 42}, &wire.WorkInfo{})
	wantErr(t, err, wire.CodeUsage, "no work with id 42")

	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true", Memory: gib})
	// A timeout returns the work as it is.
	var info wire.WorkInfo
	f.mustCall(t, wire.MethodWait, alice, wire.WaitRequest{ID: id, TimeoutMS: 1}, &info)
	if info.Ended || info.State != string(state.StateWaitingForResources) {
		t.Errorf("wait timed out with %+v", info)
	}

	// Waiting for the work to leave a state returns once it has.
	got := make(chan wire.WorkInfo, 1)
	go func() {
		var info wire.WorkInfo
		if err := call(t, f.h, wire.MethodWait, alice, wire.WaitRequest{ID: id, State: string(state.StateWaitingForResources)}, &info); err != nil {
			t.Errorf("wait: %v", err)
		}
		got <- info
	}()
	f.node("n1", 4*gib)
	if info := <-got; info.State == string(state.StateWaitingForResources) {
		t.Errorf("wait for leaving WaitingForResources returned %s", info.State)
	}

	// Waiting for the end returns at once for ended work.
	f.mustCall(t, wire.MethodCancel, alice, wire.CancelRequest{ID: id}, &info)
	p := f.work(id).Procs[0]
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcExited})
	f.mustCall(t, wire.MethodWait, alice, wire.WaitRequest{ID: id}, &info)
	if !info.Ended {
		t.Errorf("wait without a timeout returned unended work: %+v", info)
	}
}

func TestJobsList(t *testing.T) {
	f := newFixture(t, options{})
	a1 := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true"})
	a2 := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/false"})
	b1 := f.submitRun(t, bob, wire.RunRequest{Path: "/bin/true"})
	f.mustCall(t, wire.MethodCancel, alice, wire.CancelRequest{ID: a2}, nil)
	var svc wire.SubmitReply
	f.mustCall(t, wire.MethodServiceRegister, alice, wire.ServiceRegisterRequest{Spec: wire.ServiceSpec{Endpoint: "TCP:127.0.0.1:1"}}, &svc)

	tests := []struct {
		name string
		req  wire.ListRequest
		want []uint64
	}{
		{"active", wire.ListRequest{}, []uint64{a1, b1}},
		{"active of alice", wire.ListRequest{User: "alice"}, []uint64{a1}},
		{"all of alice", wire.ListRequest{User: "alice", All: true}, []uint64{a1, a2}},
		{"all", wire.ListRequest{All: true}, []uint64{a1, a2, b1}},
		{"nobody", wire.ListRequest{User: "dave", All: true}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var list wire.WorkList
			f.mustCall(t, wire.MethodJobs, bob, tc.req, &list)
			var ids []uint64
			for _, w := range list.Work {
				ids = append(ids, w.ID)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, tc.want) {
				t.Errorf("listed %v, want %v (services are listed by 'ducc services query', not here)", ids, tc.want)
			}
		})
	}
}

func TestGroupLimitsCountEveryMember(t *testing.T) {
	f := newFixture(t, options{scheduler: `
classes:
  - {name: normal, policy: FAIR_SHARE, priority: 10, default: true}
  - name: team
    policy: FIXED_SHARE
    priority: 5
    default: true
    limits:
      - {group: "4242424", max_jobs: 1}
      - {group: root, max_jobs: 1}
`})
	// A group id the system does not know is named by its number.
	team := func(c wire.Caller, gids ...uint32) wire.Caller { c.Groups = gids; return c }
	f.submitRun(t, team(alice, 4242424), wire.RunRequest{Path: "/bin/true"})
	err := call(t, f.h, wire.MethodRun, team(bob, 4242424), wire.RunRequest{Path: "/bin/true"}, &wire.SubmitReply{})
	wantErr(t, err, wire.CodeUsage, "limit reached: group 4242424 has 1 of at most 1 jobs")
	// Group id 0 is root on every system.
	f.submitRun(t, team(bob, 0), wire.RunRequest{Path: "/bin/true"})
	err = call(t, f.h, wire.MethodRun, team(alice, 0), wire.RunRequest{Path: "/bin/true"}, &wire.SubmitReply{})
	wantErr(t, err, wire.CodeUsage, "limit reached: group root has 1 of at most 1 jobs")
	// Outside the group, nothing is counted.
	f.submitRun(t, bob, wire.RunRequest{Path: "/bin/true"})
}

// TestShowsAStartNotYetWritten: a process's start reported by its agent
// is written to the state with the next log entry (orch's startLinger);
// meanwhile show and list say what runs (the process Running with its
// pid, the managed reservation Running since the start), not Assigned
// with no time.
func TestShowsAStartNotYetWritten(t *testing.T) {
	f := newFixture(t, options{})
	f.app.HoldLater = true
	f.node("n1", 4*gib)
	id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/sleep", Args: []string{"30"}, Memory: gib})
	p := f.waitProc(t, id)
	started := f.clock.Now().UnixMilli()
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcRunning, PID: 4242, StartedAt: started})
	if w := f.work(id); w.State != state.StateAssigned {
		t.Fatalf("the test's premise: the start is written already (%s)", w.State)
	}
	info := f.show(t, id)
	if info.State != string(state.StateRunning) || info.StartedAt != started || len(info.Procs) != 1 ||
		info.Procs[0].State != wire.ProcRunning || info.Procs[0].PID != 4242 || info.Procs[0].StartedAt != started {
		t.Errorf("show before the start is written: %s since %d, processes %+v; want Running since %d, pid 4242", info.State, info.StartedAt, info.Procs, started)
	}
	var list wire.WorkList
	f.mustCall(t, wire.MethodJobs, alice, wire.ListRequest{}, &list)
	if len(list.Work) != 1 || list.Work[0].State != string(state.StateRunning) {
		t.Errorf("list before the start is written: %+v", list.Work)
	}
	f.app.ReleaseLater()
	if w := f.work(id); w.State != state.StateRunning || w.StartedAt != started {
		t.Errorf("after the start is written: %s since %d", w.State, w.StartedAt)
	}
	if info := f.show(t, id); info.State != string(state.StateRunning) || info.StartedAt != started {
		t.Errorf("show after the start is written: %s since %d", info.State, info.StartedAt)
	}
}
