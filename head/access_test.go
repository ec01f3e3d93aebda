package head_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// dashboard is how the web dashboard and an agent's own calls reach the
// head: no user name, uid 0.
var dashboard = wire.Caller{Node: "n1"}

// dave administers one service of the tests (its administrators key).
var dave = wire.Caller{UID: 1004, GID: 1004, User: "dave"}

func TestResultsAreTheOwners(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 16*gib)
	id := f.submitJob(t, alice, wire.SubmitJobRequest{
		Spec:  wire.JobSpec{Executable: "/bin/cat", Args: []string{"--token=s3cret"}},
		Items: []string{"alice-item-1", "alice-item-2"},
	})
	tests := []struct {
		name   string
		c      wire.Caller
		allows bool
	}{
		{"owner", alice, true},
		{"root", root, true},
		{"administrator", carol, true},
		{"another user", bob, false},
		{"the dashboard", dashboard, false},
		{"root's uid without a name", wire.Caller{UID: 0}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rep wire.ResultsReply
			err := call(t, f.h, wire.MethodResults, tc.c, wire.ResultsRequest{ID: id}, &rep)
			if tc.allows {
				if err != nil || rep.Total != 2 {
					t.Fatalf("results: %+v, %v; want the 2 items", rep, err)
				}
				return
			}
			wantErr(t, err, wire.CodeUsage, "job "+strconv.FormatUint(id, 10)+" belongs to alice", "only alice, root or an administrator")
			if rep.Total != 0 || len(rep.Results) != 0 {
				t.Errorf("a refused caller got %+v", rep)
			}
		})
	}
	err := call(t, f.h, wire.MethodResults, bob, wire.ResultsRequest{ID: 99}, &wire.ResultsReply{})
	wantErr(t, err, wire.CodeUsage, "no job with id 99")
}

func TestShowHidesOthersArguments(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 16*gib)
	job := f.submitJob(t, alice, wire.SubmitJobRequest{
		Spec: wire.JobSpec{Executable: "/bin/cat", Args: []string{"--token=s3cret"}}, Items: []string{"x"},
	})
	var rep wire.SubmitReply
	f.mustCall(t, wire.MethodRun, alice, wire.RunRequest{Path: "/bin/sh", Args: []string{"-c", "PASSWORD=s3cret run"}}, &rep)
	mr := rep.ID
	noArgs := f.submitJob(t, alice, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/true"}, Items: []string{"x"}})

	full := map[uint64][]string{job: {"/bin/cat", "--token=s3cret"}, mr: {"/bin/sh", "-c", "PASSWORD=s3cret run"}, noArgs: {"/bin/true"}}
	tests := []struct {
		name string
		c    wire.Caller
		sees bool
	}{
		{"owner", alice, true},
		{"root", root, true},
		{"administrator", carol, true},
		{"another user", bob, false},
		{"the dashboard", dashboard, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check := func(how string, info wire.WorkInfo) {
				t.Helper()
				want, redacted := full[info.ID], []string(nil)
				if !tc.sees && len(want) > 1 {
					want, redacted = want[:1], []string{wire.RedactedArgs}
				}
				if !slices.Equal(info.Command, want) || !slices.Equal(info.Redacted, redacted) {
					t.Errorf("%s %d: command %q redacted %q; want %q redacted %q", how, info.ID, info.Command, info.Redacted, want, redacted)
				}
				if info.User != "alice" || info.State == "" {
					t.Errorf("%s %d: the metadata stays visible: %+v", how, info.ID, info)
				}
			}
			for id := range full {
				var info wire.WorkInfo
				f.mustCall(t, wire.MethodShow, tc.c, wire.IDRequest{ID: id}, &info)
				check("show", info)
				f.mustCall(t, wire.MethodWait, tc.c, wire.WaitRequest{ID: id, TimeoutMS: 1}, &info)
				check("wait", info)
			}
			var list wire.WorkList
			f.mustCall(t, wire.MethodJobs, tc.c, wire.ListRequest{}, &list)
			if len(list.Work) != len(full) {
				t.Fatalf("jobs lists %d pieces of work, want %d", len(list.Work), len(full))
			}
			for _, info := range list.Work {
				check("jobs", info)
			}
		})
	}
}

func TestServiceEnvironmentIsPrivate(t *testing.T) {
	f := newFixture(t, options{})
	id := f.register(t, alice, wire.ServiceSpec{
		Endpoint: "HTTP:127.0.0.1:1/health", Executable: "/bin/server", Args: []string{"--password", "s3cret"},
		Environment: []string{"DB_PASSWORD=s3cret"}, Administrators: []string{"dave"},
		PingExecutable: "/bin/ping-it", PingArgs: []string{"--key=s3cret"},
	})
	tests := []struct {
		name string
		c    wire.Caller
		sees bool
	}{
		{"owner", alice, true},
		{"administrator of the service", dave, true},
		{"cluster administrator", carol, true},
		{"root", root, true},
		{"another user", bob, false},
		{"the dashboard", dashboard, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var one, all wire.ServiceList
			f.mustCall(t, wire.MethodServiceQuery, tc.c, wire.ServiceQueryRequest{Service: strconv.FormatUint(id, 10)}, &one)
			f.mustCall(t, wire.MethodServiceQuery, tc.c, wire.ServiceQueryRequest{}, &all)
			for _, l := range []wire.ServiceList{one, all} {
				if len(l.Services) != 1 {
					t.Fatalf("query answered %d services, want 1", len(l.Services))
				}
				s := l.Services[0]
				hasEnv := slices.Contains(s.Spec.Environment, "DB_PASSWORD=s3cret")
				hasArgs := slices.Equal(s.Spec.Args, []string{"--password", "s3cret"}) && slices.Equal(s.Spec.PingArgs, []string{"--key=s3cret"})
				if hasEnv != tc.sees || hasArgs != tc.sees {
					t.Errorf("environment %q, arguments %q %q: want them shown %v", s.Spec.Environment, s.Spec.Args, s.Spec.PingArgs, tc.sees)
				}
				if !tc.sees {
					if len(s.Spec.Environment)+len(s.Spec.Args)+len(s.Spec.PingArgs) != 0 {
						t.Errorf("something private is left: %+v", s.Spec)
					}
					if !slices.Equal(s.Redacted, []string{wire.RedactedEnv, wire.RedactedArgs}) {
						t.Errorf("redacted = %q", s.Redacted)
					}
					if s.Spec.Executable != "/bin/server" || s.User != "alice" || s.Endpoint == "" {
						t.Errorf("the service's metadata stays visible: %+v", s)
					}
				} else if len(s.Redacted) != 0 {
					t.Errorf("redacted = %q for a caller who may see everything", s.Redacted)
				}
			}
		})
	}
}

// The submitter's umask goes with the work to the node's desired state.
func TestUmaskReachesTheNode(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 16*gib)
	var rep wire.SubmitReply
	f.mustCall(t, wire.MethodRun, alice, wire.RunRequest{Path: "/bin/true", Umask: "0077"}, &rep)
	p := f.waitProc(t, rep.ID)
	eventually(t, "the process is pushed to n1", func() bool {
		ds, ok := f.push.last("n1")
		return ok && slices.ContainsFunc(ds.Procs, func(ps wire.ProcSpec) bool { return ps.ID == p.ID })
	})
	ds, _ := f.push.last("n1")
	for _, ps := range ds.Procs {
		if ps.ID == p.ID && ps.Umask != "0077" {
			t.Errorf("process %s pushed with umask %q, want 0077", ps.ID, ps.Umask)
		}
	}
	err := call(t, f.h, wire.MethodRun, alice, wire.RunRequest{Path: "/bin/true", Umask: "77"}, &rep)
	wantErr(t, err, wire.CodeUsage, "umask")
}

// TestShareWithGroup: the members of the group the owner names
// (share_with_group) may read the logs and results of the work, and
// nothing else that is private to it.
func TestShareWithGroup(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 16*gib)
	job := f.submitJob(t, alice, wire.SubmitJobRequest{
		Spec:  wire.JobSpec{Executable: "/bin/cat", Args: []string{"--token=s3cret"}, ShareGroup: "proj", ShareGID: 3000},
		Items: []string{"alice-item-1"},
	})
	run := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true", ShareGroup: "proj", ShareGID: 3000})
	private := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true"})

	member := wire.Caller{UID: 1005, GID: 1005, User: "erin", Groups: []uint32{1005, 3000}}
	primary := wire.Caller{UID: 1006, GID: 3000, User: "frank"}
	other := wire.Caller{UID: 1007, GID: 1007, User: "gus", Groups: []uint32{1007, 4000}}
	tests := []struct {
		name string
		c    wire.Caller
		id   uint64
		may  bool
	}{
		{"member, job", member, job, true},
		{"member, run", member, run, true},
		{"member by primary group", primary, job, true},
		{"member, work not shared", member, private, false},
		{"not a member", other, job, false},
		{"the dashboard", wire.Caller{Node: "n1", GID: 3000, Groups: []uint32{3000}}, job, false},
		{"owner", alice, job, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := call(t, f.h, wire.MethodLogAccess, tc.c, wire.IDRequest{ID: tc.id}, &wire.LogAccess{})
			if tc.may {
				if err != nil {
					t.Fatalf("logs refused: %v", err)
				}
			} else {
				want := "only alice, root and the administrators (carol) may read them"
				if tc.id != private {
					want = "only alice, root, the administrators (carol) and the members of group proj may read them"
				}
				wantErr(t, err, wire.CodeUsage, "private to alice", want)
			}
			if tc.id != job {
				return
			}
			var rep wire.ResultsReply
			err = call(t, f.h, wire.MethodResults, tc.c, wire.ResultsRequest{ID: job}, &rep)
			if tc.may {
				if err != nil || rep.Total != 1 {
					t.Fatalf("results: %+v, %v", rep, err)
				}
			} else {
				wantErr(t, err, wire.CodeUsage, "only alice, root, an administrator or a member of group proj may read")
			}
		})
	}
	// The group reads the output, not the arguments.
	var info wire.WorkInfo
	f.mustCall(t, wire.MethodShow, member, wire.IDRequest{ID: job}, &info)
	if slices.Contains(info.Command, "--token=s3cret") {
		t.Errorf("a member of the group sees the arguments: %v", info.Command)
	}
}
