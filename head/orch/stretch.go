package orch

import "time"

// stretch is the heartbeat interval the head asks agents to use, and what
// the node timeout needs to know of it. The interval grows with the
// number of live nodes so that the head's intake stays at about
// Config.MaxHeartbeatsPerSecond (Nomad's max_heartbeats_per_second). The
// node timeout grows in proportion at once; when the interval shrinks,
// agents keep the longer one until they hear the next announcement, so
// the longer timeout holds for one more longer timeout.
type stretch struct {
	at       time.Time     // when interval was last computed
	interval time.Duration // the interval announced now
	longer   time.Duration // a longer interval announced before
	until    time.Time     // longer still counts until then
}

// stretchEvery is how often the interval is recomputed (it counts the
// nodes).
const stretchEvery = time.Second

// stretchStep is the granularity of the announced interval, so that a
// node joining or leaving does not change it.
const stretchStep = 100 * time.Millisecond

// HeartbeatInterval returns the heartbeat interval agents should use now:
// Config.Heartbeat, or nodes / MaxHeartbeatsPerSecond when that is
// longer (rounded up to 100 ms). The head announces it.
func (o *Orchestrator) HeartbeatInterval() time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.intervalLocked(o.cfg.Now())
}

// NodeTimeoutNow returns how long a node may go without heartbeats now
// before it is declared down: Config.NodeTimeout scaled by the announced
// interval over Config.Heartbeat (docs/configuration.md).
func (o *Orchestrator) NodeTimeoutNow() time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.nodeTimeoutLocked(o.cfg.Now())
}

// intervalLocked recomputes the interval at most every stretchEvery; o.mu
// is held.
func (o *Orchestrator) intervalLocked(now time.Time) time.Duration {
	st := &o.stretch
	if st.interval != 0 && now.Sub(st.at) < stretchEvery && !now.Before(st.at) {
		return st.interval
	}
	iv := o.cfg.Heartbeat
	if r := o.cfg.MaxHeartbeatsPerSecond; r > 0 {
		live := 0
		for _, n := range o.nodes {
			if n.State != NodeDown {
				live++
			}
		}
		need := time.Duration(live) * time.Second / time.Duration(r)
		if need > iv {
			iv = (need + stretchStep - 1) / stretchStep * stretchStep
		}
	}
	if st.interval > iv {
		longer := st.interval
		if now.Before(st.until) && st.longer > longer {
			longer = st.longer
		}
		// Agents switch at their next heartbeat after the next
		// announcement: within one longer interval plus one base one.
		st.longer, st.until = longer, now.Add(o.scaleTimeout(longer)+longer+o.cfg.Heartbeat)
	}
	st.at, st.interval = now, iv
	return iv
}

// nodeTimeoutLocked is NodeTimeoutNow with o.mu held.
func (o *Orchestrator) nodeTimeoutLocked(now time.Time) time.Duration {
	iv := o.intervalLocked(now)
	if now.Before(o.stretch.until) && o.stretch.longer > iv {
		iv = o.stretch.longer
	}
	return o.scaleTimeout(iv)
}

// scaleTimeout is the node timeout for heartbeats every iv.
func (o *Orchestrator) scaleTimeout(iv time.Duration) time.Duration {
	if iv <= o.cfg.Heartbeat {
		return o.cfg.NodeTimeout
	}
	return time.Duration(float64(o.cfg.NodeTimeout) * float64(iv) / float64(o.cfg.Heartbeat))
}
