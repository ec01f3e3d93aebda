package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
)

// fakesConfig is what the fake agents need; it crosses to a child process
// as JSON.
type fakesConfig struct {
	Head         []string      `json:"head"`        // every head candidate's multiaddrs ending in /p2p/ID
	Leader       string        `json:"leader"`      // peer id of the head that leads at the start
	ClusterKey   []byte        `json:"cluster_key"` // raw PSK
	Nodes        int           `json:"nodes"`
	NodesPerHost int           `json:"nodes_per_host"`
	Heartbeat    time.Duration `json:"heartbeat"`
	NodeMemory   int64         `json:"node_memory"`
	WorkMemory   int64         `json:"work_memory"`
	// Capacity is how many pieces of work fit in the cluster
	// (Options.capacity).
	Capacity int `json:"capacity"`
	// GPUs of each node, and what each piece of work asks (Options).
	NodeGPUs      int           `json:"node_gpus,omitempty"`
	NodeGPUMemory int64         `json:"node_gpu_memory,omitempty"`
	WorkGPUs      int           `json:"work_gpus,omitempty"`
	WorkGPUMemory int64         `json:"work_gpu_memory,omitempty"`
	RunFor        time.Duration `json:"run_for"`
	Submitters    int           `json:"submitters"`
	Subscribe     bool          `json:"subscribe_heartbeats"`
}

// reportWorkers is the number of concurrent report calls per fake host.
const reportWorkers = 4

// fakes is a set of fake agents sharing a few libp2p hosts, and the
// workload driver that submits through them.
type fakes struct {
	cfg   fakesConfig
	log   *slog.Logger
	hosts []*fakeHost

	leaderMu sync.Mutex
	leader   peer.ID
	term     uint64
	interval time.Duration // heartbeat interval: the config's, or the head's longer one

	runMu   sync.Mutex
	running map[uint64]time.Time // work id → its process reported Running

	heartbeats, publishErrs, pushes, reports, reportErrs, started, ended atomic.Uint64

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// fakeHost is one libp2p host carrying many fake nodes.
type fakeHost struct {
	f       *fakes
	h       host.Host
	ps      *pubsub.PubSub
	hbT     *p2p.Topic[wire.Heartbeat]
	leadT   *p2p.Topic[wire.LeaderAnnounce]
	reports chan wire.Report

	mu     sync.Mutex // guards the nodes' state
	nodes  []*fakeNode
	byName map[string]*fakeNode
}

// fakeNode is the state of one fake agent.
type fakeNode struct {
	name    string
	seq     uint64
	applied uint64                      // desired-state version applied
	procs   map[string]*wire.ProcStatus // running, and ended but not acknowledged
	shaper  wire.HeartbeatShaper        // full or delta; used by heartbeatLoop only
	pushed  string                      // the head (followed name) that last pushed a desired state
	gpus    []wire.GPUDevice            // its GPUs (fakesConfig.NodeGPUs)
}

// fakeGPUs returns node i's GPUs: n devices of mem bytes each.
func fakeGPUs(i, n int, mem int64) []wire.GPUDevice {
	if n == 0 {
		return nil
	}
	gs := make([]wire.GPUDevice, n)
	for j := range gs {
		gs[j] = wire.GPUDevice{UUID: fmt.Sprintf("GPU-sim-%05d-%02d", i, j), Model: "ducc sim GPU", Memory: mem, Minor: j}
	}
	return gs
}

func nodeName(i int) string { return fmt.Sprintf("sim%05d", i) }

// startFakes starts the hosts, connects them to the head and starts the
// heartbeats. The fakes run until stop.
func startFakes(ctx context.Context, cfg fakesConfig, logger *slog.Logger) (_ *fakes, err error) {
	if len(cfg.Head) == 0 {
		return nil, errors.New("fake agents: no head address")
	}
	var heads []peer.AddrInfo // one per head candidate, in order
	for _, a := range cfg.Head {
		ai, err := peer.AddrInfoFromString(a)
		if err != nil {
			return nil, fmt.Errorf("fake agents: head address %q: %w", a, err)
		}
		if i := slices.IndexFunc(heads, func(h peer.AddrInfo) bool { return h.ID == ai.ID }); i >= 0 {
			heads[i].Addrs = append(heads[i].Addrs, ai.Addrs...)
		} else {
			heads = append(heads, *ai)
		}
	}
	leader, err := peer.Decode(cfg.Leader)
	if err != nil {
		return nil, fmt.Errorf("fake agents: leader %q: %w", cfg.Leader, err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	f := &fakes{cfg: cfg, log: logger, leader: leader, interval: cfg.Heartbeat, running: map[uint64]time.Time{}, cancel: cancel}
	defer func() {
		if err != nil {
			f.stop()
		}
	}()
	// libp2p and pubsub log at info per host; keep only warnings.
	quiet := slog.New(&levelHandler{min: slog.LevelWarn, h: logger.Handler()})
	nh := (cfg.Nodes + cfg.NodesPerHost - 1) / cfg.NodesPerHost
	for i := range nh {
		fh, err := f.newHost(ctx, rctx, quiet, i)
		if err != nil {
			return nil, err
		}
		// Every agent is connected to every head candidate (its bootstrap
		// peers), so that a new head hears the heartbeats at once.
		for _, head := range heads {
			if err := fh.h.Connect(ctx, head); err != nil {
				return nil, fmt.Errorf("fake host %d: connect to head %s: %w", i, head.ID, p2p.ExplainDialError(err))
			}
		}
	}
	for i := range cfg.Nodes {
		fh := f.hosts[i/cfg.NodesPerHost]
		n := &fakeNode{name: nodeName(i), procs: map[string]*wire.ProcStatus{}, gpus: fakeGPUs(i, cfg.NodeGPUs, cfg.NodeGPUMemory)}
		fh.nodes = append(fh.nodes, n)
		fh.byName[n.name] = n
	}
	for _, fh := range f.hosts {
		fh.startLoops(rctx)
	}
	f.log.Info("fake agents started", "nodes", cfg.Nodes, "hosts", len(f.hosts))
	return f, nil
}

// newHost starts one fake host: libp2p, gossipsub topics, the RPC handler.
func (f *fakes) newHost(ctx, rctx context.Context, quiet *slog.Logger, i int) (*fakeHost, error) {
	h, err := p2p.NewHost(ctx, p2p.HostConfig{ClusterKey: f.cfg.ClusterKey, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, Logger: quiet})
	if err != nil {
		return nil, fmt.Errorf("fake host %d: %w", i, err)
	}
	fh := &fakeHost{f: f, h: h, byName: map[string]*fakeNode{}, reports: make(chan wire.Report, 1024)}
	f.hosts = append(f.hosts, fh)
	if fh.ps, err = p2p.NewPubSub(rctx, h, quiet); err != nil {
		return nil, fmt.Errorf("fake host %d: %w", i, err)
	}
	if fh.hbT, err = p2p.JoinHeartbeatTopic(fh.ps, quiet); err != nil {
		return nil, fmt.Errorf("fake host %d: %w", i, err)
	}
	if fh.leadT, err = p2p.JoinLeaderTopic(fh.ps, quiet); err != nil {
		return nil, fmt.Errorf("fake host %d: %w", i, err)
	}
	p2p.Serve(h, fh.handle, p2p.WithServeLogger(quiet))
	return fh, nil
}

// startLoops starts the host's goroutines; they end with ctx.
func (fh *fakeHost) startLoops(ctx context.Context) {
	f := fh.f
	// Like every agent today, optionally subscribe to heartbeats (then
	// gossipsub delivers every node's heartbeat to this host too).
	if f.cfg.Subscribe {
		if sub, err := fh.hbT.Subscribe(); err == nil {
			f.wg.Add(1)
			go func() { defer f.wg.Done(); drain(ctx, sub) }()
		} else {
			f.log.Warn("fake host: cannot subscribe to heartbeats", "err", err)
		}
	}
	if sub, err := fh.leadT.Subscribe(); err == nil {
		f.wg.Add(1)
		go func() { defer f.wg.Done(); f.followLeader(ctx, sub) }()
	} else {
		f.log.Warn("fake host: cannot subscribe to leader announcements", "err", err)
	}
	f.wg.Add(1)
	go func() { defer f.wg.Done(); fh.heartbeatLoop(ctx) }()
	for range reportWorkers {
		f.wg.Add(1)
		go func() { defer f.wg.Done(); fh.reportLoop(ctx) }()
	}
	if f.cfg.RunFor > 0 {
		f.wg.Add(1)
		go func() { defer f.wg.Done(); fh.completeLoop(ctx) }()
	}
}

func drain[T any](ctx context.Context, sub *p2p.Subscription[T]) {
	defer sub.Cancel()
	for {
		if _, _, err := sub.Next(ctx); err != nil {
			return
		}
	}
}

func (f *fakes) followLeader(ctx context.Context, sub *p2p.Subscription[wire.LeaderAnnounce]) {
	defer sub.Cancel()
	for {
		ann, _, err := sub.Next(ctx)
		if err != nil {
			return
		}
		p, err := peer.Decode(ann.PeerID)
		if err != nil {
			continue
		}
		f.leaderMu.Lock()
		if ann.Term >= f.term {
			f.leader, f.term = p, ann.Term
			f.interval = max(f.cfg.Heartbeat, time.Duration(ann.HeartbeatMS)*time.Millisecond)
		}
		f.leaderMu.Unlock()
	}
}

func (f *fakes) leaderID() peer.ID {
	f.leaderMu.Lock()
	defer f.leaderMu.Unlock()
	return f.leader
}

// followed returns the head the fakes follow (peer id and term, as an
// agent names it for its heartbeat shaper) and the heartbeat interval.
func (f *fakes) followed() (string, time.Duration) {
	f.leaderMu.Lock()
	defer f.leaderMu.Unlock()
	return fmt.Sprintf("%s/%d", f.leader, f.term), f.interval
}

// stop stops every goroutine and host and returns the fakes' figures.
func (f *fakes) stop() FakeStats {
	f.cancel()
	f.wg.Wait()
	for _, fh := range f.hosts {
		p2p.StopServing(fh.h)
		_ = fh.h.Close()
	}
	st := FakeStats{
		HeartbeatsSent: f.heartbeats.Load(), PublishErrors: f.publishErrs.Load(), Pushes: f.pushes.Load(),
		Reports: f.reports.Load(), ReportErrors: f.reportErrs.Load(), Started: f.started.Load(), Ended: f.ended.Load(),
	}
	if u, err := sampleUsage(); err == nil {
		st.CPUSeconds, st.PeakRSSMiB = u.cpu.Seconds(), mib(u.peakRSS)
	}
	return st
}

// heartbeatLoop publishes every node's heartbeat once per interval,
// spread evenly over the interval, catching up if it fell behind. It
// follows the interval the head announces, and sends full or delta
// heartbeats as an agent does (wire.HeartbeatShaper).
func (fh *fakeHost) heartbeatLoop(ctx context.Context) {
	n := len(fh.nodes)
	if n == 0 {
		return
	}
	_, interval := fh.f.followed()
	spread := func(iv time.Duration) time.Duration { return max(iv/time.Duration(n), time.Microsecond) }
	every := spread(interval)
	// Hosts start at random points of the interval, as real agents would.
	offset := rand.N(interval)
	start := time.Now().Add(-offset)
	done := int(offset / every)
	tick := time.NewTicker(max(every, time.Millisecond))
	defer tick.Stop()
	for {
		head, iv := fh.f.followed()
		if iv != interval {
			// Go on from the same node at the new pace.
			interval, every = iv, spread(iv)
			start = time.Now().Add(-time.Duration(done) * every)
		}
		due := int(time.Since(start) / every)
		for ; done < due; done++ {
			node := fh.nodes[done%n]
			hb, pushed := fh.heartbeat(node)
			hb = node.shaper.Shape(hb, head, pushed == head)
			if err := fh.hbT.Publish(ctx, hb); err != nil {
				if ctx.Err() != nil {
					return
				}
				node.shaper.ForceFull()
				fh.f.publishErrs.Add(1)
				continue
			}
			fh.f.heartbeats.Add(1)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// heartbeat builds one node's full heartbeat (inventory and every
// process) and returns the head that last pushed the node.
func (fh *fakeHost) heartbeat(n *fakeNode) (wire.Heartbeat, string) {
	cfg := &fh.f.cfg
	fh.mu.Lock()
	n.seq++
	hb := wire.Heartbeat{
		Node: n.name, PeerID: fh.h.ID().String(), Seq: n.seq, Time: time.Now().UnixMilli(),
		MemTotal: cfg.NodeMemory, MemSchedulable: cfg.NodeMemory, CPUs: 16,
		DesiredVersion: n.applied, Version: "sim", GPUs: n.gpus,
	}
	if len(n.gpus) > 0 {
		// As an agent with NVML: the inventory, and each heartbeat the
		// devices' utilization and memory in use (figures that change
		// from beat to beat, so that deltas carry them as they would).
		hb.GPUDiscovery = "NVML, simulated by ducc sim"
		hb.GPUUse = make([]wire.GPUUse, len(n.gpus))
		for j, g := range n.gpus {
			u := int(n.seq*7+uint64(j)*13) % 101
			hb.GPUUse[j] = wire.GPUUse{UUID: g.UUID, Util: wire.Percent(u), MemoryUsed: g.Memory / 100 * int64(u)}
		}
	}
	for _, p := range n.procs {
		hb.Procs = append(hb.Procs, *p)
		if !p.Ended() {
			hb.MemUsed += p.MemoryLimit / 2
		}
	}
	pushed := n.pushed
	fh.mu.Unlock()
	for _, a := range fh.h.Addrs() {
		hb.Addrs = append(hb.Addrs, a.String())
	}
	sort.Slice(hb.Procs, func(i, j int) bool { return hb.Procs[i].ID < hb.Procs[j].ID })
	return hb, pushed
}

// handle answers the head's desired-state pushes for every node of this
// host, as an agent's reconcile does: start what is wanted (at once
// Running), stop what is marked to stop or no longer listed, forget the
// ended processes the head acknowledged.
func (fh *fakeHost) handle(ctx context.Context, from peer.ID, req *wire.Request) (any, error) {
	if req.Method != wire.MethodDesired {
		return nil, wire.Errorf(wire.CodeUsage, "a fake agent only takes desired states, not %s", req.Method)
	}
	var ds wire.DesiredState
	if err := req.DecodeBody(&ds); err != nil {
		return nil, err
	}
	f := fh.f
	f.pushes.Add(1)
	now := time.Now().UnixMilli()
	head, _ := f.followed()
	pushedBy := ""
	if from == f.leaderID() {
		pushedBy = head
	}
	var changed []wire.ProcStatus
	fh.mu.Lock()
	n := fh.byName[ds.Node]
	if n == nil {
		fh.mu.Unlock()
		return nil, wire.Errorf(wire.CodeUsage, "node %s is not on this host", ds.Node)
	}
	if pushedBy != "" {
		n.pushed = pushedBy // the head holds a full heartbeat of n
	}
	if ds.Version <= n.applied {
		fh.mu.Unlock()
		return wire.Empty{}, nil
	}
	n.applied = ds.Version
	for _, id := range ds.Ack {
		if p := n.procs[id]; p != nil && p.Ended() {
			delete(n.procs, id)
		}
	}
	want := make(map[string]bool, len(ds.Procs))
	for _, spec := range ds.Procs {
		want[spec.ID] = true
		p := n.procs[spec.ID]
		switch {
		case spec.Stop && p != nil && !p.Ended():
			endProc(p, now, 128+15, "SIGTERM", spec.StopReason)
			f.ended.Add(1)
			changed = append(changed, *p)
		case !spec.Stop && p == nil:
			p = &wire.ProcStatus{ID: spec.ID, WorkID: spec.WorkID, State: wire.ProcRunning, PID: 100000 + int(f.started.Add(1)%4000000),
				StartedAt: now, MemoryLimit: spec.MemoryLimit, Node: n.name, RSS: uint64(spec.MemoryLimit / 2)}
			n.procs[spec.ID] = p
			changed = append(changed, *p)
		}
	}
	for id, p := range n.procs {
		if !want[id] && !p.Ended() {
			endProc(p, now, 128+15, "SIGTERM", "not wanted by the head")
			f.ended.Add(1)
			changed = append(changed, *p)
		}
	}
	fh.mu.Unlock()
	if len(changed) > 0 {
		select {
		case fh.reports <- wire.Report{Node: n.name, Procs: changed}:
		case <-ctx.Done():
			return nil, wire.Errorf(wire.CodeUnreachable, "fake agent busy: %v", ctx.Err())
		}
	}
	return wire.Empty{}, nil
}

func endProc(p *wire.ProcStatus, now int64, code int, signal, reason string) {
	p.State, p.EndedAt, p.ExitCode, p.Signal, p.Reason = wire.ProcExited, now, code, signal, reason
}

// reportLoop sends process reports to the head, as an agent does when a
// process starts or ends; heartbeats repeat the states anyway.
func (fh *fakeHost) reportLoop(ctx context.Context) {
	f := fh.f
	for {
		var r wire.Report
		select {
		case <-ctx.Done():
			return
		case r = <-fh.reports:
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := p2p.Call(cctx, fh.h, f.leaderID(), wire.MethodReport, wire.Caller{Node: r.Node}, r, &wire.Empty{})
		cancel()
		f.reports.Add(1)
		if err != nil {
			f.reportErrs.Add(1)
			if ctx.Err() == nil {
				f.log.Debug("report failed; the next heartbeat repeats it", "node", r.Node, "err", err)
			}
			continue
		}
		now := time.Now()
		f.runMu.Lock()
		for _, p := range r.Procs {
			if p.State == wire.ProcRunning {
				if _, ok := f.running[p.WorkID]; !ok {
					f.running[p.WorkID] = now
				}
			}
		}
		f.runMu.Unlock()
	}
}

// completeLoop ends processes that have run for RunFor, with exit code 0.
func (fh *fakeHost) completeLoop(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	runFor := fh.f.cfg.RunFor.Milliseconds()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now().UnixMilli()
		var reps []wire.Report
		fh.mu.Lock()
		for _, n := range fh.nodes {
			var changed []wire.ProcStatus
			for _, p := range n.procs {
				if p.State == wire.ProcRunning && now-p.StartedAt >= runFor {
					endProc(p, now, 0, "", "")
					fh.f.ended.Add(1)
					changed = append(changed, *p)
				}
			}
			if len(changed) > 0 {
				reps = append(reps, wire.Report{Node: n.name, Procs: changed})
			}
		}
		fh.mu.Unlock()
		for _, r := range reps {
			select {
			case fh.reports <- r:
			case <-ctx.Done():
				return
			}
		}
	}
}

// levelHandler drops records below min.
type levelHandler struct {
	min slog.Level
	h   slog.Handler
}

func (l *levelHandler) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= l.min && l.h.Enabled(ctx, lv)
}
func (l *levelHandler) Handle(ctx context.Context, r slog.Record) error { return l.h.Handle(ctx, r) }
func (l *levelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &levelHandler{min: l.min, h: l.h.WithAttrs(as)}
}
func (l *levelHandler) WithGroup(name string) slog.Handler {
	return &levelHandler{min: l.min, h: l.h.WithGroup(name)}
}
