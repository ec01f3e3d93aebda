package head_test

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// A TCP endpoint nothing listens on: its pinger fails at once.
const deadEndpoint = "TCP:127.0.0.1:1"

// register registers a service and returns its id.
func (f *fixture) register(t *testing.T, c wire.Caller, s wire.ServiceSpec) uint64 {
	t.Helper()
	var rep wire.SubmitReply
	f.mustCall(t, wire.MethodServiceRegister, c, wire.ServiceRegisterRequest{Spec: s}, &rep)
	return rep.ID
}

// query returns one service as 'ducc services query' shows it.
func (f *fixture) query(t *testing.T, ref string) wire.ServiceInfo {
	t.Helper()
	var list wire.ServiceList
	f.mustCall(t, wire.MethodServiceQuery, alice, wire.ServiceQueryRequest{Service: ref}, &list)
	if len(list.Services) != 1 {
		t.Fatalf("query %s answered %d services", ref, len(list.Services))
	}
	return list.Services[0]
}

func TestRegisterServiceRefusesBadSpecs(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	f.node("n1", 8*gib)
	tests := []struct {
		name  string
		spec  wire.ServiceSpec
		parts []string
	}{
		{"no endpoint", wire.ServiceSpec{}, []string{"write CUSTOM:<name>, HTTP:<url>, TCP:<host:port> or UIMA-AS:<queue>:<broker-url>"}},
		{"unknown kind", wire.ServiceSpec{Endpoint: "UDP:x:1"}, []string{`unknown kind "UDP"`}},
		{"tcp without port", wire.ServiceSpec{Endpoint: "TCP:db"}, []string{"TCP endpoints are TCP:<host:port>"}},
		{"custom without pinger", wire.ServiceSpec{Endpoint: "CUSTOM:cache"}, []string{"is CUSTOM", "service_ping_executable"}},
		{"depends on itself", wire.ServiceSpec{Endpoint: deadEndpoint, Dependency: []string{deadEndpoint}}, []string{"cannot depend on itself"}},
		{"bad dependency", wire.ServiceSpec{Endpoint: deadEndpoint, Dependency: []string{"db"}}, []string{"service_dependency:", "write CUSTOM:<name>"}},
		{"negative", wire.ServiceSpec{Endpoint: deadEndpoint, Executable: "/bin/s", FailuresLimit: -1}, []string{"must not be negative"}},
		{"instances without executable", wire.ServiceSpec{Endpoint: deadEndpoint, Instances: 2}, []string{"need a process_executable", "ping-only"}},
		{"more than max", wire.ServiceSpec{Endpoint: deadEndpoint, Executable: "/bin/s", Instances: 3, MaxInstances: 2},
			[]string{"instances (3) is more than max_instances (2)"}},
		{"too many", wire.ServiceSpec{Endpoint: deadEndpoint, Executable: "/bin/s", MaxInstances: 1 << 16}, []string{"at most 65535 instances"}},
		{"fair-share class", wire.ServiceSpec{Endpoint: deadEndpoint, Executable: "/bin/s", Class: "normal"},
			[]string{"scheduling_class:", `class "normal" is FAIR_SHARE`}},
		{"fits no node", wire.ServiceSpec{Endpoint: deadEndpoint, Executable: "/bin/s", Memory: 64 * gib}, []string{"no node can hold 64"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := call(t, f.h, wire.MethodServiceRegister, alice, wire.ServiceRegisterRequest{Spec: tc.spec}, &wire.SubmitReply{})
			wantErr(t, err, wire.CodeUsage, tc.parts...)
		})
	}
	var list wire.ServiceList
	f.mustCall(t, wire.MethodServiceQuery, alice, wire.ServiceQueryRequest{}, &list)
	if len(list.Services) != 0 {
		t.Errorf("refused registrations left %d services", len(list.Services))
	}
}

func TestRegisterAndQueryServices(t *testing.T) {
	f := newFixture(t, options{})
	id := f.register(t, alice, wire.ServiceSpec{Endpoint: deadEndpoint, Description: "ping only"})
	exec := f.register(t, bob, wire.ServiceSpec{Endpoint: "HTTP:127.0.0.1:1/health", Executable: "/bin/server", Instances: 2})

	info := f.query(t, strconv.FormatUint(id, 10))
	if info.Endpoint != deadEndpoint || info.User != "alice" || info.Policy != "ping-only" || !info.Enabled || info.Class != "fixed" ||
		info.Memory != 4*gib || info.Spec.Description != "ping only" || info.Spec.PingIntervalMS != spec.DefaultPingInterval.Milliseconds() {
		t.Errorf("ping-only service: %+v", info)
	}
	if byEndpoint := f.query(t, deadEndpoint); byEndpoint.ID != id {
		t.Errorf("query by endpoint found %d, want %d", byEndpoint.ID, id)
	}
	other := f.query(t, strconv.FormatUint(exec, 10))
	if other.Policy != "reference" || other.Instances != 2 || other.State != wire.SvcStateStopped {
		t.Errorf("service with processes, not started: %+v", other)
	}
	var list wire.ServiceList
	f.mustCall(t, wire.MethodServiceQuery, bob, wire.ServiceQueryRequest{}, &list)
	if len(list.Services) != 2 {
		t.Errorf("query of all lists %d services, want 2", len(list.Services))
	}
	for _, ref := range []string{"99", "TCP:127.0.0.1:2"} {
		err := call(t, f.h, wire.MethodServiceQuery, alice, wire.ServiceQueryRequest{Service: ref}, &list)
		wantErr(t, err, wire.CodeUsage, fmt.Sprintf("no registered service %q", ref), "'ducc services query' lists them")
	}

	err := call(t, f.h, wire.MethodServiceRegister, bob, wire.ServiceRegisterRequest{Spec: wire.ServiceSpec{Endpoint: deadEndpoint}}, &wire.SubmitReply{})
	wantErr(t, err, wire.CodeUsage, fmt.Sprintf("already registered by service %d", id))
}

func TestControlServiceOwners(t *testing.T) {
	tests := []struct {
		name   string
		caller wire.Caller
		ok     bool
	}{
		{"owner", alice, true},
		{"service administrator", bob, true},
		{"cluster administrator", carol, true},
		{"root", root, true},
		{"someone else", wire.Caller{UID: 1009, User: "dave"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, options{})
			id := f.register(t, alice, wire.ServiceSpec{Endpoint: deadEndpoint, Administrators: []string{"bob"}})
			var info wire.ServiceInfo
			err := call(t, f.h, wire.MethodServiceControl, tc.caller,
				wire.ServiceControlRequest{Service: strconv.FormatUint(id, 10), Action: wire.SvcDisable}, &info)
			if !tc.ok {
				wantErr(t, err, wire.CodeUsage, "belongs to alice", "only alice, root or an administrator of the service may change it")
				if f.query(t, deadEndpoint).Enabled != true {
					t.Errorf("a refused disable disabled the service")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.Enabled {
				t.Errorf("after disable the service is still enabled")
			}
			// The state shown follows at the Service Manager's next decision.
			eventually(t, "the service shows Disabled", func() bool {
				info := f.query(t, deadEndpoint)
				return info.State == wire.SvcStateDisabled && info.Reason == "disabled by "+tc.caller.User
			})
		})
	}
}

func TestControlService(t *testing.T) {
	f := newFixture(t, options{})
	ping := f.register(t, alice, wire.ServiceSpec{Endpoint: deadEndpoint})
	svc := f.register(t, alice, wire.ServiceSpec{Endpoint: "TCP:127.0.0.1:2", Executable: "/bin/server", MaxInstances: 2})
	ref := func(id uint64) string { return strconv.FormatUint(id, 10) }
	control := func(r wire.ServiceControlRequest) (wire.ServiceInfo, error) {
		var info wire.ServiceInfo
		err := call(t, f.h, wire.MethodServiceControl, alice, r, &info)
		return info, err
	}

	refused := []struct {
		name  string
		req   wire.ServiceControlRequest
		parts []string
	}{
		{"unknown service", wire.ServiceControlRequest{Service: "42", Action: wire.SvcStart}, []string{`no registered service "42"`}},
		{"unknown action", wire.ServiceControlRequest{Service: ref(svc), Action: "explode"}, []string{`unknown service action "explode"`}},
		{"negative instances", wire.ServiceControlRequest{Service: ref(svc), Action: wire.SvcStart, Instances: -1}, []string{"--instances must not be negative"}},
		{"start a ping-only service's instances", wire.ServiceControlRequest{Service: ref(ping), Action: wire.SvcStart, Instances: 1}, []string{"is ping-only"}},
		{"start past max_instances", wire.ServiceControlRequest{Service: ref(svc), Action: wire.SvcStart, Instances: 3},
			[]string{"would pass max_instances 2", "ducc services modify"}},
		{"modify nothing", wire.ServiceControlRequest{Service: ref(svc), Action: wire.SvcModify}, []string{"nothing to modify"}},
		{"modify the endpoint", wire.ServiceControlRequest{Service: ref(svc), Action: wire.SvcModify, Keys: []string{"service_request_endpoint"}},
			[]string{"service_request_endpoint cannot be modified", "modifiable keys are", "instances"}},
		{"modify instances over max", wire.ServiceControlRequest{Service: ref(svc), Action: wire.SvcModify, Keys: []string{"instances", "max_instances"},
			Spec: wire.ServiceSpec{Instances: 5, MaxInstances: 4}}, []string{"instances (5) is more than max_instances (4)"}},
		{"modify into a bad spec", wire.ServiceControlRequest{Service: ref(svc), Action: wire.SvcModify, Keys: []string{"service_dependency"},
			Spec: wire.ServiceSpec{Dependency: []string{"TCP:127.0.0.1:2"}}}, []string{"cannot depend on itself"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := control(tc.req)
			wantErr(t, err, wire.CodeUsage, tc.parts...)
		})
	}

	info, err := control(wire.ServiceControlRequest{Service: ref(svc), Action: wire.SvcModify, Keys: []string{"instances", "max_instances"},
		Spec: wire.ServiceSpec{Instances: 3, MaxInstances: 4}})
	if err != nil || info.Spec.Instances != 3 || info.Spec.MaxInstances != 4 {
		t.Errorf("modify instances: %v %+v", err, info.Spec)
	}
	if info, err = control(wire.ServiceControlRequest{Service: ref(svc), Action: wire.SvcObserve}); err != nil || !info.ByReferences {
		t.Errorf("observe-references: %v by references %v", err, info.ByReferences)
	}
	if info, err = control(wire.ServiceControlRequest{Service: ref(svc), Action: wire.SvcIgnore}); err != nil || info.ByReferences {
		t.Errorf("ignore-references: %v by references %v", err, info.ByReferences)
	}

	// A disabled service must be enabled before it starts.
	if _, err = control(wire.ServiceControlRequest{Service: ref(svc), Action: wire.SvcDisable}); err != nil {
		t.Fatal(err)
	}
	_, err = control(wire.ServiceControlRequest{Service: ref(svc), Action: wire.SvcStart})
	wantErr(t, err, wire.CodeUsage, "is disabled (disabled by alice)", fmt.Sprintf("ducc services enable %d", svc))
	if info, err = control(wire.ServiceControlRequest{Service: ref(svc), Action: wire.SvcEnable}); err != nil || !info.Enabled {
		t.Errorf("enable: %v enabled %v", err, info.Enabled)
	}
	if info, err = control(wire.ServiceControlRequest{Service: ref(svc), Action: wire.SvcStart}); err != nil || !info.Started || info.Policy != "manual" {
		t.Errorf("start: %v started %v policy %s", err, info.Started, info.Policy)
	}
	if info, err = control(wire.ServiceControlRequest{Service: ref(svc), Action: wire.SvcStop}); err != nil || info.Started {
		t.Errorf("stop: %v started %v", err, info.Started)
	}

	// Unregistered, it is gone from queries and ends.
	if info, err = control(wire.ServiceControlRequest{Service: deadEndpoint, Action: wire.SvcUnregister}); err != nil {
		t.Fatal(err)
	}
	if w := f.work(ping); !w.Ended() || w.Completion != state.CompletionCanceledByUser {
		t.Errorf("unregistered service: %s %s", w.State, w.Completion)
	}
	_, err = control(wire.ServiceControlRequest{Service: ref(ping), Action: wire.SvcStart})
	wantErr(t, err, wire.CodeUsage, "no registered service")
}

func TestStartedServiceRunsItsInstances(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 8*gib)
	id := f.register(t, alice, wire.ServiceSpec{Endpoint: deadEndpoint, Executable: "/bin/server", Memory: gib})
	var info wire.ServiceInfo
	f.mustCall(t, wire.MethodServiceControl, alice, wire.ServiceControlRequest{Service: deadEndpoint, Action: wire.SvcStart}, &info)
	p := f.waitProc(t, id)
	if p.Node != "n1" || p.Instance != 0 {
		t.Errorf("instance process %+v", p)
	}
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcRunning, PID: 31, LogPath: "/log/svc"})
	info = f.query(t, deadEndpoint)
	if info.Running != 1 || len(info.Procs) != 1 || info.Procs[0].Proc.PID != 31 || info.Procs[0].Proc.LogPath != "/log/svc" || info.Procs[0].Ready {
		t.Errorf("a started service with a running instance: running %d procs %+v", info.Running, info.Procs)
	}
	// Unregistering stops the instance first.
	f.mustCall(t, wire.MethodServiceControl, alice, wire.ServiceControlRequest{Service: deadEndpoint, Action: wire.SvcUnregister}, &info)
	if info.State != wire.SvcStateStopping || info.Reason != "unregistering" {
		t.Errorf("unregistering a running service: %s %q", info.State, info.Reason)
	}
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcExited})
	if w := f.work(id); !w.Ended() {
		t.Errorf("an unregistered service whose instance ended is %s", w.State)
	}
}

func TestJobWaitsForItsService(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	endpoint := "TCP:" + ln.Addr().String()

	f := newFixture(t, options{})
	svc := f.register(t, alice, wire.ServiceSpec{Endpoint: endpoint, Administrators: []string{"bob"}})
	job := f.submitJob(t, bob, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/w", ServiceDependency: []string{endpoint}}, Items: []string{"a"}})
	if w := f.work(job); w.State != state.StateWaitingForServices && w.State != state.StateWaitingForResources {
		t.Fatalf("a job naming a registered service is %s", w.State)
	}
	if info := f.show(t, job); info.State == string(state.StateWaitingForServices) && !strings.Contains(info.Reason, endpoint) {
		t.Errorf("a job waiting for a service says which: %q", info.Reason)
	}
	eventually(t, "the service answers its pinger and the job goes on", func() bool {
		return f.work(job).State == state.StateWaitingForResources && f.query(t, endpoint).State == wire.SvcStateAvailable
	})
	info := f.query(t, endpoint)
	if !info.Alive || !info.Healthy || info.LastPing == 0 || !slices.Contains(info.References, job) {
		t.Errorf("the service the job uses: alive %v healthy %v last ping %d references %v", info.Alive, info.Healthy, info.LastPing, info.References)
	}
	if info.ID != svc {
		t.Errorf("query by endpoint found %d, want %d", info.ID, svc)
	}
}

// TestServiceShowAgreesWithQuery: 'ducc show' of a service says the state
// 'ducc services query' says (after 'services stop', show said Running
// and query Disabled or Stopped).
func TestServiceShowAgreesWithQuery(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 8*gib)
	id := f.register(t, alice, wire.ServiceSpec{Endpoint: deadEndpoint, Executable: "/bin/server", Memory: gib})
	ref := strconv.FormatUint(id, 10)
	steps := []struct {
		action string
		want   string
	}{
		{"", wire.SvcStateStopped},
		{wire.SvcStart, ""},
		{wire.SvcStop, ""},
		{wire.SvcDisable, wire.SvcStateDisabled},
	}
	for _, s := range steps {
		if s.action != "" {
			var info wire.ServiceInfo
			f.mustCall(t, wire.MethodServiceControl, alice, wire.ServiceControlRequest{Service: ref, Action: s.action}, &info)
		}
		if s.action == wire.SvcStart {
			p := f.waitProc(t, id)
			f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcRunning, PID: 31})
		}
		// The Service Manager decides in its own time: wait for the state
		// wanted, then both must say it.
		var q wire.ServiceInfo
		var shown wire.WorkInfo
		eventually(t, fmt.Sprintf("after %q, show and services query agree", s.action), func() bool {
			q, shown = f.query(t, ref), f.show(t, id)
			return (s.want == "" || q.State == s.want) && shown.State == q.State && shown.Reason == q.Reason
		})
	}
}
