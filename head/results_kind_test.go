package head_test

import (
	"testing"
	"time"

	"github.com/ducc-project/ducc/head"
	"github.com/ducc-project/ducc/wire"
)

// 'ducc results' of work that is not a job says what it is and where its
// output is, while it runs, once ended and once only its record is left
// (it said "no job with id N" while 'ducc show N' worked).
func TestResultsOfOtherWork(t *testing.T) {
	f := newFixture(t, options{retention: head.Retention{Work: 5 * time.Second, Results: 15 * time.Second, History: time.Hour}})
	f.node("n1", 16*gib)
	run := f.submitRun(t, alice, wire.RunRequest{Path: "/bin/true", Memory: gib})
	svc := f.register(t, alice, wire.ServiceSpec{Endpoint: "TCP:localhost:5432", Executable: "/bin/sleep", Args: []string{"600"}})
	results := func(id uint64) error {
		return call(t, f.h, wire.MethodResults, alice, wire.ResultsRequest{ID: id}, &wire.ResultsReply{})
	}
	wantErr(t, results(run), wire.CodeUsage, "is a managed reservation ('ducc run'), not a job", "'ducc logs ")
	wantErr(t, results(svc), wire.CodeUsage, "is a service, not a job", "ducc services query")
	wantErr(t, results(999), wire.CodeUsage, "no job with id 999")

	p := f.waitProc(t, run)
	f.report(t, "n1", wire.ProcStatus{ID: p.ID, WorkID: run, State: wire.ProcExited, ExitCode: 3})
	eventually(t, "the run ends", func() bool { w := f.work(run); return w != nil && w.Ended() })
	wantErr(t, results(run), wire.CodeUsage, "is a managed reservation ('ducc run'), not a job")
	f.clock.Add(6 * time.Second)
	eventually(t, "the run is purged", func() bool { return f.work(run) == nil })
	wantErr(t, results(run), wire.CodeUsage, "is a managed reservation ('ducc run'), not a job", "'ducc logs ")
}
