package state

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

func svcWork(ep string) *Work {
	sp := wire.ServiceSpec{Endpoint: ep, Executable: "/bin/srv", Instances: 2, FailuresLimit: 2}
	spec.ServiceDefaults(&sp)
	return &Work{Kind: wire.WorkService, User: "alice", Class: "fixed", Memory: 1 << 30, Path: "/bin/srv", Service: &Service{Spec: sp}}
}

// runInstance assigns instance inst and reports it running; ready marks it
// initialized.
func runInstance(t *testing.T, f *FSM, idx *uint64, inst int, ready bool) string {
	t.Helper()
	*idx++
	res := apply(t, f, *idx, Command{Type: CmdAssign, Time: int64(*idx), WorkID: 1, Assign: &Assignment{Node: "n1", Shares: 1, Instance: inst}})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	pid := res[0].ProcID
	*idx++
	apply(t, f, *idx, Command{Type: CmdProc, Time: int64(*idx), Proc: &wire.ProcStatus{ID: pid, WorkID: 1, State: wire.ProcRunning, PID: 10}})
	if ready {
		*idx++
		apply(t, f, *idx, Command{Type: CmdSvcChange, Time: int64(*idx), WorkID: 1, ProcID: pid, Service: &ServiceChange{Op: SvcOpReady}})
	}
	return pid
}

func kill(t *testing.T, f *FSM, idx *uint64, pid string) {
	*idx++
	apply(t, f, *idx, Command{Type: CmdProc, Time: int64(*idx) * 1000, Proc: &wire.ProcStatus{ID: pid, WorkID: 1, State: wire.ProcExited, ExitCode: -1, Signal: "killed", Reason: "killed by signal 9"}})
}

func TestServiceRegistryAndFailures(t *testing.T) {
	f := New()
	idx := uint64(1)
	res := apply(t, f, idx, Command{Type: CmdSvcRegister, Time: 1, Work: svcWork("HTTP:h:1/")})
	if res[0].Err != nil || res[0].ID != 1 {
		t.Fatalf("register: %+v", res)
	}
	idx++
	if res := apply(t, f, idx, Command{Type: CmdSvcRegister, Time: 2, Work: svcWork("HTTP:h:1/")}); res[0].Err == nil ||
		!strings.Contains(res[0].Err.Error(), "already registered") {
		t.Fatalf("duplicate endpoint: %+v", res)
	}
	// The same instance id cannot run twice.
	pid := runInstance(t, f, &idx, 0, true)
	idx++
	if res := apply(t, f, idx, Command{Type: CmdAssign, Time: 5, WorkID: 1, Assign: &Assignment{Node: "n1", Instance: 0}}); res[0].Err == nil {
		t.Fatal("instance 0 assigned twice")
	}
	// Three runtime failures pass instance_failures_limit 2.
	for i := range 3 {
		kill(t, f, &idx, pid)
		var s *Service
		f.View(func(v *View) { s = v.Work(1).Service.copy() })
		if want := i == 2; s.Disabled != want {
			t.Fatalf("after failure %d: disabled %v (%s)", i+1, s.Disabled, s.Why)
		}
		if i < 2 {
			pid = runInstance(t, f, &idx, 0, true)
		}
	}
	var w *Work
	f.View(func(v *View) { w = v.Work(1).Copy() })
	if !strings.Contains(w.Service.Why, "Excessive runtime errors") || len(w.Service.Failures) != 3 {
		t.Fatalf("disabled: %+v", w.Service)
	}
	// Enable clears the counts; two init failures pass the limit of 1.
	idx++
	apply(t, f, idx, Command{Type: CmdSvcChange, Time: 10, WorkID: 1, Service: &ServiceChange{Op: SvcOpEnable}})
	for range 2 {
		kill(t, f, &idx, runInstance(t, f, &idx, 1, false))
	}
	f.View(func(v *View) { w = v.Work(1).Copy() })
	if !w.Service.Disabled || !strings.Contains(w.Service.Why, "Excessive initialization errors") {
		t.Fatalf("init failures: %+v", w.Service)
	}
	// A stop by the head is not a failure.
	idx++
	apply(t, f, idx, Command{Type: CmdSvcChange, Time: 10, WorkID: 1, Service: &ServiceChange{Op: SvcOpEnable}})
	pid = runInstance(t, f, &idx, 0, true)
	idx++
	apply(t, f, idx, Command{Type: CmdStopProc, Time: 11, WorkID: 1, ProcID: pid, Reason: "instance removed"})
	kill(t, f, &idx, pid)
	f.View(func(v *View) { w = v.Work(1).Copy() })
	if len(w.Service.Failures) != 0 || w.Service.Disabled {
		t.Fatalf("stop counted as a failure: %+v", w.Service)
	}

	// Changes, then a snapshot round trip keeps the registry.
	for _, ch := range []ServiceChange{
		{Op: SvcOpStart, N: 2},
		{Op: SvcOpDelete, IDs: []int{1}},
		{Op: SvcOpModify, Spec: &wire.ServiceSpec{LingerMS: 1234, Instances: 5}, Keys: []string{"service_linger"}},
	} {
		idx++
		apply(t, f, idx, Command{Type: CmdSvcChange, Time: 20, WorkID: 1, Service: &ch})
	}
	f.View(func(v *View) { w = v.Work(1).Copy() })
	if !reflect.DeepEqual(w.Service.IDs, []int{0, 2, 3}) || w.Service.Spec.LingerMS != 1234 || !w.Service.Started {
		t.Fatalf("after changes: %+v", w.Service)
	}
	g := roundTrip(t, f)
	var got *Work
	g.View(func(v *View) { got = v.ActiveService("HTTP:h:1/").Copy() })
	if !reflect.DeepEqual(got.Service, w.Service) || !reflect.DeepEqual(got.Procs, w.Procs) {
		t.Fatalf("snapshot lost service state:\n got %+v\nwant %+v", got.Service, w.Service)
	}
}

func TestJobWaitsForServices(t *testing.T) {
	f := New()
	j := &Work{Kind: wire.WorkJob, User: "bob", Deps: []string{"TCP:h:1"}, Job: &Job{Items: []Item{{Data: "x"}}}}
	res := apply(t, f, 1, Command{Type: CmdSubmit, Time: 1, Work: j, Last: true})
	var st WorkState
	f.View(func(v *View) { st = v.Work(res[0].ID).State })
	if st != StateWaitingForServices {
		t.Fatalf("state %s", st)
	}
	apply(t, f, 2, Command{Type: CmdDepsMet, Time: 2, WorkID: res[0].ID})
	f.View(func(v *View) { st = v.Work(res[0].ID).State })
	if st != StateWaitingForResources {
		t.Fatalf("state %s", st)
	}
	// Refused at once: completed with the reason.
	res = apply(t, f, 3, Command{Type: CmdSubmit, Time: 3, Work: j, Last: true, Completion: CompletionServicesUnavail, Reason: "service not registered: TCP:h:1"})
	var w *Work
	f.View(func(v *View) { w = v.Work(res[0].ID).Copy() })
	if !w.Ended() || w.Completion != CompletionServicesUnavail {
		t.Fatalf("%+v", w)
	}
}
