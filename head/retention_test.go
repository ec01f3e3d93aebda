package head_test

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ducc-project/ducc/head"
	"github.com/ducc-project/ducc/wire"
)

// Finished work leaves the live state after head.retention.work, its
// items after head.retention.results; its accounting record stays for
// `ducc history`, which shows users their own records and the
// administrators everyone's.
func TestRetentionAndHistory(t *testing.T) {
	// Short times: the head looks at its (injected) clock every 1 s of
	// real time (a tenth of head.retention.work, at least 1 s).
	f := newFixture(t, options{retention: head.Retention{Work: 5 * time.Second, Results: 15 * time.Second, History: time.Minute}})
	f.node("n1", 16*gib)
	run := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true", Memory: gib, Description: "alice's run"})
	p := f.waitProc(t, run)
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: run, State: wire.ProcRunning, PID: 42})
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: run, State: wire.ProcExited, ExitCode: 3, MaxRSS: 300 << 20, CPUSeconds: 2.5})
	job := f.submitJob(t, alice, wire.SubmitJobRequest{Spec: wire.JobSpec{Executable: "/bin/cat"}, Items: []string{"a", "b"}})
	bobs := f.submitRun(t, bob, wire.RunRequest{Path: "/bin/true", Memory: gib})
	for _, id := range []uint64{job, bobs} {
		var info wire.WorkInfo
		f.mustCall(t, wire.MethodCancel, root, wire.CancelRequest{ID: id}, &info)
		for _, pr := range info.Procs {
			f.report(t, "n1", wire.ProcStatus{ID: pr.ID, WorkID: id, State: wire.ProcExited, ExitCode: 143})
		}
	}
	for _, id := range []uint64{run, job, bobs} {
		eventually(t, "work ends", func() bool { w := f.work(id); return w != nil && w.Ended() })
	}
	history := func(c wire.Caller, r wire.HistoryRequest) ([]uint64, error) {
		var rep wire.HistoryReply
		err := call(t, f.h, wire.MethodHistory, c, r, &rep)
		var ids []uint64
		for _, x := range rep.Records {
			ids = append(ids, x.ID)
		}
		return ids, err
	}
	// Finished work is in the history before it is purged, too.
	if ids, err := history(alice, wire.HistoryRequest{}); err != nil || !slices.Equal(ids, []uint64{run, job}) {
		t.Fatalf("alice's history before the purge: %v, %v", ids, err)
	}

	f.clock.Add(6 * time.Second)
	for _, id := range []uint64{run, job, bobs} {
		eventually(t, "finished work is purged", func() bool { return f.work(id) == nil })
	}
	wantErr(t, call(t, f.h, wire.MethodLogAccess, alice, wire.IDRequest{ID: run}, &wire.LogAccess{}),
		wire.CodeUsage, "left the live state", "head.retention.work", "n1")
	var canceled wire.WorkInfo
	f.mustCall(t, wire.MethodCancel, alice, wire.CancelRequest{ID: run}, &canceled)
	if !canceled.Ended || canceled.PurgedAt == 0 || canceled.Completion != "ProgramExit" {
		t.Errorf("cancel of purged work: %+v", canceled)
	}
	info := f.show(t, run)
	if !info.Ended || info.PurgedAt == 0 || info.Completion != "ProgramExit" || info.ExitCode != 3 || info.Description != "alice's run" {
		t.Errorf("show of purged work: %+v", info)
	}
	var res wire.ResultsReply
	f.mustCall(t, wire.MethodResults, alice, wire.ResultsRequest{ID: job}, &res)
	if res.Total != 2 {
		t.Errorf("results held after the purge: %+v", res)
	}
	wantErr(t, call(t, f.h, wire.MethodResults, bob, wire.ResultsRequest{ID: job}, &wire.ResultsReply{}),
		wire.CodeUsage, "belongs to alice")

	tests := []struct {
		name string
		c    wire.Caller
		r    wire.HistoryRequest
		want []uint64
		err  string
	}{
		{name: "own records", c: alice, want: []uint64{run, job}},
		{name: "own records named", c: bob, r: wire.HistoryRequest{User: "bob"}, want: []uint64{bobs}},
		{name: "another user's", c: bob, r: wire.HistoryRequest{User: "alice"}, err: "only root or an administrator"},
		{name: "administrator", c: carol, want: []uint64{run, job, bobs}},
		{name: "root, one user", c: root, r: wire.HistoryRequest{User: "bob"}, want: []uint64{bobs}},
		{name: "state", c: root, r: wire.HistoryRequest{Completions: []string{"programexit"}}, want: []uint64{run}},
		{name: "state by short name", c: root, r: wire.HistoryRequest{Completions: []string{"Exit"}}, want: []uint64{run}},
		{name: "unknown state", c: root, r: wire.HistoryRequest{Completions: []string{"failed"}}, err: `"failed" is not a completion reason; they are: EndOfJob, Error`},
		{name: "class", c: root, r: wire.HistoryRequest{Class: "normal"}, want: []uint64{job}},
		{name: "until before", c: root, r: wire.HistoryRequest{Until: f.clock.Now().Add(-time.Minute).UnixMilli()}},
		{name: "the dashboard", c: dashboard, err: "users only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ids, err := history(tc.c, tc.r)
			if tc.err != "" {
				wantErr(t, err, wire.CodeUsage, tc.err)
				return
			}
			if err != nil || !slices.Equal(ids, tc.want) {
				t.Errorf("got %v, %v; want %v", ids, err, tc.want)
			}
		})
	}
	var rep wire.HistoryReply
	f.mustCall(t, wire.MethodHistory, alice, wire.HistoryRequest{Limit: 1}, &rep)
	if len(rep.Records) != 1 || !rep.More {
		t.Fatalf("first page: %+v", rep)
	}
	r := rep.Records[0]
	if r.ID != run || r.MaxRSS != 300<<20 || r.CPUSeconds != 2.5 || r.ExitCode != 3 || r.Memory != gib ||
		r.MemoryLimit == 0 || !slices.Equal(r.Nodes, []string{"n1"}) || r.WorkPurgedAt == 0 || r.State != "Completed" {
		t.Errorf("record of the run: %+v", r)
	}
	var rep2 wire.HistoryReply
	f.mustCall(t, wire.MethodHistory, alice, wire.HistoryRequest{AfterEnd: rep.NextEnd, AfterID: rep.NextID}, &rep2)
	if len(rep2.Records) != 1 || rep2.Records[0].ID != job || rep2.More || rep2.Records[0].Items != 2 {
		t.Fatalf("second page: %+v", rep2)
	}

	// The items go after head.retention.results; results then say so.
	f.clock.Add(10 * time.Second)
	eventually(t, "the job's items are purged", func() bool {
		err := call(t, f.h, wire.MethodResults, alice, wire.ResultsRequest{ID: job}, &wire.ResultsReply{})
		return err != nil
	})
	wantErr(t, call(t, f.h, wire.MethodResults, alice, wire.ResultsRequest{ID: job}, &wire.ResultsReply{}),
		wire.CodeUsage, "were purged at", "head.retention.results", "ducc history")

	// The records go after head.retention.history.
	f.clock.Add(time.Minute)
	eventually(t, "the records are purged", func() bool {
		ids, err := history(root, wire.HistoryRequest{})
		return err == nil && len(ids) == 0
	})
	wantErr(t, call(t, f.h, wire.MethodShow, alice, wire.IDRequest{ID: run}, &wire.WorkInfo{}), wire.CodeUsage, "no work with id")
}

func TestRetentionValidate(t *testing.T) {
	tests := []struct {
		r   head.Retention
		err bool
	}{
		{r: head.Retention{}.WithDefaults()},
		{r: head.Retention{Work: 48 * time.Hour}.WithDefaults()},
		{r: head.Retention{Work: time.Hour, Results: time.Minute, History: time.Hour}, err: true},
		{r: head.Retention{Work: time.Hour, Results: 2 * time.Hour, History: time.Hour}, err: true},
		{r: head.Retention{Work: -time.Hour, Results: 2 * time.Hour, History: 3 * time.Hour}, err: true},
	}
	for _, tc := range tests {
		if err := tc.r.Validate(); (err != nil) != tc.err {
			t.Errorf("%+v: %v", tc.r, err)
		}
	}
	if d := (head.Retention{}).WithDefaults(); d.Work != time.Hour || d.Results != 24*time.Hour || d.History != 30*24*time.Hour {
		t.Errorf("defaults: %+v", d)
	}
}

// After a purge the head returns the freed memory to the system, at most
// once a minute of its clock.
func TestRetentionReleasesMemory(t *testing.T) {
	var released atomic.Int32
	f := newFixture(t, options{
		retention: head.Retention{Work: 5 * time.Second, Results: 5 * time.Second, History: time.Hour},
		release:   func() { released.Add(1) },
	})
	f.node("n1", 16*gib)
	end := func() uint64 {
		id := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true", Memory: gib})
		p := f.waitProc(t, id)
		f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: id, State: wire.ProcExited})
		eventually(t, "work ends", func() bool { w := f.work(id); return w != nil && w.Ended() })
		return id
	}
	first := end()
	if n := released.Load(); n != 0 {
		t.Fatalf("released %d times before any purge", n)
	}
	f.clock.Add(6 * time.Second)
	eventually(t, "the first purge", func() bool { return f.work(first) == nil })
	eventually(t, "memory released after the first purge", func() bool { return released.Load() == 1 })

	second := end()
	f.clock.Add(6 * time.Second)
	eventually(t, "the second purge", func() bool { return f.work(second) == nil })
	time.Sleep(100 * time.Millisecond) // the head would release now if it did not wait
	if n := released.Load(); n != 1 {
		t.Fatalf("released %d times within a minute of the head's clock, want 1", n)
	}
	f.clock.Add(time.Minute)
	eventually(t, "memory released a minute later", func() bool { return released.Load() == 2 })
}
