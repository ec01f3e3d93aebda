package rm

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/ducc-project/ducc/units"
)

// Victim categories, in the order they are taken.
const (
	catSquatter = iota // squatter on a node of the beneficiary's own pool
	catOver            // job over its fair share (within the round's budget)
	catDefrag          // process of a rich user, taken for a needy job
	catEvict           // fair-share process evicted for non-preemptable work
)

type victim struct {
	p   *proc
	cat int
}

// initialized tells whether a process has finished initializing.
func (p *proc) initialized() bool {
	return p.p.State == ProcRunning || !p.p.InitializedAt.IsZero()
}

// Victims are taken in this order (docs/scheduling.md, step 4): by
// category, richer users and larger jobs first for defragmentation, then
// not-yet-initialized before initialized, least invested, squatters before
// residents, youngest job. catCompare compares the leading keys (the
// category and, for defragmentation, the richer user and the larger job);
// baseLess breaks their ties.
func (s *sched) catCompare(a, b victim) int {
	if a.cat != b.cat {
		return a.cat - b.cat
	}
	if a.cat == catDefrag {
		ua, ub := *a.p.w.held, *b.p.w.held
		if ua != ub {
			return ub - ua
		}
		if a.p.w.cur != b.p.w.cur {
			return b.p.w.cur - a.p.w.cur
		}
	}
	return 0
}

// baseLess is the part of the victim order that does not depend on the
// victim's category: not yet initialized first, then least invested (started last),
// squatters before residents, youngest job, process id. None of these keys
// changes during a cycle, and they order any two processes.
func baseLess(a, b *proc) bool {
	ia, ib := a.initialized(), b.initialized()
	if ia != ib {
		return !ia
	}
	ta, tb := a.p.StartedAt, b.p.StartedAt
	if !ta.Equal(tb) {
		return ta.After(tb) // started later = less invested
	}
	sa, sb := a.squatter(), b.squatter()
	if sa != sb {
		return sa
	}
	if a.w != b.w {
		return b.w.rank < a.w.rank
	}
	return a.p.ID < b.p.ID
}

// victimOrder returns the processes on n that were live when the cycle
// began, in baseLess order. The list is built on first use and kept for the
// cycle; callers skip processes that have since been stopped or marked.
func (n *node) victimOrder() []*proc {
	if n.victims == nil {
		n.victims = make([]*proc, len(n.procs))
		copy(n.victims, n.procs)
		slices.SortFunc(n.victims, func(a, b *proc) int {
			if baseLess(a, b) {
				return -1
			}
			if baseLess(b, a) {
				return 1
			}
			return 0
		})
	}
	return n.victims
}

// protected tells whether min_runtime shields a process.
func (s *sched) protected(p *proc) bool {
	mr := s.cfg.Preemption.MinRuntime.D()
	return mr > 0 && p.initialized() && !p.p.StartedAt.IsZero() && s.now.Sub(p.p.StartedAt) < mr
}

// pickVictims chooses, on node n, the processes to stop so that one process
// of order fits for w; cat classifies a candidate (-1 = not eligible).
// It returns nil if n cannot be made to fit. The victims are appended to
// dst, which may be reused from an earlier call.
//
// Candidates are taken in victim order (catCompare, then baseLess). The
// node's processes are kept in baseLess order for the cycle (victimOrder),
// so only the category (and the defragmentation keys) are left to sort,
// stably, and only when more than one category is present. During a
// preemption round only the node's round candidates are looked at
// (roundCandidates): no other process can be a victim of the round.
func (s *sched) pickVictims(w *work, n *node, order int, exact bool, cat func(*proc) int, dst []victim) []victim {
	free := n.freeFor(s, w)
	gpuShort := w.gpu && !s.gpuFits(w, n)
	if free >= order && !exact && !gpuShort {
		return nil
	}
	if gpuShort && (exact || !s.gpuFreeable(w, n)) {
		return nil // no process that could be stopped here holds what w's GPUs need
	}
	list := n.victimOrder()
	if s.eligOn {
		list = s.roundCandidates(n)
	}
	cands := s.cands[:0]
	avail, mixed := 0, false
	for _, p := range list {
		if p.stopping || p.marked || (s.eligOn && !p.eligDefrag) {
			continue
		}
		c := cat(p)
		if c < 0 {
			if exact {
				return nil // a reservation needs every occupant gone
			}
			continue
		}
		if len(cands) > 0 && (c != cands[0].cat || c == catDefrag) {
			mixed = true
		}
		cands = append(cands, victim{p, c})
		avail += p.shares
	}
	s.cands = cands
	if free+avail < order {
		return nil
	}
	if mixed {
		slices.SortStableFunc(cands, s.catCompare)
	}
	out := dst[:0]
	if exact {
		return append(out, cands...)
	}
	if gpuShort {
		return s.gpuVictims(w, n, order, free, cands, out)
	}
	for _, v := range cands {
		if free >= order {
			break
		}
		if v.cat == catOver && overBudget(v, out) {
			continue
		}
		out = append(out, v)
		free += v.p.shares
	}
	if free < order {
		return nil
	}
	return out
}

// overBudget tells whether v, a process of a job over its share, would
// take more from its job than this round's budget allows, with the victims
// of out already taken.
func overBudget(v victim, out []victim) bool {
	taken := 0
	for _, o := range out {
		if o.p.w == v.p.w {
			taken++
		}
	}
	return v.p.w.budget-taken <= 0
}

func victimShares(vs []victim) int {
	t := 0
	for _, v := range vs {
		t += v.p.shares
	}
	return t
}

// bestVictims scans nodes for the cheapest set of victims (fewest shares
// stopped) making room for one process of w. bound[i], if given, is an upper
// bound on nodes[i]'s free space and bound is sorted in descending order, so
// the scan stops once no later node can do better. With tries > 0 it also
// stops after that many nodes offered a workable set (a bounded search).
//
// prune, if set, is a cheap test that rules a node out before its processes
// are classified. room, if set, bounds the shares cat could offer on a node,
// so a node whose free space and room together fall short is passed over
// without classifying its processes (pickVictims would find nothing there).
func (s *sched) bestVictims(w *work, nodes []*node, bound []int, order int, exact bool, cat func(*proc) int, tries int, prune func(*node) bool, room func(*node) int) (*node, []victim) {
	var bestN *node
	best, spare := s.vbuf[0][:0], s.vbuf[1][:0]
	defer func() { s.vbuf[0], s.vbuf[1] = best, spare }()
	bestCost, found, scanned := math.MaxInt, 0, 0
	for i, n := range nodes {
		if tries > 0 && (found >= tries || scanned >= maxScan) {
			break
		}
		if prune != nil && prune(n) {
			continue
		}
		scanned++
		if bound != nil && order-bound[i] >= bestCost {
			break
		}
		if !n.up() || n.shares < order || (exact && n.shares != order) || !inMachineList(w.w, n.n.Name) {
			continue
		}
		if exact && (n.held > 0 && n.freeFor(s, w) == n.free()) {
			continue // held for someone else
		}
		if !exact {
			free := n.freeFor(s, w)
			if order-free >= bestCost {
				continue // cannot beat the best found so far
			}
			if room != nil && free < order && free+room(n) < order {
				continue
			}
		}
		vs := s.pickVictims(w, n, order, exact, cat, spare)
		if len(vs) == 0 {
			continue
		}
		found++
		if c := victimShares(vs); c < bestCost {
			bestN, bestCost = n, c
			best, spare = vs, best
		} else {
			spare = vs
		}
	}
	if bestN == nil {
		return nil, nil
	}
	return bestN, slices.Clone(best)
}

// evictFor frees space for one process of non-preemptable work w by evicting
// fair-share processes of worse priority in w's own pool. It returns false if
// no node can be freed.
func (s *sched) evictFor(w *work) bool {
	exact := w.whole
	cat := func(p *proc) int {
		if p.w.fair && p.w.prio > w.prio {
			return catEvict
		}
		return -1
	}
	var n *node
	var vs []victim
	if w.asksGPU() {
		if n, vs = s.evictGPUFor(w, exact, cat); len(vs) == 0 {
			return false // nothing is evicted for nothing
		}
	} else {
		if n = s.cheapestEviction(w, exact); n == nil {
			return false
		}
		vs = s.pickVictims(w, n, w.order, exact, cat, nil)
	}
	text := fmt.Sprintf("evicted for %s %d (%s class %s, priority %d)", w.w.Kind, w.w.ID, w.class.Policy, w.class.Name, w.prio)
	s.issueStops(vs, Evicted, text, false)
	s.addHold(w, n, w.order, vs)
	if s.trace {
		s.tracef("hold %d shares on %s for %s %d until %s stop", w.order, n.n.Name, w.w.Kind, w.w.ID, joinIDs(victimIDs(vs)))
	}
	return true
}

// cheapestEviction returns the node of w's pool where evicting fair-share
// processes of worse priority frees room for one process of w at the least
// cost (shares stopped), the first by name on ties, or nil. It decides as
// bestVictims over the pool's nodes would, with the cost of a node counted
// in place (evictCost) instead of building its victim list.
//
// Without a machine_list and without space already held for w, a node's
// cost depends only on the pool, w's priority and order and whether w needs
// a whole machine, so one evictSet per such key keeps every node's cost for
// the rest of the cycle and is brought up to date from the nodes that
// changed since it last answered (sched.changed).
func (s *sched) cheapestEviction(w *work, exact bool) *node {
	if len(w.w.MachineList) > 0 || s.holdShares(w) > 0 {
		return s.scanEviction(w, exact)
	}
	k := evictKey{w.pool, w.prio, w.order, exact}
	es := s.evictSets[k]
	if es == nil {
		es = newEvictSet(len(w.pool.nodes))
		for i, n := range w.pool.nodes {
			es.set(i, s.evictNodeCost(k, n))
		}
		if s.evictSets == nil {
			s.evictSets = map[evictKey]*evictSet{}
		}
		s.evictSets[k] = es
	} else {
		for _, n := range s.changed[es.seen:] {
			if n.pool == w.pool {
				es.set(n.pos, s.evictNodeCost(k, n))
			}
		}
	}
	es.seen = len(s.changed)
	if i := es.min(); i >= 0 {
		return w.pool.nodes[i]
	}
	return nil
}

// scanEviction is cheapestEviction for work with a machine_list or held
// space: every node of the pool is looked at.
func (s *sched) scanEviction(w *work, exact bool) *node {
	order := w.order
	var bestN *node
	bestCost := math.MaxInt
	for _, n := range w.pool.nodes {
		if !n.up() || n.shares < order || (exact && n.shares != order) || !inMachineList(w.w, n.n.Name) {
			continue
		}
		if exact && (n.held > 0 && n.freeFor(s, w) == n.free()) {
			continue // held for someone else
		}
		free := n.freeFor(s, w)
		if !exact && order-free >= bestCost {
			continue // cannot beat the best found so far
		}
		if c := evictCost(n, free, order, w.prio, exact); c >= 0 && c < bestCost {
			bestN, bestCost = n, c
		}
	}
	return bestN
}

// evictKey says what the eviction cost of a node depends on for work
// without a machine_list or held space.
type evictKey struct {
	pool  *pool
	prio  int
	order int
	exact bool
}

// evictNodeCost is the eviction cost of n for work of key k, or -1.
func (s *sched) evictNodeCost(k evictKey, n *node) int {
	if !n.up() || n.shares < k.order || (k.exact && n.shares != k.order) {
		return -1
	}
	if k.exact && n.held > 0 {
		return -1 // held for someone else
	}
	return evictCost(n, n.free(), k.order, k.prio, k.exact)
}

// evictCost is the number of shares pickVictims would stop on n, with free
// shares free, to make room for one process of order by evicting fair-share
// processes of a priority worse than prio, or -1 if it finds no victims.
func evictCost(n *node, free, order, prio int, exact bool) int {
	if exact {
		avail, count := 0, 0
		for _, p := range n.procs {
			if p.stopping || p.marked {
				continue
			}
			if !p.w.fair || p.w.prio <= prio {
				return -1 // a reservation needs every occupant gone
			}
			avail += p.shares
			count++
		}
		if count == 0 || free+avail < order {
			return -1
		}
		return avail
	}
	if free >= order {
		return -1
	}
	cost := 0
	for _, p := range n.victimOrder() {
		if p.stopping || p.marked || !p.w.fair || p.w.prio <= prio {
			continue
		}
		cost += p.shares
		if free+cost >= order {
			return cost
		}
	}
	return -1
}

// evictSet keeps the eviction cost of every node of a pool in a segment
// tree whose root holds the cheapest node (the first by position on ties).
type evictSet struct {
	seen int     // entries of sched.changed already applied
	tree []int64 // cost<<32 | position; noEviction where none
	size int     // leaves
}

const noEviction = math.MaxInt64

func newEvictSet(n int) *evictSet {
	size := 1
	for size < n {
		size *= 2
	}
	es := &evictSet{tree: make([]int64, 2*size), size: size}
	for i := range es.tree {
		es.tree[i] = noEviction
	}
	return es
}

// set records the cost of the node at position i (-1: no eviction there).
func (es *evictSet) set(i, cost int) {
	v := int64(noEviction)
	if cost >= 0 {
		v = int64(cost)<<32 | int64(i)
	}
	j := es.size + i
	if es.tree[j] == v {
		return
	}
	es.tree[j] = v
	for j /= 2; j >= 1; j /= 2 {
		es.tree[j] = min(es.tree[2*j], es.tree[2*j+1])
	}
}

// min returns the position of the cheapest node, or -1.
func (es *evictSet) min() int {
	if es.tree[1] == noEviction {
		return -1
	}
	return int(es.tree[1] & (1<<32 - 1))
}

// issueStops stops victims (or records them as would-be stops when observe).
func (s *sched) issueStops(vs []victim, reason StopReason, text string, observe bool) {
	for _, v := range vs {
		p := v.p
		st := Stop{ProcID: p.p.ID, WorkID: p.w.w.ID, Node: p.p.Node, Reason: reason, Text: text,
			Grace: s.cfg.Preemption.KillWait.D()}
		p.marked = true
		p.dropElig()
		if p.n != nil {
			s.changed = append(s.changed, p.n)
		}
		if observe {
			s.plan.WouldPreempt = append(s.plan.WouldPreempt, st)
			s.tracef("observe_only: would %s %s of %s %d on %s: %s", reason, p.p.ID, p.w.w.Kind, p.w.w.ID, p.p.Node, text)
			continue
		}
		p.stopping = true
		p.w.cur--
		s.refreshElig(p.w)
		p.w.stops++
		s.plan.Stops = append(s.plan.Stops, st)
		s.plan.Carry.Issued = append(s.plan.Carry.Issued, IssuedStop{ProcID: p.p.ID, WorkID: p.w.w.ID, At: s.now})
		s.shrinkNote(p, text)
		if s.trace {
			s.tracef("stop %s of %s %d on %s (%s): %s", p.p.ID, p.w.w.Kind, p.w.w.ID, p.p.Node, reason, text)
		}
	}
}

func (s *sched) shrinkNote(p *proc, text string) {
	sh := s.shrinking[p.w.w.ID]
	if sh == nil {
		sh = &Shrinking{WorkID: p.w.w.ID, Reason: text}
		s.shrinking[p.w.w.ID] = sh
	}
	sh.Procs = append(sh.Procs, p.p.ID)
}

func (s *sched) addHold(w *work, n *node, shares int, vs []victim) {
	var h *Hold
	for _, o := range n.holds {
		if o.For == w.w.ID && o.Since.Equal(s.now) {
			h = o
			h.Shares += shares
		}
	}
	if h == nil {
		h = &Hold{Node: n.n.Name, Shares: shares, For: w.w.ID, Since: s.now}
		s.holds = append(s.holds, h)
		n.holds = append(n.holds, h)
		w.holds = append(w.holds, h)
	}
	for _, v := range vs {
		h.Victims = append(h.Victims, v.p.p.ID)
	}
	n.held += shares
	s.changed = append(s.changed, n)
	if n.pool.index != nil {
		n.pool.index.update(n)
	}
}

// traceNewHolds reports the holds made in this cycle.
func (s *sched) traceNewHolds() {
	if !s.trace {
		return
	}
	for _, h := range s.holds {
		if h.Since.Equal(s.now) {
			s.tracef("hold %d shares on %s for work %d until %s stop", h.Shares, h.Node, h.For, joinIDs(h.Victims))
		}
	}
}

// computeBudgets sets, for every fair job over its target, how many
// processes this round may take back from it (deadzone, natural
// termination factor).
func (s *sched) computeBudgets() {
	p := s.cfg.Preemption
	for _, w := range s.works {
		if !w.fair || w.cur <= w.target {
			continue
		}
		if float64(w.cur) <= float64(w.target)*(1+float64(p.Deadzone)) {
			if s.trace {
				s.tracef("job %d holds %d processes, within the %.0f%% deadzone of its fair share %d: not preempted", w.w.ID, w.cur, 100*float64(p.Deadzone), w.target)
			}
			continue
		}
		excess := w.cur - w.target
		b := int(math.Ceil(float64(excess) * float64(p.NaturalTerminationFactor)))
		w.budget = max(b, 1)
		s.anyOver = true
	}
}

// needy tells whether fair job w is needy (docs/scheduling.md, step 5).
func (s *sched) needy(w *work) bool {
	return w.fair && w.have() < w.target && w.have() < s.cfg.FragmentationThreshold
}

// maxMisses bounds the beneficiaries in a row for whom no victims are found
// before a round gives up, which keeps a round's cost bounded on big clusters.
const maxMisses = 32

// victimTries bounds how many workable nodes a preemption compares before
// taking the cheapest (nodes are visited most-free first).
const victimTries = 8

// maxScan bounds how many nodes one preemption search classifies.
const maxScan = 256

// Per-node candidate shares for a preemption round. eligible tells whether
// p could be taken for some beneficiary in the round's first pass: a
// squatter, or a process of a job over its share, that is not stopping, not
// yet chosen, not protected and whose job neither starts processes nor
// gains space in this cycle. eligibleDefrag adds the processes the
// defragmentation pass may take: those of jobs that are not needy and hold
// more than one process. Every one of these conditions only turns false
// during a round, so node.elig and node.eligDefrag, the shares of eligible
// processes on a node, are kept up to date by taking processes out
// (dropElig) when they are marked, and by looking at a job's processes
// again (refreshElig) when the job becomes a gainer, loses budget or loses a
// process. A search passes over nodes whose free space and candidate shares
// together fall short (bestVictims' room).
func (s *sched) eligible(p *proc) bool {
	v := p.w
	return !p.stopping && !p.marked && v.fair && v.starts == 0 && !v.gainer && !s.protected(p) && (v.budget > 0 || p.squatter())
}

func (s *sched) eligibleDefrag(p *proc) bool {
	v := p.w
	return !p.stopping && !p.marked && v.fair && v.starts == 0 && !v.gainer && !s.protected(p) &&
		(v.budget > 0 || p.squatter() || (!s.needy(v) && v.have() > 1))
}

// initElig computes node.elig and node.eligDefrag at the start of a
// preemption round.
func (s *sched) initElig() {
	s.eligOn = true
	nprocs := 0
	for _, n := range s.nodes {
		nprocs += len(n.procs)
	}
	s.candSlab = make([]*proc, 0, nprocs)
	for _, n := range s.nodes {
		if !n.up() {
			continue // never searched; their processes are in no live list
		}
		for _, p := range n.procs {
			if s.eligible(p) {
				p.elig = true
				n.elig += p.shares
			}
			if s.eligibleDefrag(p) {
				p.eligDefrag = true
				n.eligDefrag += p.shares
			}
		}
	}
}

// dropElig takes p out of its node's candidate shares.
func (p *proc) dropElig() {
	if p.elig {
		p.elig = false
		p.n.elig -= p.shares
	}
	if p.eligDefrag {
		p.eligDefrag = false
		p.n.eligDefrag -= p.shares
	}
}

// roundCandidates returns the processes of n, in victim order, that could
// still be taken in this preemption round (eligibleDefrag, which includes
// eligible), made on first use: a process that is no candidate then never
// becomes one later in the round. Callers still skip processes that have
// dropped out since (their eligDefrag flag is cleared).
func (s *sched) roundCandidates(n *node) []*proc {
	if !n.candsMade {
		start := len(s.candSlab)
		for _, p := range n.victimOrder() {
			if p.eligDefrag {
				s.candSlab = append(s.candSlab, p)
			}
		}
		n.cands = s.candSlab[start:len(s.candSlab):len(s.candSlab)]
		n.candsMade = true
	}
	return n.cands
}

// refreshElig takes the processes of v that are no longer candidates out
// of their nodes' candidate shares.
func (s *sched) refreshElig(v *work) {
	if !s.eligOn {
		return
	}
	for _, p := range v.live {
		if p.elig && !s.eligible(p) {
			p.elig = false
			p.n.elig -= p.shares
		}
		if p.eligDefrag && !s.eligibleDefrag(p) {
			p.eligDefrag = false
			p.n.eligDefrag -= p.shares
		}
	}
}

// eligRoom bounds what the first pass's victim categories (squatters, jobs
// over their share) can offer on n; defragRoom adds the defragmentation
// pass's.
func eligRoom(n *node) int   { return n.elig }
func defragRoom(n *node) int { return n.eligDefrag }

// overPrune rules out a node with no process over its share or squatting;
// such a node stays ruled out for the round, as budgets only shrink.
func overPrune(n *node) bool {
	if n.noOver {
		return true
	}
	if n.elig > 0 {
		return false // an eligible process is one over its share or squatting
	}
	for _, p := range n.procs {
		if !p.stopping && !p.marked && p.w.fair && (p.w.budget > 0 || p.squatter()) {
			return false
		}
	}
	n.noOver = true
	return true
}

// preemptRound runs one preemption round for fair jobs below their share
// that placement could not satisfy: it picks the beneficiaries, waits out
// the interval since the last round, then serves the beneficiaries in
// order (needy first, best priority, oldest) until the round's budget is
// used or victims run out.
func (s *sched) preemptRound() {
	bens := s.preemptBeneficiaries()
	if len(bens) == 0 || s.preemptionWaits(len(bens)) {
		return
	}
	r := s.newRound(bens)
	for _, b := range r.bens {
		if !r.serve(b) {
			break
		}
	}
	s.traceNewHolds()
	if r.issued {
		s.plan.Carry.LastPreemption = s.now
	} else {
		s.plan.Carry.LastPreemption = s.in.Carry.LastPreemption
	}
}

// preemptBeneficiaries returns the fair jobs below their share with no
// stop under way for them, in the cycle's work order.
func (s *sched) preemptBeneficiaries() []*work {
	var bens []*work
	for _, w := range s.works {
		if w.fair && w.class != nil && w.have() < w.target && w.stops == 0 {
			bens = append(bens, w)
		}
	}
	return bens
}

// preemptionWaits tells whether the last round was less than the
// preemption interval ago; then the round is skipped, the last round's
// time carried on, and the wait recorded for the pending reasons.
func (s *sched) preemptionWaits(nbens int) bool {
	pc := s.cfg.Preemption
	last := s.in.Carry.LastPreemption
	if last.IsZero() || s.now.Sub(last) >= pc.Interval.D() {
		return false
	}
	s.plan.Carry.LastPreemption = last
	s.tracef("preemption: %d job(s) below fair share; next round in %s", nbens, pc.Interval.D()-s.now.Sub(last))
	s.roundWait = pc.Interval.D() - s.now.Sub(last)
	return true
}

// round is the state of one preemption round: its beneficiaries in the
// order they are served, its budget and what it has used, and the nodes
// that may hold victims.
type round struct {
	s      *sched
	pc     Preemption
	bens   []*work
	budget int  // shares the round may stop (max_per_round of the cluster)
	used   int  // shares stopped so far
	issued bool // a stop was issued
	misses int  // beneficiaries in a row that found no victims

	// Per pool: overNodes hold processes of jobs over their share or
	// squatters; fairNodes hold any fair-share process (for
	// defragmentation); squatters tells whether squatters live there.
	overNodes, fairNodes map[*pool][]*node
	squatters            map[*pool]bool
	byFree               map[*pool][2]*freeOrder
	// failedAt[pool, priority] is the smallest order for which no victims
	// were found among jobs over their share; victims only get scarcer in a
	// round, so larger orders of that pool and priority need not look again.
	failedAt map[poolPrio]int
}

// freeOrder is a pool's candidate nodes for one pass, most free first,
// with the free space each had when the round began.
type freeOrder struct {
	nodes []*node
	bound []int
	start int // nodes before start are ruled out for pass 0
}

type poolPrio struct {
	p    *pool
	prio int
}

// newRound starts a preemption round: it computes the budgets of the jobs
// over their share and the candidate shares, links each work to its
// user's total, sizes the round's budget, orders the beneficiaries and
// finds the nodes holding possible victims.
func (s *sched) newRound(bens []*work) *round {
	s.computeBudgets()
	s.initElig()
	s.linkUserHeld()
	r := &round{
		s:        s,
		pc:       s.cfg.Preemption,
		bens:     bens,
		byFree:   map[*pool][2]*freeOrder{},
		failedAt: map[poolPrio]int{},
	}
	r.budget = int(float64(r.pc.MaxPerRound) * float64(s.upShares()))
	s.sortBeneficiaries(bens)
	r.findVictimNodes()
	return r
}

// linkUserHeld points each work at its user's total of fair shares held,
// which the victim categories compare.
func (s *sched) linkUserHeld() {
	for _, w := range s.works {
		h := s.userHeld[w.user]
		if h == nil {
			h = new(int)
			s.userHeld[w.user] = h
		}
		if w.fair {
			*h += w.cur * w.order
		}
		w.held = h
	}
}

// upShares is the number of shares on nodes that are up.
func (s *sched) upShares() int {
	total := 0
	for _, n := range s.nodes {
		if n.up() {
			total += n.shares
		}
	}
	return total
}

// sortBeneficiaries orders the beneficiaries as they are served: needy
// jobs first, then by priority, then by rank (oldest first).
func (s *sched) sortBeneficiaries(bens []*work) {
	sort.SliceStable(bens, func(i, j int) bool {
		ni, nj := s.needy(bens[i]), s.needy(bens[j])
		if ni != nj {
			return ni
		}
		if bens[i].prio != bens[j].prio {
			return bens[i].prio < bens[j].prio
		}
		return bens[i].rank < bens[j].rank
	})
}

// findVictimNodes records, per pool, the up nodes holding processes of
// jobs over their share or squatters, those holding any fair-share
// process, and whether squatters live in the pool.
func (r *round) findVictimNodes() {
	r.overNodes, r.fairNodes = map[*pool][]*node{}, map[*pool][]*node{}
	r.squatters = map[*pool]bool{}
	for _, n := range r.s.nodes {
		if !n.up() {
			continue
		}
		fair, over := false, false
		for _, p := range n.procs {
			if !p.w.fair || p.stopping {
				continue
			}
			fair = true
			if p.squatter() {
				r.squatters[n.pool] = true
				over = true
			}
			if p.w.budget > 0 {
				over = true
			}
		}
		if fair {
			r.fairNodes[n.pool] = append(r.fairNodes[n.pool], n)
		}
		if over {
			r.overNodes[n.pool] = append(r.overNodes[n.pool], n)
		}
	}
}

// candidates returns the nodes where b may find victims in pass 0 (jobs
// over their share, squatters) or pass 1 (defragmentation), most free
// first, with bounds on their free space where they are safe. Free space
// only shrinks during a round (holds grow, stopping processes still
// occupy), so the free space seen on first use bounds it for the whole
// round.
func (r *round) candidates(b *work, pass int) ([]*node, []int) {
	cands := r.byFree[b.pool]
	c := cands[pass]
	if c == nil {
		c = &freeOrder{}
		src := r.overNodes
		if pass == 1 {
			src = r.fairNodes
		}
		for _, p := range append([]*pool{b.pool}, b.pool.squat()...) {
			c.nodes = append(c.nodes, src[p]...)
		}
		sort.SliceStable(c.nodes, func(i, j int) bool { return c.nodes[i].free() > c.nodes[j].free() })
		for _, n := range c.nodes {
			c.bound = append(c.bound, n.free())
		}
		cands[pass] = c
		r.byFree[b.pool] = cands
	}
	if pass == 0 {
		for c.start < len(c.nodes) && c.nodes[c.start].noOver {
			c.start++
		}
	}
	if len(b.holds) > 0 {
		return c.nodes[c.start:], nil // b's own holds add to its free space: no safe bound
	}
	return c.nodes[c.start:], c.bound[c.start:]
}

// serve takes victims for beneficiary b, one process of b at a time, until
// b has what it is short of, the round's budget is used or no victims are
// found. It returns false when the round ends (budget used earlier, or too
// many beneficiaries in a row found no victims).
func (r *round) serve(b *work) bool {
	s := r.s
	if s.budgetHit {
		return false
	}
	if b.stops > 0 {
		return true
	}
	if r.misses >= maxMisses {
		s.tracef("preemption: no victims for %d jobs in a row; the rest wait for the next round", maxMisses)
		return false
	}
	if !s.anyOver && !r.squatters[b.pool] && !s.needy(b) {
		return true // nobody is over their share and no squatters to move
	}
	// Defragmentation gives a needy job with nothing under way one
	// process per round; other shortfalls wait for jobs over their share.
	defrag := s.needy(b) && s.holdShares(b) == 0
	want := b.target - b.have() - s.holdShares(b)/b.order
	var last *node
	for ; want > 0; want-- {
		if r.issued && r.used >= r.budget {
			s.tracef("preemption: round budget of %d shares (max_per_round %.0f%%) used", r.budget, 100*float64(r.pc.MaxPerRound))
			s.budgetHit = true
			break
		}
		n, vs := r.findVictims(b, last, defrag)
		defrag = false
		if n == nil {
			r.misses++
			break
		}
		r.misses, last = 0, n
		b.gainer = true
		s.refreshElig(b)
		r.issued = true
		r.stopVictims(b, n, vs)
		if r.pc.ObserveOnly {
			s.observed[b] = true
			continue
		}
		s.addHold(b, n, b.order, vs)
	}
	return true
}

// victimCategory classifies a process as a victim for beneficiary b (-1:
// not one): a squatter on a node of b's pool, a process of a job over its
// share, or, when defrag is set, a process of a richer user's job with more
// than one process (defragmentation for a needy b).
func (r *round) victimCategory(b *work, defrag bool) func(*proc) int {
	s := r.s
	return func(p *proc) int {
		v := p.w
		if !v.fair || v == b || v.starts > 0 || v.gainer || v.prio < b.prio || s.protected(p) {
			return -1
		}
		if p.squatter() && p.n.pool == b.pool && v.pool != b.pool {
			return catSquatter
		}
		if defrag && !s.needy(v) && *v.held > *b.held && v.have() > 1 {
			return catDefrag
		}
		if v.budget > 0 {
			return catOver
		}
		return -1
	}
}

// findVictims finds the node and the victims that make room for one
// process of b, or a nil node: first on last, the node of b's previous
// process, if it still gives exactly the missing space (this saves a
// scan); then the cheapest among the nodes with squatters or jobs over
// their share (pass 0), unless that already failed this round for b's pool
// and priority at an order no larger; then, if defrag allows it, the
// cheapest by defragmentation (pass 1).
func (r *round) findVictims(b *work, last *node, defrag bool) (*node, []victim) {
	s := r.s
	cat := r.victimCategory(b, false)
	if last != nil {
		if v := s.pickVictims(b, last, b.order, false, cat, nil); len(v) > 0 && victimShares(v) <= b.order-max(last.freeFor(s, b), 0) {
			return last, v
		}
	}
	key := poolPrio{b.pool, b.prio}
	if f, ok := r.failedAt[key]; !ok || b.order < f {
		nodes, bound := r.candidates(b, 0)
		n, vs := s.bestVictims(b, nodes, bound, b.order, false, cat, victimTries, overPrune, eligRoom)
		if n != nil {
			return n, vs
		}
		if len(b.w.MachineList) == 0 && !b.asksGPU() {
			r.failedAt[key] = b.order
		}
	}
	if !defrag {
		return nil, nil
	}
	nodes, bound := r.candidates(b, 1)
	return s.bestVictims(b, nodes, bound, b.order, false, r.victimCategory(b, true), victimTries, nil, defragRoom)
}

// stopVictims issues the stops of the victims taken on n for b, each with
// the reason its category gives, and counts them against the round's
// budget; a job over its share loses one process of its budget per victim.
func (r *round) stopVictims(b *work, n *node, vs []victim) {
	s := r.s
	for _, v := range vs {
		r.used += v.p.shares
		reason, text := Preempted, ""
		switch v.cat {
		case catSquatter:
			reason = Evicted
			text = fmt.Sprintf("squatter in pool %s: resident job %d needs the space", n.pool.name, b.w.ID)
		case catOver:
			v.p.w.budget--
			s.refreshElig(v.p.w)
			text = fmt.Sprintf("over fair share: class %s fair share is %d processes, job holds %d; space goes to job %d",
				v.p.w.class.Name, v.p.w.target, v.p.w.cur, b.w.ID)
		case catDefrag:
			reason = Defragmentation
			text = fmt.Sprintf("defragmentation: needy job %d needs %s on one node", b.w.ID, units.FormatSize(int64(b.order)*b.quantum))
		}
		s.issueStops([]victim{v}, reason, text, r.pc.ObserveOnly)
	}
}

func victimIDs(vs []victim) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.p.p.ID
	}
	return out
}
