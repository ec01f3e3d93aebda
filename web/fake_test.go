package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ducc-project/ducc/wire"
)

// fakeSource answers like a head from fixed data.
type fakeSource struct {
	mu     sync.Mutex
	work   []wire.WorkInfo
	nodes  []wire.NodeInfo
	status wire.StatusInfo
	err    error
	calls  []string
	// callers are the users the calls came for ("" for anonymous).
	callers []string
	// redact makes the fake redact like the head: what is not the
	// caller's (owner or root) loses its arguments and environment.
	redact bool
}

// mayRead is the head's rule in small: the owner or root.
func fakeMayRead(c wire.Caller, owner string) bool {
	return c.User != "" && (c.User == owner || c.UID == 0)
}

func (f *fakeSource) Call(_ context.Context, c wire.Caller, method string, req, resp any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, method)
	f.callers = append(f.callers, c.User)
	if f.err != nil {
		return f.err
	}
	switch method {
	case wire.MethodJobs:
		r := req.(wire.ListRequest)
		out := resp.(*wire.WorkList)
		for _, w := range f.work {
			if (r.All || !w.Ended) && (r.User == "" || r.User == w.User) {
				w.Command = slices.Clone(w.Command)
				if f.redact && !fakeMayRead(c, w.User) {
					w.Redact()
				}
				out.Work = append(out.Work, w)
			}
		}
	case wire.MethodShow:
		id := req.(wire.IDRequest).ID
		for _, w := range f.work {
			if w.ID == id {
				w.Command = slices.Clone(w.Command)
				if f.redact && !fakeMayRead(c, w.User) {
					w.Redact()
				}
				*resp.(*wire.WorkInfo) = w
				return nil
			}
		}
		return wire.Errorf(wire.CodeUsage, "no work with id %d", id)
	case wire.MethodResults:
		r := req.(wire.ResultsRequest)
		for _, w := range f.work {
			if w.ID == r.ID {
				if !fakeMayRead(c, w.User) {
					return wire.Errorf(wire.CodeUsage, "the results of job %d are private to %s", r.ID, w.User)
				}
				out := resp.(*wire.ResultsReply)
				out.Next, out.Total = -1, 2
				for _, it := range []wire.ItemResult{{Index: 0, OK: true, Result: "secret result of " + w.User, Millis: 120, Proc: "5.1", Attempts: 1},
					{Index: 1, Item: `{"n":1}`, Error: "worker raised ValueError", Millis: 2500, Proc: "5.1", Attempts: 3}} {
					if (!r.Failed || !it.OK) && it.Index >= r.Offset {
						out.Results = append(out.Results, it)
					}
				}
				return nil
			}
		}
		return wire.Errorf(wire.CodeUsage, "no work with id %d", r.ID)
	case wire.MethodCharts:
		out := resp.(*wire.ChartsReply)
		if req.(wire.ChartsRequest).Work == 5 {
			out.Work = []wire.WorkSample{{At: ms(3 * time.Minute), Done: 0, Total: 100}, {At: ms(2 * time.Minute), Done: 10, Failed: 1, Total: 100},
				{At: ms(time.Minute), Done: 30, Failed: 2, Total: 100}}
		}
		out.Classes = []wire.ClassSeries{{Class: "normal", Points: []wire.ClassSample{{At: ms(2 * time.Minute), Allocated: 2 << 30}, {At: ms(time.Minute), Allocated: 6 << 30}}}}
		out.Cluster = []wire.ClusterSample{{At: ms(2 * time.Minute), SharesUsed: 2, Shares: 16}, {At: ms(time.Minute), SharesUsed: 4, Shares: 16}}
	case wire.MethodNodes:
		resp.(*wire.NodeList).Nodes = append([]wire.NodeInfo(nil), f.nodes...)
	case wire.MethodStatus:
		*resp.(*wire.StatusInfo) = f.status
	case wire.MethodServiceQuery:
		resp.(*wire.ServiceList).Services = []wire.ServiceInfo{{ID: 7, Endpoint: "HTTP:localhost:8080/", User: "alice",
			State: "Available", Policy: "reference", Enabled: true, Instances: 1, Running: 1, Class: "fixed", Memory: 1 << 30,
			Alive: true, Healthy: true, PingInfo: "HTTP 200 OK",
			Spec: wire.ServiceSpec{Endpoint: "HTTP:localhost:8080/", Executable: "/srv/db", Args: []string{"--password=s3cret"},
				Environment: []string{"DB_PASSWORD=s3cret"}, PingExecutable: "/srv/ping", PingArgs: []string{"--key=s3cret"}},
			Procs: []wire.ServiceInstance{{Instance: 0, Ready: true, Proc: wire.ProcInfo{ID: "7.1", Node: "n1", State: "Running", PID: 99}}}}}
		if f.redact && !fakeMayRead(c, "alice") {
			resp.(*wire.ServiceList).Services[0].Redact()
		}
	case wire.MethodClasses:
		resp.(*wire.ClassList).Classes = []wire.ClassInfo{
			{Name: "normal", Policy: "FAIR_SHARE", Priority: 10, Weight: 100, Pool: "default", Quantum: 1 << 30, Default: true, Works: 2, Demand: 8 << 30, FairShare: 6 << 30, Allocated: 6 << 30},
			{Name: "reserve", Policy: "RESERVE", Priority: 1, Pool: "default", Quantum: 1 << 30},
		}
	default:
		return fmt.Errorf("fake: unknown method %s", method)
	}
	return nil
}

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ms(d time.Duration) int64 { return testNow.Add(-d).UnixMilli() }

// newFake is a one-node cluster with a running managed reservation, a
// pending one, an ended one and a job whose user name tries to inject HTML.
func newFake() *fakeSource {
	return &fakeSource{
		work: []wire.WorkInfo{
			{ID: 2, Kind: wire.WorkManaged, User: "alice", Class: "fixed", State: "Running", Memory: 4 << 30, Node: "n1",
				SubmittedAt: ms(2 * time.Minute), StartedAt: ms(90 * time.Second), Command: []string{"sleep", "60"},
				Procs: []wire.ProcInfo{{ID: "2.1", Node: "n1", State: "Running", PID: 4242, MemoryLimit: 4 << 30, RSS: 12 << 20,
					CPUSeconds: 1.5, StartedAt: ms(90 * time.Second), LogPath: "/home/alice/ducc/logs/2/2-POP-n1-4242.log"}}},
			{ID: 3, Kind: wire.WorkManaged, User: "bob", Class: "fixed", State: "WaitingForResources", Memory: 64 << 30,
				Reason: "no node in pool default has 64 GiB", ReasonCode: wire.ReasonResources, SubmittedAt: ms(time.Minute), Command: []string{"true"}},
			{ID: 1, Kind: wire.WorkManaged, User: "alice", Class: "fixed", State: "Completed", Completion: "ProgramExit",
				Ended: true, ExitCode: 3, Memory: 1 << 30, SubmittedAt: ms(time.Hour), StartedAt: ms(time.Hour), EndedAt: ms(59 * time.Minute),
				Command: []string{"sh", "-c", "exit 3"}},
			{ID: 5, Kind: wire.WorkJob, User: "carol", Class: "normal", State: "Running", Memory: 2 << 30,
				SubmittedAt: ms(5 * time.Minute), StartedAt: ms(4 * time.Minute), Command: []string{"worker.py"},
				Job: &wire.JobStats{Total: 100, Done: 40, Failed: 2, Retried: 1, Dispatched: 8, MinMS: 120, MaxMS: 2500,
					MeanMS: 800, StddevMS: 90, Rate: 3.5, Processes: 2, Pipelines: 4, Protocol: "stream", InitMeanMS: 45000},
				Procs: []wire.ProcInfo{{ID: "5.1", Node: "n1", State: "Running", PID: 77, MemoryLimit: 2 << 30,
					StartedAt: ms(4 * time.Minute), InitMS: 45000, Done: 25, Errors: 1}}},
			{ID: 4, Kind: wire.WorkManaged, User: "<script>alert(1)</script>", Class: "fixed", State: "Running",
				Command: []string{"echo", "<b>x</b>"}, SubmittedAt: ms(time.Second)},
		},
		nodes: []wire.NodeInfo{
			{Name: "n2", State: "Down", MemTotal: 32 << 30, LastHeartbeat: ms(5 * time.Minute)},
			{Name: "n1", State: "Up", MemTotal: 32 << 30, MemSchedulable: 16 << 30, MemUsed: 5 << 30, Shares: 16, SharesUsed: 4,
				Procs: 1, CPUs: 8, Load1: 0.25, LastHeartbeat: ms(time.Second)},
		},
		status: wire.StatusInfo{Head: "n1", HeadPeer: "12D3KooWHead", RaftState: "Leader", RaftTerm: 2, RaftIndex: 57,
			Peers: []string{"12D3KooWHead", "12D3KooWOther"}, NodesUp: 1, NodesAll: 2, Version: "v1.2.3", Quantum: 1 << 30,
			Voters: []wire.VoterInfo{{Peer: "12D3KooWHead", Node: "n1", State: "Leader", Voter: true, LastHeartbeat: ms(time.Second)},
				{Peer: "12D3KooWOther", Node: "n2", State: "Unreachable", Voter: true}}},
	}
}

func newTestServer(t *testing.T, src Source, mod func(*Config)) (*httptest.Server, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := Config{Source: src, Registry: reg, Version: "v-test", Node: "n1", Now: func() time.Time { return testNow }}
	if mod != nil {
		mod(&cfg)
	}
	srv := httptest.NewServer(NewHandler(cfg))
	t.Cleanup(srv.Close)
	return srv, reg
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var b []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
	}
	return resp.StatusCode, string(b), resp.Header
}
