package sim

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/server"
	"github.com/ducc-project/ducc/web"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
)

// headNode is the node name of the simulated heads (with their index; they
// run no work).
const headNode = "sim-head"

// simHead is a real head server (head/server: a Raft member on bbolt in a
// temporary directory, bootstrap_expect 1, on a libp2p host on loopback,
// fed by the heartbeat topic and serving the RPC protocol) as a
// head-eligible agent runs it, but with no process manager and no node of
// its own. Its hooks measure heartbeats and pushes.
type simHead struct {
	log     *slog.Logger
	index   int    // in the head group, in start order
	name    string // its node name
	dir     string
	psk     pnet.PSK
	host    host.Host
	ps      *pubsub.PubSub
	hbT     *p2p.Topic[wire.Heartbeat]
	leadT   *p2p.Topic[wire.LeaderAnnounce]
	srv     *server.Server
	reg     *prometheus.Registry
	metrics *web.HeadMetrics

	heartbeats atomic.Uint64
	hbBusy     atomic.Int64 // nanoseconds spent folding heartbeats in
	pushes     atomic.Uint64
	pushErrs   atomic.Uint64

	lagMu sync.Mutex
	lags  []float64 // heartbeat lag in ms since the last takeLags

	cancel context.CancelFunc
	wg     sync.WaitGroup
	down   sync.Once   // teardown
	killed atomic.Bool // kill was called
}

// startHeads starts o.Heads head servers sharing one cluster key: the
// first bootstraps a group of its own and is elected, the others join it
// through the first (as an agent asks the head it follows, MethodRaftJoin)
// and become followers. Every member has its own libp2p host on loopback,
// connected to the others, and its own data directory.
func startHeads(ctx context.Context, o *Options) (_ heads, err error) {
	psk, err := wire.GenerateClusterKey()
	if err != nil {
		return nil, fmt.Errorf("sim head: %w", err)
	}
	var hs heads
	defer func() {
		if err != nil {
			hs.close()
		}
	}()
	for i := range o.Heads {
		h, err := startHead(ctx, o, psk, i, hs)
		if err != nil {
			return nil, err
		}
		hs = append(hs, h)
	}
	// Wait until every other member follows the first.
	for _, h := range hs[1:] {
		for h.srv.RaftState() != "Follower" {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("sim head %d: waiting to join the head group: %w", h.index, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	// Joining may have cost the first member its leadership on a busy
	// machine: wait for a leader again.
	for hs.leader() == nil {
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, fmt.Errorf("sim head: waiting for a leader: %w", err)
		}
	}
	return hs, nil
}

// startHead starts member i of the head group; the first one bootstraps
// and is elected, later ones connect to the earlier ones and join.
func startHead(ctx context.Context, o *Options, psk pnet.PSK, i int, earlier heads) (_ *simHead, err error) {
	s := &simHead{log: o.Logger.With("head", i), reg: prometheus.NewRegistry(), psk: psk, index: i, name: fmt.Sprintf("%s-%d", headNode, i)}
	s.metrics = web.NewHeadMetrics(s.reg)
	if s.dir, err = os.MkdirTemp("", "ducc-sim-head-"); err != nil {
		return nil, fmt.Errorf("sim head: data dir: %w", err)
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	base := s.log
	s.host, err = p2p.NewHost(ctx, p2p.HostConfig{ClusterKey: s.psk, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, Logger: base})
	if err != nil {
		return nil, fmt.Errorf("sim head: %w", err)
	}
	for _, e := range earlier {
		if err := s.host.Connect(ctx, peer.AddrInfo{ID: e.host.ID(), Addrs: e.host.Addrs()}); err != nil {
			return nil, fmt.Errorf("sim head %d: connect to head %d: %w", i, e.index, p2p.ExplainDialError(err))
		}
	}
	if s.ps, err = p2p.NewPubSub(ctx, s.host, base); err != nil {
		return nil, fmt.Errorf("sim head: %w", err)
	}
	if s.hbT, err = p2p.JoinHeartbeatTopic(s.ps, base); err != nil {
		return nil, fmt.Errorf("sim head: %w", err)
	}
	if s.leadT, err = p2p.JoinLeaderTopic(s.ps, base); err != nil {
		return nil, fmt.Errorf("sim head: %w", err)
	}
	expect := 1
	follow := func() peer.ID { return "" }
	if len(earlier) > 0 {
		// Not a group of its own: join the first member's.
		first := earlier[0].host.ID()
		expect, follow = o.Heads, func() peer.ID { return first }
	}
	s.srv, err = server.New(server.Config{
		Host: s.host, Heartbeats: s.hbT, Leaders: s.leadT,
		DataDir: s.dir, BootstrapExpect: expect, FollowedLeader: follow, Heartbeat: o.Heartbeat, Elect: o.Elect,
		Node: s.name, Version: "sim", Scheduler: rm.DefaultConfig(), NodeTimeout: o.NodeTimeout, MaxHeartbeatsPerSecond: max(o.MaxHeartbeatsPerSecond, 0),
		Metrics: s.metrics,
		Hooks:   server.Hooks{Heartbeat: s.sawHeartbeat, Pushed: s.pushed},
		Logger:  base,
	})
	if err != nil {
		return nil, fmt.Errorf("sim head: %w", err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	p2p.Serve(s.host, s.srv.Handle, p2p.WithServeLogger(base))
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.srv.Run(rctx) }()
	if i > 0 {
		return s, nil
	}
	for !s.srv.Leading() {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("sim head: waiting for the election: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.log.Info("head elected", "peer", s.host.ID().String(), "addrs", s.host.Addrs(), "data_dir", s.dir)
	return s, nil
}

// addrInfo returns the head's dialable addresses as /ip4/.../p2p/ID strings.
func (s *simHead) addrInfo() []string {
	var out []string
	for _, a := range s.host.Addrs() {
		out = append(out, a.String()+"/p2p/"+s.host.ID().String())
	}
	return out
}

// stopRunning stops the head server.
func (s *simHead) stopRunning() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
}

// close stops everything the head started and removes its data.
func (s *simHead) close() {
	s.teardown()
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// teardown stops everything the head started (once).
func (s *simHead) teardown() {
	s.down.Do(func() {
		s.stopRunning()
		if s.host != nil {
			p2p.StopServing(s.host)
		}
		if s.srv != nil {
			if err := s.srv.Close(); err != nil {
				s.log.Warn("raft shutdown", "err", err)
			}
		}
		if s.hbT != nil {
			_ = s.hbT.Close()
		}
		if s.leadT != nil {
			_ = s.leadT.Close()
		}
		if s.host != nil {
			_ = s.host.Close()
		}
	})
}

// kill stops the member hard, as a machine that dies: its host closes
// first, so that nothing more leaves it (no last announcement, no Raft
// message, no push), then its server and Raft wind down in the
// background; done is closed when they have.
func (s *simHead) kill() (done <-chan struct{}) {
	s.killed.Store(true)
	_ = s.host.Close()
	d := make(chan struct{})
	go func() { defer close(d); s.teardown() }()
	return d
}

// heads is a simulation's head group, in start order.
type heads []*simHead

// leader returns the member that runs the head now (nil: none).
func (hs heads) leader() *simHead {
	for _, h := range hs {
		if !h.killed.Load() && h.srv != nil && h.srv.Leading() {
			return h
		}
	}
	return nil
}

// leaderOrFirst returns the leader, or the first member when none leads
// at this moment (the fakes then follow the next announcement).
func (hs heads) leaderOrFirst() *simHead {
	if l := hs.leader(); l != nil {
		return l
	}
	return hs[0]
}

func (hs heads) close() {
	for _, h := range hs {
		h.close()
	}
}

// addrInfo returns every member's dialable addresses.
func (hs heads) addrInfo() []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.addrInfo()...)
	}
	return out
}

// stopRunning stops every member's server.
func (hs heads) stopRunning() {
	for _, h := range hs {
		h.stopRunning()
	}
}

// snapshot sums the members' counters (only the leader takes heartbeats,
// pushes and runs cycles) with this process's resource use.
func (hs heads) snapshot() (headCounters, error) {
	var c headCounters
	var err error
	for i, h := range hs {
		hc, herr := h.snapshot()
		if i == 0 {
			c.use, err = hc.use, herr
		}
		c.heartbeats += hc.heartbeats
		c.hbBusy += hc.hbBusy
		c.pushes += hc.pushes
		c.pushErrs += hc.pushErrs
		c.cycles += hc.cycles
		c.cycleSum += hc.cycleSum
	}
	return c, err
}

// call runs a head method on the member that leads now.
func (hs heads) call(ctx context.Context, method string, req, resp any) error {
	h := hs.leader()
	if h == nil {
		return wire.Errorf(wire.CodeUnreachable, "no simulated head leads now")
	}
	return h.call(ctx, method, req, resp)
}

// nodesUp returns how many nodes the leading member sees up.
func (hs heads) nodesUp(ctx context.Context) (int, error) {
	var st wire.StatusInfo
	if err := hs.call(ctx, wire.MethodStatus, wire.Empty{}, &st); err != nil {
		return 0, err
	}
	return st.NodesUp, nil
}

// takeLags returns every member's heartbeat lags since the last call.
func (hs heads) takeLags() []float64 {
	var out []float64
	for _, h := range hs {
		out = append(out, h.takeLags()...)
	}
	return out
}

// sawHeartbeat measures one heartbeat the head folded in: the rate, the
// busy time and the lag.
func (s *simHead) sawHeartbeat(hb wire.Heartbeat, received time.Time, took time.Duration) {
	s.hbBusy.Add(int64(took))
	s.heartbeats.Add(1)
	lag := float64(received.UnixMilli() - hb.Time)
	s.lagMu.Lock()
	s.lags = append(s.lags, lag)
	s.lagMu.Unlock()
}

// pushed counts one desired-state push.
func (s *simHead) pushed(_ string, err error) {
	s.pushes.Add(1)
	if err != nil {
		s.pushErrs.Add(1)
	}
}

// takeLags returns the lags recorded since the last call.
func (s *simHead) takeLags() []float64 {
	s.lagMu.Lock()
	defer s.lagMu.Unlock()
	out := s.lags
	s.lags = nil
	return out
}

// call runs a head method in process, as the wire would.
func (s *simHead) call(ctx context.Context, method string, req, resp any) error {
	return s.srv.Call(ctx, method, wire.Caller{Node: headNode}, req, resp)
}

// cycles returns the number and total seconds of scheduling cycles.
func (s *simHead) cycles() (uint64, float64) {
	n, total := s.metrics.Cycles()
	return n, total.Seconds()
}

// headCounters is a snapshot of the head's counters and resource use.
type headCounters struct {
	use        usage
	heartbeats uint64
	hbBusy     time.Duration
	pushes     uint64
	pushErrs   uint64
	cycles     uint64
	cycleSum   float64
}

func (s *simHead) snapshot() (headCounters, error) {
	u, err := sampleUsage()
	c := headCounters{use: u, heartbeats: s.heartbeats.Load(), hbBusy: time.Duration(s.hbBusy.Load()),
		pushes: s.pushes.Load(), pushErrs: s.pushErrs.Load()}
	c.cycles, c.cycleSum = s.cycles()
	return c, err
}

// phase turns two snapshots and the lags between them into a Phase.
func phase(a, b headCounters, lags []float64) Phase {
	secs := b.use.at.Sub(a.use.at).Seconds()
	if secs <= 0 {
		secs = 1e-9
	}
	p := Phase{
		Seconds:       secs,
		HeadCPU:       (b.use.cpu - a.use.cpu).Seconds() / secs,
		HeadRSSMiB:    mib(b.use.rss),
		HeadHeapMiB:   mib(int64(b.use.heap)),
		Goroutines:    b.use.gor,
		Heartbeats:    float64(b.heartbeats-a.heartbeats) / secs,
		HeartbeatBusy: (b.hbBusy - a.hbBusy).Seconds() / secs,
		Pushes:        float64(b.pushes-a.pushes) / secs,
		PushErrors:    b.pushErrs - a.pushErrs,
		Cycles:        b.cycles - a.cycles,
	}
	if p.Cycles > 0 {
		p.CycleMeanMS = (b.cycleSum - a.cycleSum) / float64(p.Cycles) * 1000
	}
	p.HeartbeatLagP50MS, p.HeartbeatLagP99MS = quantile(lags, 0.5), quantile(lags, 0.99)
	return p
}

// quantile sorts xs and returns its q-quantile (0 for none).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(q * float64(len(xs)-1))
	return xs[i]
}
