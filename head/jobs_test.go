package head_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// items returns the data of a job's items from the durable state (copies
// of work leave items out).
func (f *fixture) items(id uint64) []string {
	var out []string
	f.fsm.View(func(v *state.View) {
		if w := v.Work(id); w != nil && w.Job != nil {
			for _, it := range w.Job.Items {
				out = append(out, it.Data)
			}
		}
	})
	return out
}

// submitJob submits a job and returns its id.
func (f *fixture) submitJob(t *testing.T, c wire.Caller, r wire.SubmitJobRequest) uint64 {
	t.Helper()
	var rep wire.SubmitReply
	f.mustCall(t, wire.MethodSubmit, c, r, &rep)
	return rep.ID
}

func TestSubmitJobRefusesBadSpecs(t *testing.T) {
	f := newFixture(t, options{scheduler: testScheduler})
	f.node("n1", 8*gib)
	ok := wire.JobSpec{Executable: "/bin/worker", Memory: gib}
	with := func(change func(s *wire.JobSpec)) wire.JobSpec {
		s := ok
		change(&s)
		return s
	}
	tests := []struct {
		name  string
		req   wire.SubmitJobRequest
		parts []string
	}{
		{"no executable", wire.SubmitJobRequest{Spec: wire.JobSpec{}, Items: []string{"a"}},
			[]string{"process_executable is required"}},
		{"unknown protocol", wire.SubmitJobRequest{Spec: with(func(s *wire.JobSpec) { s.WorkerProtocol = "grpc" })},
			[]string{`unknown worker protocol "grpc"`, `use "stream"`, `or "exec"`}},
		{"unknown class", wire.SubmitJobRequest{Spec: with(func(s *wire.JobSpec) { s.Class = "hgih" })},
			[]string{`unknown class "hgih"`, "classes are"}},
		{"reserve class, no machine of that size", wire.SubmitJobRequest{Spec: with(func(s *wire.JobSpec) { s.Class = "reserve" })},
			[]string{"no node has exactly 1 GiB", "each process of a job", "1 × 8 GiB"}},
		{"negative pipelines", wire.SubmitJobRequest{Spec: with(func(s *wire.JobSpec) { s.Pipelines = -1 })},
			[]string{"must not be negative"}},
		{"negative retries", wire.SubmitJobRequest{Spec: with(func(s *wire.JobSpec) { s.MaxItemRetries = -1 })},
			[]string{"must not be negative"}},
		{"fits no node", wire.SubmitJobRequest{Spec: with(func(s *wire.JobSpec) { s.Memory = 100 * gib })},
			[]string{"no node can hold 100", "largest schedulable is 8"}},
		{"item too big", wire.SubmitJobRequest{Spec: ok, Items: []string{"a", strings.Repeat("x", 1<<20+1)}},
			[]string{"work item 1 is 1048577 bytes", "at most 1 MiB", "pass a file name instead"}},
		{"submit acl", wire.SubmitJobRequest{Spec: with(func(s *wire.JobSpec) { s.Class = "private" }), Items: []string{"a"}},
			[]string{`user alice may not submit to class "private"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := call(t, f.h, wire.MethodSubmit, alice, tc.req, &wire.SubmitReply{})
			wantErr(t, err, wire.CodeUsage, tc.parts...)
		})
	}
	f.fsm.View(func(v *state.View) {
		if n := len(v.All()); n != 0 {
			t.Errorf("refused submissions left %d pieces of work", n)
		}
	})
}

func TestSubmitJobDefaults(t *testing.T) {
	f := newFixture(t, options{})
	id := f.submitJob(t, alice, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/worker",
		Args: []string{"-v"}, Environment: []string{"X=1"}, WorkingDirectory: "/work"}, Items: []string{"a", "b"}})
	w := f.work(id)
	if w.Kind != wire.WorkJob || w.Class != "normal" || w.Memory != 4*gib || w.Path != "/bin/worker" || w.Dir != "/work" {
		t.Errorf("job %+v; want the default FAIR_SHARE class and 4 GiB", w)
	}
	s := w.Job.Spec
	var def wire.JobSpec
	spec.JobDefaults(&def)
	if def.Pipelines == 0 || def.MaxJobErrors == 0 {
		t.Fatalf("spec.JobDefaults left the pipeline count or the error limit zero: %+v", def)
	}
	if s.WorkerProtocol != wire.ProtocolStream || s.Pipelines != def.Pipelines || s.MaxJobErrors != def.MaxJobErrors || s.Class != "normal" {
		t.Errorf("spec defaults not filled: %+v", s)
	}
	env := strings.Join(w.Env, " ")
	for _, want := range []string{"HOME=/home/alice", "USER=alice", "DUCC_PIPELINES=4", "X=1"} {
		if !strings.Contains(env, want) {
			t.Errorf("job environment %q lacks %s", env, want)
		}
	}
	if w.State != state.StateWaitingForResources || !w.Job.Committed || !slices.Equal(f.items(id), []string{"a", "b"}) {
		t.Errorf("a job submitted with all its items waits for resources: %s committed=%v items=%q", w.State, w.Job.Committed, f.items(id))
	}
	info := f.show(t, id)
	if info.Job == nil || info.Job.Total != 2 || info.Job.Protocol != wire.ProtocolStream {
		t.Errorf("show of a job: %+v", info.Job)
	}
}

func TestSubmitJobEndsAtOnce(t *testing.T) {
	tests := []struct {
		name       string
		req        wire.SubmitJobRequest
		completion string
		reason     string
	}{
		{"no items", wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/w"}},
			string(state.CompletionNoWorkItemsFound), "no work items"},
		{"unknown service", wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/w", ServiceDependency: []string{"TCP:db:5432"}}, Items: []string{"a"}},
			string(state.CompletionServicesUnavail), "service not registered: TCP:db:5432"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, options{})
			id := f.submitJob(t, alice, tc.req)
			info := f.show(t, id)
			if !info.Ended || info.Completion != tc.completion || !strings.Contains(info.Reason, tc.reason) {
				t.Errorf("got ended %v %q %q; want %q saying %q", info.Ended, info.Completion, info.Reason, tc.completion, tc.reason)
			}
			// More items for an ended job are accepted and dropped: show says why it ended.
			f.mustCall(t, wire.MethodItems, alice, wire.ItemsRequest{ID: id, Items: []string{"b"}, Last: true}, nil)
		})
	}
}

func TestSubmitJobInChunks(t *testing.T) {
	f := newFixture(t, options{})
	id := f.submitJob(t, alice, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/w"}, Items: []string{"a"}, More: true})
	if w := f.work(id); w.State != state.StateReceived || w.Job.Committed {
		t.Fatalf("a job with more items to come is Received: %s committed=%v", w.State, w.Job.Committed)
	}
	run := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true"})

	refused := []struct {
		name   string
		caller wire.Caller
		req    wire.ItemsRequest
		parts  []string
	}{
		{"not a job", alice, wire.ItemsRequest{ID: run, Items: []string{"x"}}, []string{"no job with id"}},
		{"no such work", alice, wire.ItemsRequest{ID: 77}, []string{"no job with id 77"}},
		{"someone else's", bob, wire.ItemsRequest{ID: id, Items: []string{"x"}}, []string{"belongs to alice"}},
		{"item too big", alice, wire.ItemsRequest{ID: id, Items: []string{strings.Repeat("x", 1<<20+1)}}, []string{"at most 1 MiB"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, call(t, f.h, wire.MethodItems, tc.caller, tc.req, nil), wire.CodeUsage, tc.parts...)
		})
	}

	f.mustCall(t, wire.MethodItems, alice, wire.ItemsRequest{ID: id, Items: []string{"b", "c"}}, nil)
	f.mustCall(t, wire.MethodItems, root, wire.ItemsRequest{ID: id, Items: []string{"d"}, Last: true}, nil)
	w := f.work(id)
	if !w.Job.Committed || w.State != state.StateWaitingForResources || !slices.Equal(f.items(id), []string{"a", "b", "c", "d"}) {
		t.Errorf("after the last chunk: %s committed=%v items=%q", w.State, w.Job.Committed, f.items(id))
	}
	err := call(t, f.h, wire.MethodItems, alice, wire.ItemsRequest{ID: id, Items: []string{"e"}}, nil)
	wantErr(t, err, wire.CodeUsage, "already has all its items")
}

func TestJobItemExchange(t *testing.T) {
	f := newFixture(t, options{})
	f.node("n1", 8*gib)
	id := f.submitJob(t, alice, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/w", Memory: 2 * gib, Pipelines: 2},
		Items: []string{"a", "b", "c"}})
	p := f.waitProc(t, id)
	eventually(t, "n1 is told to run the job process", func() bool {
		ds, ok := f.push.last("n1")
		return ok && len(ds.Procs) > 0 && ds.Procs[0].ID == p.ID
	})
	ds, _ := f.push.last("n1")
	if sp := ds.Procs[0]; sp.Protocol != wire.ProtocolStream || sp.Pipelines != 2 || sp.Path != "/bin/w" {
		t.Errorf("desired job process %+v", sp)
	}
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcRunning, PID: 11})
	if info := f.show(t, id); info.State != string(state.StateInitializing) || info.Procs[0].State != "Initializing" {
		t.Errorf("a job whose process has not said ready is Initializing: %s / %s", info.State, info.Procs[0].State)
	}

	exchange := func(req wire.ExchangeRequest) wire.ExchangeReply {
		t.Helper()
		req.JobID, req.Node = id, "n1"
		var rep wire.ExchangeReply
		f.mustCall(t, wire.MethodExchange, root, req, &rep)
		return rep
	}
	rep := exchange(wire.ExchangeRequest{ProcID: p.ID, Ready: true, InitMS: 30, Want: 3})
	if len(rep.Items) != 3 || rep.Items[0].Item != "a" || rep.Release {
		t.Fatalf("a ready process asking for 3 items got %+v", rep)
	}
	info := f.show(t, id)
	if info.Job.Dispatched != 3 || info.Job.InitMeanMS != 30 || info.Procs[0].State != wire.ProcRunning {
		t.Errorf("after dispatch: stats %+v proc %s", info.Job, info.Procs[0].State)
	}
	// Every item is handed out and none waits: once the scheduler has
	// seen that, the job shows as completing.
	eventually(t, "the job shows Completing", func() bool { return f.show(t, id).State == string(state.StateCompleting) })

	f.clock.Add(2 * time.Second) // the rate estimate needs time to pass
	rep = exchange(wire.ExchangeRequest{ProcID: p.ID, Held: []int{2}, Outcomes: []wire.ItemOutcome{
		{Index: 0, OK: true, Result: `{"n":1}`, Millis: 10},
		{Index: 1, Error: "bad input", Millis: 20},
	}})
	if len(rep.Items) != 0 {
		t.Errorf("a process that wants nothing got %+v", rep.Items)
	}
	info = f.show(t, id)
	if info.Job.Done != 1 || info.Job.Failed != 1 || info.Job.Dispatched != 1 || info.Procs[0].Done != 1 || info.Procs[0].Errors != 1 {
		t.Errorf("after two outcomes: %+v, proc %+v", info.Job, info.Procs[0])
	}

	exchange(wire.ExchangeRequest{ProcID: p.ID, Outcomes: []wire.ItemOutcome{{Index: 2, OK: true, Millis: 30}}})
	info = f.show(t, id)
	if !info.Ended || info.Completion != string(state.CompletionError) || !strings.Contains(info.Reason, "1 of 3 work items failed") {
		t.Errorf("a job with a failed item ends in Error saying so: %+v", info)
	}

	// Results: all, only the failed ones, and in pages.
	var res wire.ResultsReply
	f.mustCall(t, wire.MethodResults, alice, wire.ResultsRequest{ID: id}, &res)
	if res.Total != 3 || len(res.Results) != 3 || res.Next != -1 || !res.Results[0].OK || res.Results[0].Result != `{"n":1}` {
		t.Errorf("results %+v", res)
	}
	f.mustCall(t, wire.MethodResults, alice, wire.ResultsRequest{ID: id, Failed: true}, &res)
	if len(res.Results) != 1 || res.Results[0].Index != 1 || res.Results[0].Error != "bad input" || res.Results[0].OK {
		t.Errorf("failed results %+v", res.Results)
	}
	f.mustCall(t, wire.MethodResults, alice, wire.ResultsRequest{ID: id, Limit: 2}, &res)
	if len(res.Results) != 2 || res.Next != 2 {
		t.Errorf("first page of 2: %d results, next %d", len(res.Results), res.Next)
	}
	f.mustCall(t, wire.MethodResults, alice, wire.ResultsRequest{ID: id, Offset: res.Next, Limit: 2}, &res)
	if len(res.Results) != 1 || res.Results[0].Index != 2 || res.Next != -1 {
		t.Errorf("second page: %+v", res)
	}
	run := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true"})
	wantErr(t, call(t, f.h, wire.MethodResults, alice, wire.ResultsRequest{ID: run}, &res), wire.CodeUsage, "is a managed reservation ('ducc run'), not a job")
	wantErr(t, call(t, f.h, wire.MethodResults, alice, wire.ResultsRequest{ID: 99}, &res), wire.CodeUsage, "no job with id 99")
}

func TestExchangeForAnUnknownProcess(t *testing.T) {
	f := newFixture(t, options{})
	id := f.submitJob(t, alice, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/w"}, Items: []string{"a"}})
	var rep wire.ExchangeReply
	err := call(t, f.h, wire.MethodExchange, root, wire.ExchangeRequest{JobID: id, ProcID: "1.9", Ready: true, Want: 1}, &rep)
	wantErr(t, err, wire.CodeUsage, "has no process 1.9")
}
