package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
	"github.com/ducc-project/ducc/wire/wiretest"
)

// BenchmarkSubmit measures managed reservations accepted by one head with
// 16 submissions in flight, each through the head's RPC handler (Call, as
// from another node) and a real Raft log on disk. The head knows `nodes`
// nodes (fed as heartbeats) and schedules what it accepts, so the
// scheduling cycles and their assignments run beside the submissions.
//
//	go test -run XXX -bench Submit -benchtime 2000x ./head/server/
//
// via=libp2p sends each submission from another libp2p host over an RPC
// stream to the head's router (wire.Serve → Server.Handle), as an agent
// forwards its CLI's calls; via=call runs it through Server.Call (the
// same encoding, no stream).
func BenchmarkSubmit(b *testing.B) {
	for _, nodes := range []int{100, 5000} {
		for _, via := range []string{"call", "libp2p"} {
			b.Run(fmt.Sprintf("nodes=%d/via=%s", nodes, via), func(b *testing.B) { benchSubmit(b, nodes, 16, via == "libp2p") })
		}
	}
}

func benchSubmit(b *testing.B, nodes, inFlight int, overStreams bool) {
	key := wiretest.Key(b)
	node := wiretest.NewNode(b, key)
	cfg := Config{
		Host: node.Host, Heartbeats: node.Heartbeats, Leaders: node.Leaders,
		DataDir: b.TempDir(), BootstrapExpect: 1, Elect: 100 * time.Millisecond, Heartbeat: time.Second,
		Node: "head", Version: "bench", Scheduler: rm.DefaultConfig(), NodeTimeout: time.Hour,
		Logger: wiretest.Logger(b),
	}
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() {
		cancel()
		<-done
		if err := s.Close(); err != nil {
			b.Errorf("close: %v", err)
		}
	}()
	wiretest.Eventually(b, "the election", s.Leading)
	// One agent host stands for every node: it takes their desired-state
	// pushes (over real RPC streams, acknowledged at once) and, with
	// overStreams, sends the submissions.
	agent := wiretest.NewNode(b, key)
	wiretest.Connect(b, agent, node)
	p2p.Serve(agent.Host, func(context.Context, peer.ID, *wire.Request) (any, error) { return wire.Empty{}, nil })
	defer p2p.StopServing(agent.Host)
	call := func(ctx context.Context, c wire.Caller, req wire.RunRequest, rep *wire.SubmitReply) error {
		return s.Call(ctx, wire.MethodRun, c, req, rep)
	}
	if overStreams {
		p2p.Serve(node.Host, s.Handle, p2p.WithServeLogger(cfg.Logger))
		defer p2p.StopServing(node.Host)
		call = func(ctx context.Context, c wire.Caller, req wire.RunRequest, rep *wire.SubmitReply) error {
			return p2p.Call(ctx, agent.Host, node.Host.ID(), wire.MethodRun, c, req, rep)
		}
	}
	h := s.Head()
	// The nodes' heartbeats are folded in directly; their pushes go to
	// the agent host.
	for i := range nodes {
		h.Heartbeat(ctx, wire.Heartbeat{
			Node: fmt.Sprintf("node%05d", i), PeerID: agent.Host.ID().String(), Seq: 1, Time: time.Now().UnixMilli(),
			MemTotal: 32 << 30, MemSchedulable: 32 << 30, CPUs: 16,
		}, agent.Host.ID().String())
	}
	caller := wire.Caller{User: "bench", UID: 1000, GID: 1000, Node: "head"}
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				var rep wire.SubmitReply
				req := wire.RunRequest{Path: "/bin/true", Memory: 1 << 30}
				if err := call(ctx, caller, req, &rep); err != nil || rep.ID == 0 {
					if failed.Add(1) == 1 {
						b.Errorf("submit: %v (id %d)", err, rep.ID)
					}
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "submits/s")
}

// BenchmarkApply measures the Raft apply path alone (a one-node Raft with
// its log in bbolt on disk, no head): 16 goroutines apply one submission
// each at a time, either each as its own log entry (raft.Apply per call,
// as before the group commit) or through the committer; "serial" is one
// caller through the committer, the latency a lone submission waits for.
//
//	go test -run XXX -bench Apply -benchtime 5000x ./head/server/
func BenchmarkApply(b *testing.B) {
	for _, mode := range []string{"entry-per-call", "group-commit", "serial"} {
		b.Run(mode, func(b *testing.B) {
			node := wiretest.NewNode(b, wiretest.Key(b))
			c, err := newCandidate(candidateConfig{DataDir: b.TempDir(), Host: node.Host, BootstrapExpect: 1,
				Logger: wiretest.Logger(b), Elect: 100 * time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			wiretest.Eventually(b, "leadership", func() bool { return c.raft.State() == raft.Leader })
			if err := c.raft.Barrier(10 * time.Second).Error(); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); c.commit.run(ctx) }()
			defer func() { cancel(); <-done }()
			apply := c.commit.Apply
			if mode == "entry-per-call" {
				apply = func(_ context.Context, cmds ...state.Command) ([]state.Result, error) {
					data, err := state.Encode(cmds...)
					if err != nil {
						return nil, err
					}
					f := c.raft.Apply(data, 10*time.Second)
					if err := f.Error(); err != nil {
						return nil, err
					}
					res, _ := f.Response().([]state.Result)
					return res, nil
				}
			}
			first := c.raft.LastIndex()
			var next atomic.Int64
			var wg sync.WaitGroup
			callers := 16
			if mode == "serial" {
				callers = 1
			}
			b.ResetTimer()
			for range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						res, err := apply(ctx, state.Command{Type: state.CmdSubmit, Time: 1, Work: &state.Work{
							Kind: wire.WorkManaged, User: "bench", Class: "fixed", Path: "/bin/true", Memory: 1 << 30}})
						if err != nil || len(res) != 1 || res[0].Err != nil {
							b.Errorf("apply: %v %+v", err, res)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "applies/s")
			b.ReportMetric(float64(c.raft.LastIndex()-first)/float64(b.N), "entries/op")
		})
	}
}
