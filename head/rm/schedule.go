package rm

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ducc-project/ducc/units"
)

// Schedule runs one scheduling cycle: it reads the snapshot in and returns
// the plan. It is pure and deterministic: the same input gives the same plan.
// A nil in.Config means DefaultConfig().
func Schedule(in Input) Plan {
	return new(Scheduler).Schedule(in)
}

// Scheduler runs scheduling cycles like Schedule and keeps the memory of
// its working state (the slabs of nodes, works and processes and the maps
// that find them) from one cycle to the next, so a busy cycle allocates and
// collects a fraction of what a fresh one does. Its Plan is the one
// Schedule gives for the same Input: nothing a cycle decides depends on
// what the previous cycle left in that memory. The zero value is ready to
// use. A Scheduler is not safe for concurrent use; the Plan it returns
// shares no memory with it.
type Scheduler struct {
	mem buildMem
}

// Schedule runs one cycle; see the package function Schedule.
func (sc *Scheduler) Schedule(in Input) Plan {
	if in.Config == nil {
		in.Config = DefaultConfig()
	}
	s := &sched{
		in: &in, cfg: in.Config, now: in.Now, trace: !in.NoTrace, mem: &sc.mem,
		classShare: map[string]int{}, classUsers: map[string]int{}, userShare: map[classUser]int{},
		poolCap:    map[poolBand]int{},
		schedState: schedState{shrinking: map[uint64]*Shrinking{}, observed: map[*work]bool{}, userHeld: map[string]*int{}},
	}
	s.tracef("cycle at %s: %d nodes, %d works", in.Now.UTC().Format(time.RFC3339Nano), len(in.Nodes), len(in.Work))
	s.build()
	s.initCapacity()
	for _, w := range s.works {
		s.computeWant(w)
	}
	s.loadHolds()
	for _, p := range s.pools {
		p.index = newFitIndex(p.nodes)
	}
	s.varyOff()
	for _, band := range s.bands() {
		s.runBand(band)
	}
	s.growFair()
	s.preemptRound()
	s.bonus()
	s.finishHolds()
	s.reasons()
	s.summaries()
	s.finishPlan()
	return s.plan
}

// initCapacity removes what non-preemptable work holds from each pool's
// fair-share capacity and keeps what fair work holds on quiescing nodes.
func (s *sched) initCapacity() {
	for _, w := range s.works {
		for _, p := range w.live {
			switch {
			case p.n.up() && (w.class == nil || !w.fair):
				p.n.pool.avail -= p.shares
			case p.n.n.State == NodeQuiescing && w.fair:
				p.n.pool.avail += p.shares
			}
		}
	}
	for _, p := range s.pools {
		s.tracef("pool %s: %d nodes, quantum %s, %d shares for fair-share work", p.name, len(p.nodes), units.FormatSize(p.quantum), p.avail)
	}
}

// varyOff drains fair-share work from varied-off nodes.
func (s *sched) varyOff() {
	for _, n := range s.nodes {
		if n.n.State != NodeVariedOff {
			continue
		}
		var vs []victim
		for _, p := range n.procs {
			if p.w.fair && !p.stopping {
				vs = append(vs, victim{p, catEvict})
			}
		}
		sort.Slice(vs, func(i, j int) bool { return vs[i].p.p.ID < vs[j].p.p.ID })
		s.issueStops(vs, Evicted, fmt.Sprintf("node %s is varied off", n.n.Name), false)
	}
}

// loadHolds takes over the previous cycle's holds that still matter.
func (s *sched) loadHolds() {
	for _, h := range s.in.Carry.Holds {
		n, w := s.nodeBy[h.Node], s.workByID(h.For)
		if n == nil || !n.up() || w == nil || w.class == nil || h.Shares <= 0 || w.have() >= w.want {
			s.tracef("hold on %s for %d released", h.Node, h.For)
			continue
		}
		hc := h
		hc.Victims = append([]string(nil), h.Victims...)
		s.holds = append(s.holds, &hc)
		n.holds = append(n.holds, &hc)
		w.holds = append(w.holds, &hc)
		n.held += h.Shares
	}
}

type band struct {
	prio   int
	policy string
	works  []*work
}

// bands groups work with a known class by priority, best (lowest) first.
func (s *sched) bands() []band {
	by := map[int]*band{}
	for _, w := range s.works {
		if w.class == nil {
			continue
		}
		b := by[w.prio]
		if b == nil {
			b = &band{prio: w.prio, policy: w.class.Policy}
			by[w.prio] = b
		}
		b.works = append(b.works, w)
	}
	out := make([]band, 0, len(by))
	for _, b := range by {
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].prio < out[j].prio })
	return out
}

func (s *sched) runBand(b band) {
	if b.policy != FairShare {
		s.tracef("band %d (%s): %d works", b.prio, b.policy, len(b.works))
		npUse := map[string]int64{}
		for _, w := range s.works {
			if w.class != nil && !w.fair {
				npUse[w.class.Name+"\x00"+w.user] += int64(w.cur) * int64(w.order) * w.quantum
			}
		}
		s.placeNP(b.works, npUse)
		return
	}
	byPool := map[*pool][]*work{}
	for _, w := range b.works {
		byPool[w.pool] = append(byPool[w.pool], w)
	}
	// Leaves first: reverse pre-order visits every child before its parent.
	for i := len(s.pools) - 1; i >= 0; i-- {
		p := s.pools[i]
		jobs := byPool[p]
		if len(jobs) == 0 {
			continue
		}
		reach := append([]*pool{p}, p.squat()...)
		for _, w := range jobs {
			if msg := s.tooBig(w, reach); msg != "" {
				w.pending, w.pendCode = msg, s.noFitCode(w, reach)
				w.want = w.cur
				s.tracef("job %d: %s", w.w.ID, msg)
			}
		}
		capacity := p.leftover()
		s.poolCap[poolBand{p.name, b.prio}] = capacity
		gc := s.fairGPUCap(jobs, reach)
		used, gpuUsed := s.fairShare(jobs, capacity, p.quantum, gc)
		p.consume(used)
		if gpuUsed > 0 {
			if s.gpuFair == nil {
				s.gpuFair = map[*pool]int64{}
			}
			s.gpuFair[p] += gpuUsed
		}
		s.tracef("band %d pool %s: %d shares for %d jobs; fair share hands out %d", b.prio, p.name, capacity, len(jobs), used)
		for _, w := range jobs {
			if s.trace && (w.want > 0 || w.cur > 0) {
				s.tracef("job %d (%s/%s): has %d, wants %d (%s), fair share %d", w.w.ID, w.class.Name, w.user, w.cur, w.want, w.capNote, w.target)
			}
		}
	}
}

// fairByAge returns fair-share jobs by priority, then age. The list is the
// same for the whole cycle, so it is made once.
func (s *sched) fairByAge() []*work {
	if s.byAge != nil {
		return s.byAge
	}
	out := []*work{}
	for _, w := range s.works {
		if w.fair && w.class != nil {
			out = append(out, w)
		}
	}
	slices.SortStableFunc(out, func(a, b *work) int { return cmp.Compare(a.prio, b.prio) })
	s.byAge = out
	return out
}

// placeFair places one process of fair job w: held space first, then its own
// pool (resident), then sub-pools in search order (squatter).
func (s *sched) placeFair(w *work, why string) bool {
	n := s.heldNode(w)
	if n == nil {
		n = s.fitIn(w, w.pool)
	}
	if n == nil {
		for _, sp := range w.pool.squat() {
			if n = s.fitIn(w, sp); n != nil {
				why += ", squatting in pool " + sp.name
				break
			}
		}
	}
	if n == nil {
		return false
	}
	s.start(w, n, w.order, why)
	return true
}

// growFair places fair jobs up to their fair share, oldest first.
func (s *sched) growFair() {
	for _, w := range s.fairByAge() {
		if w.have() >= w.target || w.stops > 0 {
			continue
		}
		why := "fair share " + itoa(w.target)
		for w.have() < w.target && w.stops == 0 {
			if !s.placeFair(w, why) {
				if s.trace {
					s.tracef("job %d: %d of fair share %d placed; no node has %d free shares", w.w.ID, w.have(), w.target, w.order)
				}
				break
			}
		}
	}
}

// bonus gives left-over free blocks to fair jobs that can use their exact
// order, oldest first; space held for others is not touched.
func (s *sched) bonus() {
	for _, w := range s.fairByAge() {
		if w.stops > 0 || s.observed[w] || w.have() >= w.want || w.have() < w.target {
			continue
		}
		for w.have() < w.want {
			if !s.placeFair(w, "bonus: left-over space") {
				break
			}
		}
	}
}

// finishHolds keeps the holds that still protect space for someone.
func (s *sched) finishHolds() {
	for _, h := range s.holds {
		w := s.workByID(h.For)
		if h.Shares <= 0 || w == nil {
			continue
		}
		need := w.want
		if w.fair {
			need = w.target
		}
		if w.have() >= need {
			s.tracef("hold on %s for %d released: no longer needed", h.Node, h.For)
			continue
		}
		alive := false
		for _, v := range h.Victims {
			if s.procExists(v) {
				alive = true
			}
		}
		limit := 2*s.cfg.Preemption.KillWait.D() + s.cfg.Preemption.Interval.D() + s.cfg.Cycle.D()
		if (!alive && h.Since.Before(s.now)) || s.now.Sub(h.Since) > limit {
			s.tracef("hold on %s for %d released: space freed but unused", h.Node, h.For)
			continue
		}
		s.plan.Carry.Holds = append(s.plan.Carry.Holds, *h)
	}
	sort.Slice(s.plan.Carry.Holds, func(i, j int) bool {
		a, b := s.plan.Carry.Holds[i], s.plan.Carry.Holds[j]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		return a.For < b.For
	})
}

// sortPending sorts pending entries by work id (unique here) on small
// keys, then moves each entry once.
func sortPending(ps []Pending) {
	less := func(a, b Pending) int { return cmp.Compare(a.WorkID, b.WorkID) }
	if slices.IsSortedFunc(ps, less) {
		return
	}
	type key struct {
		id uint64
		i  int
	}
	keys := make([]key, len(ps))
	for i, p := range ps {
		keys[i] = key{p.WorkID, i}
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Compare(a.id, b.id) })
	sorted := make([]Pending, len(ps))
	for i, k := range keys {
		sorted[i] = ps[k.i]
	}
	copy(ps, sorted)
}

func (s *sched) finishPlan() {
	ids := make([]uint64, 0, len(s.shrinking))
	for id := range s.shrinking {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		s.plan.Shrinking = append(s.plan.Shrinking, *s.shrinking[id])
	}
	// Work ids and process ids are unique here, so any sort gives one order.
	sortPending(s.plan.Pending)
	slices.SortFunc(s.plan.Carry.Issued, func(a, b IssuedStop) int { return strings.Compare(a.ProcID, b.ProcID) })
}
