package rm

import (
	"fmt"
	"sort"

	"github.com/ducc-project/ducc/units"
)

// start records a new process of w on n.
func (s *sched) start(w *work, n *node, shares int, reason string) {
	// Use w's holds on n first.
	need := shares
	for _, h := range n.holds {
		if need == 0 {
			break
		}
		if h.For == w.w.ID && h.Shares > 0 {
			t := min(need, h.Shares)
			h.Shares -= t
			n.held -= t
			need -= t
		}
	}
	n.used += shares
	s.changed = append(s.changed, n)
	w.starts++
	if w.w.ServiceID != "" {
		if n.svc == nil {
			n.svc = map[string]int{}
		}
		n.svc[w.w.ServiceID]++
	}
	if n.pool.index != nil {
		n.pool.index.update(n)
	}
	var gpus []string
	if s.gpuNodes != nil {
		gpus = s.assignGPUs(w, n)
	}
	s.plan.Starts = append(s.plan.Starts, Start{
		WorkID: w.w.ID, Node: n.n.Name, Shares: shares,
		Memory: int64(shares) * w.quantum, GPUs: gpus, Reason: reason,
	})
	if s.trace {
		s.tracef("start %s %d on %s: %d shares (%s), %s; %d free left", w.w.Kind, w.w.ID, n.n.Name, shares,
			units.FormatSize(int64(shares)*w.quantum), reason, n.shares-n.used)
		if gpus != nil {
			s.tracef("  GPUs %s on %s: %s", joinIDs(gpus), n.n.Name, nodeGPUText(s.devs(n), ""))
		}
	}
}

// heldNode returns a node where w holds space that fits one process now.
func (s *sched) heldNode(w *work) *node {
	for _, h := range w.holds {
		if h.Shares <= 0 {
			continue
		}
		n := s.nodeBy[h.Node]
		if n != nil && n.up() && n.freeFor(s, w) >= w.order && inMachineList(w.w, n.n.Name) && (!w.gpu || s.gpuFits(w, n)) {
			return n
		}
	}
	return nil
}

// fitIn returns the best-fit node for one process of w among the Up nodes of
// p, or nil. Service instances prefer nodes with fewer instances of their
// service (spread before stacking).
func (s *sched) fitIn(w *work, p *pool) *node {
	if w.asksGPU() {
		return s.fitGPU(w, p)
	}
	if w.anyNode && p.index != nil {
		return p.index.best(w.order, nil)
	}
	var best *node
	bestSvc, bestFree := 0, 0
	for _, n := range p.nodes {
		if !n.up() || !inMachineList(w.w, n.n.Name) {
			continue
		}
		f := n.freeFor(s, w)
		if f < w.order {
			continue
		}
		svc := 0
		if w.w.ServiceID != "" {
			svc = n.svc[w.w.ServiceID]
		}
		if best == nil || svc < bestSvc || (svc == bestSvc && f < bestFree) {
			best, bestSvc, bestFree = n, svc, f
		}
	}
	return best
}

// largest returns the shares of the largest Up node w could use in pools ps.
func (s *sched) largest(w *work, ps []*pool) int {
	m := 0
	for _, p := range ps {
		if len(w.w.MachineList) == 0 {
			m = max(m, p.maxNode)
			continue
		}
		for _, n := range p.nodes {
			if n.up() && inMachineList(w.w, n.n.Name) {
				m = max(m, n.shares)
			}
		}
	}
	return m
}

// noFitCode classifies tooBig's reason: no node up at all, or none big
// enough.
func (s *sched) noFitCode(w *work, ps []*pool) WaitCode {
	if s.largest(w, ps) == 0 {
		return WaitNoNodes
	}
	return WaitNoFit
}

// tooBig says why no node can ever hold one process of w, or "".
func (s *sched) tooBig(w *work, ps []*pool) string {
	l := s.largest(w, ps)
	if l > 0 && (w.w.GPUs != 0 || w.w.GPUMemory != 0) {
		if msg := s.gpuTooBig(w, ps); msg != "" {
			return msg
		}
	}
	if w.whole {
		return ""
	}
	if l >= w.order {
		return ""
	}
	need := units.FormatSize(int64(w.order) * w.quantum)
	big := units.FormatSize(int64(l) * w.quantum)
	if l == 0 {
		where := "in pool " + w.pool.name
		if len(w.w.MachineList) > 0 {
			where = "in machine_list"
		}
		return fmt.Sprintf("no node %s is up to hold %s (all are down, varied off or quiescing)", where, need)
	}
	switch {
	case len(w.w.MachineList) > 0:
		return fmt.Sprintf("no node in machine_list can hold %s; largest schedulable there is %s", need, big)
	case len(s.pools) == 1:
		return fmt.Sprintf("no node can hold %s; largest schedulable is %s", need, big)
	}
	return fmt.Sprintf("no node in pool %s has %s; largest schedulable there is %s", w.pool.name, need, big)
}

// allotment returns the non-preemptable memory cap per user of w's class (0 = none).
func (s *sched) allotment(w *work) int64 {
	if w.class.MaxAllotment > 0 {
		return int64(w.class.MaxAllotment)
	}
	return int64(s.cfg.GlobalAllotment)
}

// placeNP places the non-preemptable work of one band in submit order
// (docs/scheduling.md, step 2, RESERVE and FIXED_SHARE).
func (s *sched) placeNP(ws []*work, npUse map[string]int64) {
	for _, w := range ws {
		if w.have() >= w.want {
			continue
		}
		if msg := s.tooBig(w, []*pool{w.pool}); msg != "" {
			w.pending, w.pendCode = msg, s.noFitCode(w, []*pool{w.pool})
			continue
		}
		key := w.class.Name + "\x00" + w.user
		for w.have() < w.want {
			mem := int64(w.order) * w.quantum
			if a := s.allotment(w); a > 0 && npUse[key]+mem > a {
				w.pendCode = WaitLimit
				w.pending = fmt.Sprintf("deferred: allotment of %s exceeded (user %s holds %s in class %s; this needs %s more)",
					units.FormatSize(a), w.user, units.FormatSize(npUse[key]), w.class.Name, units.FormatSize(mem))
				break
			}
			if s.holdShares(w) >= w.order && s.heldNode(w) == nil {
				w.pending, w.pendCode = "waiting for preemptions: "+s.holdText(w), WaitPreempting
				w.pool.avail -= w.order
				npUse[key] += mem
				break
			}
			var n *node
			if w.whole {
				n = s.freeMachine(w)
			} else if n = s.heldNode(w); n == nil {
				n = s.fitIn(w, w.pool)
			}
			if n != nil {
				shares := w.order
				if w.whole {
					shares = n.shares
				}
				reason := fmt.Sprintf("%s class %s", w.class.Policy, w.class.Name)
				if w.w.ServiceID != "" {
					reason += fmt.Sprintf(", service %s instance %d", w.w.ServiceID, w.w.Instance)
				}
				s.start(w, n, shares, reason)
				if n.pool == w.pool {
					w.pool.avail -= shares
				}
				npUse[key] += mem
				continue
			}
			if s.evictFor(w) {
				w.pending, w.pendCode = "waiting for preemptions: "+s.holdText(w), WaitPreempting
				w.pool.avail -= w.order
				npUse[key] += mem
			} else if w.pending == "" {
				w.pending, w.pendCode = s.npWaitReason(w), s.npWaitCode(w)
			}
			break
		}
	}
}

// freeMachine returns an empty Up node of exactly w's size in its pool.
func (s *sched) freeMachine(w *work) *node {
	if n := s.heldNode(w); n != nil && n.shares == w.order && n.used == 0 {
		return n
	}
	for _, n := range w.pool.nodes {
		if n.up() && n.shares == w.order && n.used == 0 && n.held == 0 && inMachineList(w.w, n.n.Name) && (!w.gpu || s.gpuFits(w, n)) {
			return n
		}
	}
	return nil
}

// npWaitCode classifies npWaitReason.
func (s *sched) npWaitCode(w *work) WaitCode {
	if !w.whole {
		if s.gpuBlocked(w) {
			return WaitGPUs
		}
		return WaitResources
	}
	up := false
	for _, n := range w.pool.nodes {
		if n.up() {
			up = true
			if n.shares == w.order {
				return WaitResources
			}
		}
	}
	if !up {
		return WaitNoNodes
	}
	return WaitNoFit
}

func (s *sched) npWaitReason(w *work) string {
	if !w.whole && s.gpuBlocked(w) {
		return s.gpuWaitReason(w)
	}
	size := units.FormatSize(int64(w.order) * w.quantum)
	if w.whole {
		sizes := map[int]int{}
		for _, n := range w.pool.nodes {
			if n.up() {
				sizes[n.shares]++
			}
		}
		var ks []int
		for k := range sizes {
			ks = append(ks, k)
		}
		sort.Ints(ks)
		var have string
		for i, k := range ks {
			if i > 0 {
				have += ", "
			}
			have += fmt.Sprintf("%d × %s", sizes[k], units.FormatSize(int64(k)*w.quantum))
		}
		if sizes[w.order] == 0 {
			if have == "" {
				have = "none up"
			}
			return fmt.Sprintf("no machine in pool %s has exactly %s (reservations get exactly their size); machines: %s", w.pool.name, size, have)
		}
		return fmt.Sprintf("waiting for resources: every %s machine in pool %s is busy with work that cannot be evicted", size, w.pool.name)
	}
	return fmt.Sprintf("waiting for resources: no node in pool %s has %s free and none can be freed by evicting preemptable work", w.pool.name, size)
}

func (s *sched) holdShares(w *work) int {
	t := 0
	for _, h := range w.holds {
		t += h.Shares
	}
	return t
}

func (s *sched) holdText(w *work) string {
	var nodes []string
	var victims []string
	for _, h := range w.holds {
		if h.Shares > 0 {
			nodes = append(nodes, h.Node)
			for _, v := range h.Victims {
				if s.procExists(v) {
					victims = append(victims, v)
				}
			}
		}
	}
	if len(victims) == 0 {
		return fmt.Sprintf("space held on %s", joinIDs(nodes))
	}
	shown := joinIDs(victims)
	if len(victims) > 6 {
		shown = fmt.Sprintf("%s and %d more", joinIDs(victims[:6]), len(victims)-6)
	}
	return fmt.Sprintf("%d process(es) stopping on %s (%s)", len(victims), joinIDs(dedup(nodes)), shown)
}

func dedup(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}
