package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// failoverPoll is how often the new head's view of the nodes is sampled.
const failoverPoll = 200 * time.Millisecond

// failover stops the leading member of hs hard and watches the member that
// takes over: how long the election takes, whether it declares any node
// down or writes off any process while the agents find it and its failover
// grace and a node timeout pass, and how late heartbeats arrive.
func failover(ctx context.Context, hs heads, o *Options) (*FailoverResult, error) {
	old := hs.leader()
	for waitBy := time.Now().Add(time.Minute); old == nil; old = hs.leader() {
		if time.Now().After(waitBy) {
			return nil, errors.New("sim: no head leads before the failover")
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
	endedBefore, _, err := workCounts(ctx, hs)
	if err != nil {
		return nil, fmt.Errorf("sim: before the failover: %w", err)
	}
	fr := &FailoverResult{OldHead: old.name, NewHeadSeconds: -1, AllUpSeconds: -1}
	log := o.Logger
	log.Info("stopping the head", "head", fr.OldHead)
	t0 := time.Now()
	stopped := old.kill()
	defer func() { <-stopped }()

	// The election: until another member runs the head.
	var nh *simHead
	for electBy := t0.Add(time.Minute); ; {
		if nh = hs.leader(); nh != nil {
			break
		}
		if time.Now().After(electBy) {
			log.Warn("no new head within a minute")
			return fr, nil
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return nil, err
		}
	}
	elected := time.Now()
	fr.NewHeadSeconds, fr.NewHead = elected.Sub(t0).Seconds(), nh.name
	log.Info("new head", "head", fr.NewHead, "seconds", fr.NewHeadSeconds)
	a, err := hs.snapshot()
	if err != nil {
		return nil, err
	}
	hs.takeLags()

	// Watch the new head: at least until its failover grace (the node
	// timeout, as configured here) and a stretched node timeout have
	// passed, the first moment it could declare a node down that sends
	// nothing, and for a window after every node was up.
	var iv time.Duration
	if hd := nh.srv.Head(); hd != nil {
		iv = hd.HeartbeatInterval()
	}
	timeout := o.NodeTimeout
	if iv > o.Heartbeat {
		timeout = time.Duration(float64(o.NodeTimeout) * float64(iv) / float64(o.Heartbeat))
	}
	until := elected.Add(timeout + 2*max(iv, o.Heartbeat))
	giveUp := until.Add(2 * time.Minute)
	down := map[string]bool{}
	fr.NodesUpMin = -1
	for {
		// The leadership may move again on a busy machine: ask whichever
		// member leads now.
		var nl wire.NodeList
		if l := hs.leader(); l == nil {
			log.Warn("no head leads now")
		} else {
			if l != nh {
				log.Warn("the leadership moved again", "head", l.name)
				nh, fr.Elections = l, fr.Elections+1
			}
			if err := l.call(ctx, wire.MethodNodes, wire.Empty{}, &nl); err != nil {
				log.Warn("the head does not answer", "head", l.name, "err", err)
			}
		}
		up := 0
		for _, n := range nl.Nodes {
			switch n.State {
			case "Up":
				up++
			case "Down":
				down[n.Name] = true
			}
		}
		now := time.Now()
		if up >= o.Nodes && fr.AllUpSeconds < 0 {
			fr.AllUpSeconds = now.Sub(t0).Seconds()
			until = later(until, now.Add(o.Duration))
		}
		if fr.AllUpSeconds >= 0 && (fr.NodesUpMin < 0 || up < fr.NodesUpMin) {
			fr.NodesUpMin = up
		}
		if now.After(until) && (fr.AllUpSeconds >= 0 || now.After(giveUp)) {
			break
		}
		if err := sleep(ctx, failoverPoll); err != nil {
			return nil, err
		}
	}
	b, err := hs.snapshot()
	if err != nil {
		return nil, err
	}
	p := phase(a, b, nil)
	lags := hs.takeLags()
	fr.HeartbeatLagP50MS, fr.HeartbeatLagP99MS, fr.HeartbeatLagMaxMS = quantile(lags, 0.5), quantile(lags, 0.99), quantile(lags, 1)
	fr.Heartbeats, fr.HeadCPU, fr.WatchedSeconds = p.Heartbeats, p.HeadCPU, p.Seconds
	fr.NodesDown = len(down)
	endedAfter, running, err := workCounts(ctx, hs)
	if err != nil {
		return nil, fmt.Errorf("sim: after the failover: %w", err)
	}
	fr.WrittenOff, fr.HeadRunning = endedAfter-endedBefore, running
	log.Info("failover watched", "nodes_down", fr.NodesDown, "written_off", fr.WrittenOff,
		"all_up_s", fr.AllUpSeconds, "lag_p99_ms", fr.HeartbeatLagP99MS)
	return fr, nil
}

// workCounts returns how much work the leading head lists as ended and as
// running, finished work included.
func workCounts(ctx context.Context, hs heads) (ended, running int, err error) {
	var wl wire.WorkList
	if err := hs.call(ctx, wire.MethodJobs, wire.ListRequest{All: true}, &wl); err != nil {
		return 0, 0, err
	}
	for _, w := range wl.Work {
		switch {
		case w.Ended:
			ended++
		case w.State == "Running":
			running++
		}
	}
	return ended, running, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
