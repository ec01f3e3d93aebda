package head_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/head"
	"github.com/ducc-project/ducc/wire"
)

// admitScheduler is testScheduler with a class that has both a submit ACL
// and a limit, so one submission can fail both.
const admitScheduler = testScheduler + `
    - name: guarded
      policy: FIXED_SHARE
      priority: 5
      submit_acl: "bob"
      limits:
        - user: "*"
          max_memory: 1G
`

// TestAdmissionOrder: every kind of work passes the admission checks in
// one order, each once. A submission that fails two checks is refused by
// the first in the list, and the checks after it are not visited; one that
// passes visits every check once.
func TestAdmissionOrder(t *testing.T) {
	want := []string{"request", "class", "fit", "gpus", "items", "acl", "limits", "services"}
	if got := head.AdmissionChecks(); !slices.Equal(got, want) {
		t.Fatalf("admission checks are %v, want %v", got, want)
	}
	f := newFixture(t, options{scheduler: admitScheduler})
	f.node("n1", 4*gib)
	var visits []string
	f.h.OnAdmissionCheck(func(kind wire.WorkKind, check string) { visits = append(visits, string(kind)+":"+check) })

	const exe = "/bin/true"
	svc := func(s wire.ServiceSpec) wire.ServiceRegisterRequest {
		s.Endpoint = deadEndpoint
		return wire.ServiceRegisterRequest{Spec: s}
	}
	bigItem := strings.Repeat("x", 1<<20+1)
	tests := []struct {
		name   string
		method string
		kind   wire.WorkKind
		caller wire.Caller
		req    any
		stop   string   // the check that refuses; "" for none
		parts  []string // of its error
	}{
		// ducc run
		{"run: request and class", wire.MethodRun, wire.WorkManaged, alice, wire.RunRequest{Class: "hgih"},
			"request", []string{"no command given"}},
		{"run: class and fit", wire.MethodRun, wire.WorkManaged, alice, wire.RunRequest{Path: exe, Class: "hgih", Memory: 64 * gib},
			"class", []string{`unknown class "hgih"`}},
		{"run: fit and acl", wire.MethodRun, wire.WorkManaged, alice, wire.RunRequest{Path: exe, Class: "private", Memory: 64 * gib},
			"fit", []string{"no node can hold 64"}},
		{"run: acl and limits", wire.MethodRun, wire.WorkManaged, alice, wire.RunRequest{Path: exe, Class: "guarded", Memory: 2 * gib},
			"acl", []string{`user alice may not submit to class "guarded"`}},
		{"run: limits alone", wire.MethodRun, wire.WorkManaged, bob, wire.RunRequest{Path: exe, Class: "guarded", Memory: 2 * gib},
			"limits", []string{"limit reached", "user bob would use 2"}},
		{"run: admitted", wire.MethodRun, wire.WorkManaged, alice, wire.RunRequest{Path: exe, Memory: gib}, "", nil},

		// ducc reserve
		{"reserve: request and class", wire.MethodReserve, wire.WorkReservation, alice, wire.ReserveRequest{Class: "hgih"},
			"request", []string{"say how big a machine to reserve"}},
		{"reserve: class and fit", wire.MethodReserve, wire.WorkReservation, alice, wire.ReserveRequest{Class: "normal", Memory: 64 * gib},
			"class", []string{`class "normal" is FAIR_SHARE; reservations need a RESERVE class`}},
		{"reserve: fit and acl", wire.MethodReserve, wire.WorkReservation, alice, wire.ReserveRequest{Class: "private", Memory: 64 * gib},
			"fit", []string{"no node can hold 64"}},
		{"reserve: acl and limits", wire.MethodReserve, wire.WorkReservation, alice, wire.ReserveRequest{Class: "guarded", Memory: 2 * gib},
			"acl", []string{`user alice may not submit to class "guarded"`}},
		{"reserve: limits alone", wire.MethodReserve, wire.WorkReservation, bob, wire.ReserveRequest{Class: "guarded", Memory: 2 * gib},
			"limits", []string{"limit reached", "user bob would use 2"}},
		{"reserve: admitted", wire.MethodReserve, wire.WorkReservation, alice, wire.ReserveRequest{Memory: 4 * gib}, "", nil},

		// ducc submit
		{"job: request and class", wire.MethodSubmit, wire.WorkJob, alice, wire.SubmitJobRequest{Spec: wire.JobSpec{Class: "hgih"}},
			"request", []string{"process_executable is required"}},
		{"job: class and fit", wire.MethodSubmit, wire.WorkJob, alice, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: exe, Class: "hgih", Memory: 64 * gib}},
			"class", []string{`unknown class "hgih"`}},
		{"job: fit and items", wire.MethodSubmit, wire.WorkJob, alice,
			wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: exe, Memory: 64 * gib}, Items: []string{bigItem}},
			"fit", []string{"no node can hold 64"}},
		{"job: items and acl", wire.MethodSubmit, wire.WorkJob, alice,
			wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: exe, Class: "private"}, Items: []string{bigItem}},
			"items", []string{"work item 0 is 1048577 bytes"}},
		{"job: driver and acl", wire.MethodSubmit, wire.WorkJob, alice,
			wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: exe, DriverExecutable: exe, Class: "private"}, Items: []string{"a"}},
			"items", []string{"gets its items from the driver process; send none"}},
		{"job: acl and limits", wire.MethodSubmit, wire.WorkJob, alice,
			wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: exe, Class: "guarded", Memory: 2 * gib}},
			"acl", []string{`user alice may not submit to class "guarded"`}},
		{"job: limits alone", wire.MethodSubmit, wire.WorkJob, bob,
			wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: exe, Class: "guarded", Memory: 2 * gib}},
			"limits", []string{"limit reached", "user bob would use 2"}},
		{"job: admitted, with a service that is not registered", wire.MethodSubmit, wire.WorkJob, alice,
			wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: exe, Memory: gib, ServiceDependency: []string{"TCP:nowhere:1"}}, Items: []string{"a"}},
			"", nil},

		// ducc services register
		{"service: request and class", wire.MethodServiceRegister, wire.WorkService, alice,
			wire.ServiceRegisterRequest{Spec: wire.ServiceSpec{Class: "hgih"}},
			"request", []string{"write CUSTOM:<name>, HTTP:<url>, TCP:<host:port> or UIMA-AS:<queue>:<broker-url>"}},
		{"service: class and fit", wire.MethodServiceRegister, wire.WorkService, alice,
			svc(wire.ServiceSpec{Executable: exe, Class: "hgih", Memory: 64 * gib}),
			"class", []string{"scheduling_class:", `unknown class "hgih"`}},
		{"service: fit and acl", wire.MethodServiceRegister, wire.WorkService, alice,
			svc(wire.ServiceSpec{Executable: exe, Class: "private", Memory: 64 * gib}),
			"fit", []string{"no node can hold 64"}},
		{"service: acl and limits", wire.MethodServiceRegister, wire.WorkService, alice,
			svc(wire.ServiceSpec{Executable: exe, Class: "guarded", Memory: 2 * gib}),
			"acl", []string{`user alice may not submit to class "guarded"`}},
		{"service: limits alone", wire.MethodServiceRegister, wire.WorkService, bob,
			svc(wire.ServiceSpec{Executable: exe, Class: "guarded", Memory: 2 * gib}),
			"limits", []string{"limit reached", "user bob would use 2"}},
		{"service: admitted, ping-only", wire.MethodServiceRegister, wire.WorkService, alice, svc(wire.ServiceSpec{}), "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			visits = nil
			err := call(t, f.h, tc.method, tc.caller, tc.req, &wire.SubmitReply{})
			visited := want
			if tc.stop == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else {
				wantErr(t, err, wire.CodeUsage, tc.parts...)
				visited = want[:slices.Index(want, tc.stop)+1]
			}
			wantVisits := make([]string, len(visited))
			for i, c := range visited {
				wantVisits[i] = string(tc.kind) + ":" + c
			}
			if !slices.Equal(visits, wantVisits) {
				t.Errorf("visited %v, want %v", visits, wantVisits)
			}
		})
	}
}
