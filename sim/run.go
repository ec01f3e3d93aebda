package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// Run runs one simulation: a head, o.Nodes fake agents joining it, an idle
// window, a burst of o.Work submissions, a busy window. It returns what it
// measured; a head that loses nodes or never runs the work is a result,
// not an error. Errors are for a simulation that could not run.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	log := o.Logger
	h, err := startHeads(ctx, &o)
	if err != nil {
		return nil, err
	}
	defer h.close()
	res := &Result{Heads: o.Heads, SubscribeHeartbeats: o.SubscribeHeartbeats, Nodes: o.Nodes,
		NodeGPUs: o.NodeGPUs, NodeGPUMemory: o.NodeGPUMemory, WorkGPUs: o.WorkGPUs, WorkGPUMemory: o.WorkGPUMemory, FakeHosts: o.hosts(), HeartbeatSec: o.Heartbeat.Seconds(), FakesInProcess: o.FakesCommand == nil}
	cfg := fakesConfig{
		Head: h.addrInfo(), Leader: h.leaderOrFirst().host.ID().String(), ClusterKey: h[0].psk, Nodes: o.Nodes, NodesPerHost: o.NodesPerHost, Heartbeat: o.Heartbeat,
		NodeMemory: o.NodeMemory, WorkMemory: o.WorkMemory, RunFor: o.RunFor, Submitters: o.Submitters,
		Subscribe: o.SubscribeHeartbeats,
		Capacity:  o.capacity(), NodeGPUs: o.NodeGPUs, NodeGPUMemory: o.NodeGPUMemory, WorkGPUs: o.WorkGPUs, WorkGPUMemory: o.WorkGPUMemory,
	}
	t0 := time.Now()
	var r runner
	if o.FakesCommand == nil {
		f, err := startFakes(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		r = &localRunner{f: f}
	} else {
		if r, err = startChild(ctx, o.FakesCommand, cfg, log); err != nil {
			return nil, err
		}
	}
	stopped := false
	defer func() {
		if !stopped {
			_, _ = r.stop()
		}
	}()

	// Join: until the head sees every node up.
	joinBy := time.Now().Add(30*time.Second + time.Duration(o.Nodes)*10*time.Millisecond)
	for {
		up, err := h.nodesUp(ctx)
		if err != nil {
			// With several heads, the leadership may move on a busy
			// machine; the join goes on with the next head.
			log.Debug("no head answers; waiting", "err", err)
		}
		res.NodesUp = up
		if err == nil && up >= o.Nodes {
			res.JoinSeconds = time.Since(t0).Seconds()
			break
		}
		if time.Now().After(joinBy) {
			log.Warn("not every node joined; measuring anyway", "up", up, "nodes", o.Nodes)
			res.JoinSeconds = -1
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("sim: waiting for nodes: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	log.Info("nodes joined", "up", res.NodesUp, "seconds", res.JoinSeconds)
	res.NodesUpMin = res.NodesUp

	window := func(name string) (Phase, error) {
		a, err := h.snapshot()
		if err != nil {
			return Phase{}, err
		}
		h.takeLags()
		end := time.Now().Add(o.Duration)
		for time.Now().Before(end) {
			select {
			case <-ctx.Done():
				return Phase{}, fmt.Errorf("sim: %s window: %w", name, ctx.Err())
			case <-time.After(min(time.Second, time.Until(end))):
			}
			if up, err := h.nodesUp(ctx); err == nil {
				res.NodesUp, res.NodesUpMin = up, min(res.NodesUpMin, up)
			}
		}
		b, err := h.snapshot()
		if err != nil {
			return Phase{}, err
		}
		p := phase(a, b, h.takeLags())
		log.Info("window measured", "window", name, "head_cpu", p.HeadCPU, "rss_mib", p.HeadRSSMiB,
			"heartbeats_per_s", p.Heartbeats, "pushes_per_s", p.Pushes, "nodes_up", res.NodesUp)
		return p, nil
	}
	if res.Idle, err = window("idle"); err != nil {
		return nil, err
	}
	if o.Work > 0 {
		if o.Work > o.capacity() {
			log.Warn("more work than fits: the rest stays pending", "work", o.Work, "capacity", o.capacity())
		}
		a, err := h.snapshot()
		if err != nil {
			return nil, err
		}
		h.takeLags()
		if res.Work, err = r.work(ctx, o.Work); err != nil {
			return nil, err
		}
		b, err := h.snapshot()
		if err != nil {
			return nil, err
		}
		res.Submit = phase(a, b, h.takeLags())
		log.Info("work running", "submitted", res.Work.Submitted, "running", res.Work.Running,
			"all_running_s", res.Work.AllRunningSeconds, "p50_ms", res.Work.LatencyP50MS)
		if res.Busy, err = window("busy"); err != nil {
			return nil, err
		}
		var wl wire.WorkList
		if err := h.call(ctx, wire.MethodJobs, wire.ListRequest{}, &wl); err == nil {
			for _, w := range wl.Work {
				if w.State == "Running" {
					res.Work.HeadRunning++
				}
			}
		}
	}
	if o.Failover {
		if res.Failover, err = failover(ctx, h, &o); err != nil {
			return nil, err
		}
	}
	if u, err := sampleUsage(); err == nil {
		res.HeadPeakRSSMiB = mib(u.peakRSS)
	}
	res.MaxHeartbeatsPerSecond = max(o.MaxHeartbeatsPerSecond, 0)
	if l := h.leader(); l != nil {
		if hd := l.srv.Head(); hd != nil {
			res.AnnouncedHeartbeatSec = hd.HeartbeatInterval().Seconds()
		}
	}
	// Stop the head first, so that it does not log every node's push
	// failing as the fakes go away.
	h.stopRunning()
	stopped = true
	if res.Fakes, err = r.stop(); err != nil {
		log.Warn("stopping the fakes", "err", err)
	}
	if res.Failover != nil {
		// Every process runs until the end (Options.Failover): whatever
		// the fakes were told to stop, a head stopped.
		res.Failover.Stopped = res.Fakes.Ended
	}
	return res, nil
}
