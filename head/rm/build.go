package rm

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
)

// pool is a nodepool in the cycle's working state.
type pool struct {
	name     string
	parent   *pool
	children []*pool // by search_order, then name
	quantum  int64
	nodes    []*node // own nodes, by name
	avail    int     // shares of own nodes left for fair-share work of later bands
	maxNode  int     // largest Up node's shares, own nodes only
	index    *fitIndex
	gpuHist  []int   // Up nodes by free GPU devices (fitWhole), made on first use
	partly   []*node // nodes with slices on a device (fitSlice), in the order they got them
	minDev   []int64 // the pool's device sizes, ascending (fitSlice), made on first use
}

// squat returns the sub-pools fair-share work of p may spill into, in search order.
func (p *pool) squat() []*pool {
	var out []*pool
	for _, c := range p.children {
		out = append(out, c)
		out = append(out, c.squat()...)
	}
	return out
}

// leftover is what p and its sub-pools still have for fair-share work.
func (p *pool) leftover() int {
	n := p.avail
	for _, c := range p.children {
		n += c.leftover()
	}
	return n
}

// consume takes n shares from p, then from its sub-pools in search order.
func (p *pool) consume(n int) {
	t := min(n, p.avail)
	p.avail -= t
	n -= t
	for _, c := range p.children {
		if n <= 0 {
			return
		}
		l := c.leftover()
		t := min(n, l)
		c.consume(t)
		n -= t
	}
}

// node is a machine in the cycle's working state.
type node struct {
	idx        int
	pos        int // position in pool.nodes
	n          *Node
	pool       *pool
	shares     int
	used       int // shares occupied by every process on it, stopping ones and planned starts included
	held       int // shares held for particular work (Carry holds)
	procs      []*proc
	svc        map[string]int // instances per service id
	holds      []*Hold        // holds on this node
	noOver     bool           // no process here is over its share or squatting (this round)
	victims    []*proc        // procs in baseLess order, built on first use (victimOrder)
	elig       int            // shares of eligible processes in a preemption round (see eligible)
	eligDefrag int            // shares of processes eligible for defragmentation (see eligibleDefrag)
	cands      []*proc        // round candidates in victim order (roundCandidates)
	candsMade  bool
}

func (n *node) up() bool { return n.n.State == NodeUp }

// free is the space anyone may use now.
func (n *node) free() int { return n.shares - n.used - n.held }

// freeFor is the space w may use now: general free plus w's holds here.
func (n *node) freeFor(s *sched, w *work) int {
	f := n.shares - n.used - n.held
	for _, h := range n.holds {
		if h.For == w.w.ID {
			f += h.Shares
		}
	}
	return f
}

type proc struct {
	p          *Proc
	w          *work
	n          *node // nil if the node is unknown
	shares     int
	stopping   bool
	marked     bool // chosen as a victim in this cycle
	elig       bool // counted in n.elig (see eligible)
	eligDefrag bool // counted in n.eligDefrag (see eligibleDefrag)
}

func (p *proc) squatter() bool { return p.n != nil && p.n.pool != p.w.pool }

// work is a Work in the cycle's working state.
type work struct {
	w        *Work
	id       uint64 // w.ID, kept beside what the cycle's passes read (w lies elsewhere in memory)
	anyNode  bool   // w has no machine list and no service: any node with room will do (fitIn)
	class    *Class
	pool     *pool
	quantum  int64
	order    int
	fair     bool
	whole    bool // RESERVE class: each process (or hold) is a whole machine of exactly order shares
	gpu      bool // w asks GPUs per process (asksGPU)
	prio     int
	live     []*proc // counted processes (not stopping, not written off)
	cur      int     // len(live) less processes stopped in this plan
	want     int
	target   int
	starts   int
	stops    int
	pending  string
	pendCode WaitCode
	capNote  string
	capCode  WaitCode      // what held want below capMax (Held* codes)
	capMax   int           // what the job could use: items over pipelines, or process_deployments_max
	capArg   int           // the cap's number (initialization_cap, initialization failures)
	horizon  time.Duration // the prediction horizon, for HeldPrediction
	user     string
	holds    []*Hold // space held for this work
	budget   int     // processes a preemption round may still take (over fair share)
	gainer   bool    // got space in this preemption round
	rank     int     // position in sched.works (submit order)
	held     *int    // fair shares w's user holds, set by the preemption round
}

func (w *work) have() int { return w.cur + w.starts }

// sched is the working state of one cycle.
type sched struct {
	in      *Input
	cfg     *Config
	now     time.Time
	pools   []*pool // pre-order
	poolBy  map[string]*pool
	nodes   []*node // by name
	nodeBy  map[string]*node
	works   []*work        // by submit time, id
	workBy  map[uint64]int // index in Input.Work of each work id's first listing (see work)
	byInput []*work        // the work of each Input.Work index, nil for works listed twice
	issued  map[string]IssuedStop
	holds   []*Hold
	plan    Plan
	trace   bool
	classes map[string]*Class
	// fair-share results per class (shares) for reasons and summaries
	classShare map[string]int
	classUsers map[string]int
	userShare  map[classUser]int
	poolCap    map[poolBand]int // capacity seen by the fair computation per pool and band
	cands      []victim         // scratch space of pickVictims
	vbuf       [2][]victim      // scratch space of bestVictims
	byAge      []*work          // fairByAge, once made
	eligOn     bool             // candidate shares are kept (a preemption round is on)
	candSlab   []*proc          // backing store of node.cands
	sizes      map[int64]string // formatted sizes (sz)
	waitText   string           // the note on the next preemption round (noteText)
	changed    []*node          // nodes whose space or processes changed in this cycle, in order
	evictSets  map[evictKey]*evictSet
	mem        *buildMem              // where build lays out nodes, works and processes
	gpuBuf     []int                  // scratch space of nodeGPU.pick
	gpuNodes   []nodeGPU              // the GPU state of each node, by node index; nil when no node has GPUs
	gpuFair    map[*pool]int64        // GPU bytes fair-share bands handed out per pool (fairGPU)
	gpuNoFit   map[gpuFitKey]bool     // GPU requests no node of a pool can take for the rest of the cycle (fitGPU)
	gpuTaken   int                    // devices taken in this cycle so far (assignGPUs), for gpuWhere
	gpuWhere   map[*pool]gpuWhereText // gpuFreeWhere's sentences
	schedState
}

func (s *sched) tracef(format string, a ...any) {
	if s.trace {
		s.plan.Trace = append(s.plan.Trace, fmt.Sprintf(format, a...))
	}
}

// build lays the cycle's input out for scheduling: the nodepool tree, the
// classes, the nodes, the issued stops, the works in submit order with
// their processes, each node's live processes and the issued stops carried
// on.
func (s *sched) build() {
	s.poolBy = map[string]*pool{}
	s.addPools(s.cfg.Nodepools, nil, int64(s.cfg.ShareQuantum))
	s.classes = map[string]*Class{}
	for i := range s.cfg.Classes {
		s.classes[s.cfg.Classes[i].Name] = &s.cfg.Classes[i]
	}
	s.buildNodes()
	s.issued = map[string]IssuedStop{}
	for _, is := range s.in.Carry.Issued {
		s.issued[is.ProcID] = is
	}
	keys := s.orderWorks()
	made := s.layoutWorks(keys)
	s.listNodeProcs(made)
	// Issued stops are kept while their process exists.
	for _, id := range sortedKeys(s.issued) {
		if s.procExists(id) {
			s.plan.Carry.Issued = append(s.plan.Carry.Issued, s.issued[id])
		}
	}
}

// addPools adds the nodepools ps under parent (nil: the top level) to the
// tree, in pre-order, and returns them. Child pools are taken in search
// order, then by name; a top-level pool has its own share quantum if it
// sets one (else the configured one), and a child pool its parent's, q.
func (s *sched) addPools(ps []Nodepool, parent *pool, q int64) []*pool {
	idx := make([]int, len(ps))
	for i := range idx {
		idx[i] = i
	}
	if parent != nil {
		sort.SliceStable(idx, func(a, b int) bool {
			pa, pb := ps[idx[a]], ps[idx[b]]
			if pa.SearchOrder != pb.SearchOrder {
				return pa.SearchOrder < pb.SearchOrder
			}
			return pa.Name < pb.Name
		})
	}
	var out []*pool
	for _, i := range idx {
		np := &ps[i]
		pq := q
		if parent == nil {
			pq = int64(s.cfg.ShareQuantum)
			if np.ShareQuantum > 0 {
				pq = int64(np.ShareQuantum)
			}
		}
		p := &pool{name: np.Name, parent: parent, quantum: pq}
		s.poolBy[p.name] = p
		s.pools = append(s.pools, p)
		p.children = s.addPools(np.Pools, p, pq)
		out = append(out, p)
	}
	return out
}

// buildNodes lays out the nodes by name, the first of a name listed twice
// winning, each in its pool with its shares; a pool counts the shares of
// its nodes that are up and its largest such node.
func (s *sched) buildNodes() {
	in, m := s.in, s.mem
	m.nodeBy = reuseMap(m.nodeBy, len(in.Nodes))
	s.nodeBy = m.nodeBy
	m.nodes = grow(m.nodes, len(in.Nodes))[:0]
	s.nodes = m.nodes
	m.nodeSlab = grow(m.nodeSlab, len(in.Nodes))
	nodeSlab := m.nodeSlab
	for i := range in.Nodes {
		n := &in.Nodes[i]
		if _, dup := s.nodeBy[n.Name]; dup {
			s.tracef("node %s listed twice; using the first", n.Name)
			nodeSlab[i] = node{} // nothing of an earlier cycle stays
			continue
		}
		nd := &nodeSlab[i]
		*nd = node{n: n, pool: s.resolvePool(n)}
		nd.shares = int(max(n.MemSchedulable, 0) / nd.pool.quantum)
		s.nodeBy[n.Name] = nd
		s.nodes = append(s.nodes, nd)
	}
	// Names are unique here, so any sort gives one order.
	slices.SortFunc(s.nodes, func(a, b *node) int { return strings.Compare(a.n.Name, b.n.Name) })
	for i, nd := range s.nodes {
		nd.idx = i
		nd.pool.nodes = append(nd.pool.nodes, nd)
		if nd.up() {
			nd.pool.avail += nd.shares
			nd.pool.maxNode = max(nd.pool.maxNode, nd.shares)
		}
	}
	s.layoutGPUs()
}

// orderWorks returns the keys of the works in submit order (submit time,
// then id), the first of works listed twice winning, and indexes the works
// by id. The same works as in the last cycle keep the last cycle's order
// without a sort.
func (s *sched) orderWorks() []workKey {
	in, m := s.in, s.mem
	m.workBy = reuseMap(m.workBy, len(in.Work))
	s.workBy = m.workBy
	m.byInput = grow(m.byInput, len(in.Work))
	s.byInput = m.byInput
	clear(s.byInput)
	keys := grow(m.keys, len(in.Work))[:0]
	for i := range in.Work {
		w := &in.Work[i]
		if _, dup := s.workBy[w.ID]; dup {
			s.tracef("work %d listed twice; using the first", w.ID)
			continue
		}
		s.workBy[w.ID] = i
		keys = append(keys, newWorkKey(w, i))
	}
	m.keys = keys
	if slices.Equal(keys, m.lastIn) {
		return m.lastSorted // the same works as in the last cycle, so the same order
	}
	m.lastIn = append(m.lastIn[:0], keys...)
	sortWorkKeys(keys)
	m.lastSorted = append(m.lastSorted[:0], keys...)
	return keys
}

// layoutWorks lays the works out in the order of keys, each followed by its
// processes (its Work is then at hand), with one allocation for all works
// and one for all processes, and returns the number of processes made.
// The processes are laid out once without looking for duplicate ids while
// the kept process ids are brought up to date; only a snapshot with
// duplicates (rare) has them laid out again, the first process in submit
// order keeping the id.
func (s *sched) layoutWorks(keys []workKey) int {
	in, m := s.in, s.mem
	nprocs := 0
	for i := range in.Work {
		nprocs += len(in.Work[i].Procs)
	}
	m.procSlab = grow(m.procSlab, nprocs)
	m.keepReasons(len(keys))
	m.works = grow(m.works, len(keys))
	s.works = m.works
	m.workSlab = grow(m.workSlab, len(keys))
	workSlab := m.workSlab
	m.pids.start(keys, nprocs)
	m.pids.sameNodes(in.Nodes)
	ntrace := len(s.plan.Trace)
	l := s.startLayout(nprocs, nil)
	for rank, k := range keys {
		w := &in.Work[k.i]
		wk := &workSlab[rank]
		*wk = work{w: w, id: w.ID, anyNode: len(w.MachineList) == 0 && w.ServiceID == "" && w.GPUs == 0 && w.GPUMemory == 0, user: w.User, rank: rank,
			gpu: w.GPUs > 0 || w.GPUMemory > 0}
		s.byInput[k.i] = wk
		s.works[rank] = wk
		s.classify(wk)
		m.pids.next(rank, w.Procs)
		s.layoutWork(wk, &l)
	}
	m.pids.finish()
	if m.pids.dups > 0 {
		s.plan.Trace = s.plan.Trace[:ntrace]
		for _, n := range s.nodes {
			n.used, n.svc = 0, nil
			s.resetGPUs(n)
		}
		l = s.startLayout(nprocs, make(map[string]bool, nprocs))
		for _, wk := range s.works {
			s.layoutWork(wk, &l)
		}
	}
	return l.made
}

// classify gives wk what its class decides, if the class exists: its pool
// (the class's nodepool, else the first), share quantum, policy, priority,
// and its order, the shares of one process (its memory, else the default
// memory, rounded up to whole shares, at least one).
func (s *sched) classify(wk *work) {
	cl, ok := s.classes[wk.w.Class]
	if !ok {
		return
	}
	wk.class = cl
	wk.pool = s.poolBy[cl.Nodepool]
	if wk.pool == nil {
		wk.pool = s.pools[0]
	}
	wk.quantum = wk.pool.quantum
	wk.fair = cl.Policy == FairShare
	wk.whole = cl.Policy == Reserve
	wk.prio = cl.Priority
	mem := wk.w.Memory
	if mem <= 0 {
		mem = int64(s.cfg.DefaultMemory)
	}
	wk.order = int((mem + wk.quantum - 1) / wk.quantum)
	if wk.order < 1 {
		wk.order = 1
	}
}

// listNodeProcs gives each node its processes that are not stopping, in
// the order they were made, carved out of one slab (the first made
// processes of the snapshot's layout).
func (s *sched) listNodeProcs(made int) {
	m := s.mem
	onNode := m.onNode
	m.procLists = grow(m.procLists, made)
	procLists := m.procLists
	for _, n := range s.nodes {
		k := onNode[n.idx]
		n.procs = procLists[:0:k]
		procLists = procLists[k:]
	}
	for i := range m.procSlab[:made] {
		if pr := &m.procSlab[i]; pr.n != nil && !pr.stopping {
			pr.n.procs = append(pr.n.procs, pr)
		}
	}
}

// procLayout is where layoutWork carves the next work's live list from
// and makes its next process in.
type procLayout struct {
	live []*proc         // what is left of the live lists' slab
	made int             // processes made so far (in buildMem.procSlab)
	seen map[string]bool // if not nil, the ids made so far: a process with one of them is ignored
}

// startLayout readies the slabs for laying out nprocs processes. Each
// work's live list and each node's process list are carved out of one
// slab each; a node's list is filled in a second pass, once its length is
// known (buildMem.onNode), in the order the processes were made.
func (s *sched) startLayout(nprocs int, seen map[string]bool) procLayout {
	m := s.mem
	m.liveSlab = grow(m.liveSlab, nprocs)
	m.onNode = grow(m.onNode, len(s.nodes))
	clear(m.onNode)
	return procLayout{live: m.liveSlab, seen: seen}
}

// layoutWork lays out the processes of wk (works in submit order): its
// live list, the counts of its nodes.
func (s *sched) layoutWork(wk *work, l *procLayout) {
	procSlab, onNode, pm := s.mem.procSlab, s.mem.onNode, &s.mem.pids
	wk.live = l.live[:0:len(wk.w.Procs)]
	l.live = l.live[len(wk.w.Procs):]
	for j := range wk.w.Procs {
		p := &wk.w.Procs[j]
		pr := &procSlab[l.made]
		if l.seen != nil {
			if l.seen[p.ID] {
				s.tracef("process id %s appears twice; ignoring the second", p.ID)
				continue
			}
			l.seen[p.ID] = true
		}
		l.made++
		// The node of a process that named the same one in the last
		// cycle is known without looking it up (see procIDs.cachedNode).
		n, ok := pm.cachedNode(j, p.Node)
		if !ok {
			n = s.nodeBy[p.Node]
		}
		if l.seen == nil { // the first layout, in step with pids.next
			pm.names = append(pm.names, p.Node)
			pm.nodes = append(pm.nodes, n)
		}
		*pr = proc{p: p, w: wk, n: n, shares: p.Shares}
		if pr.shares <= 0 {
			pr.shares = max(wk.order, 1)
		}
		is, issued := s.issued[p.ID]
		if kw := s.cfg.Preemption.KillWait.D(); issued && s.now.Sub(is.At) > kw {
			s.tracef("process %s still stopping %s after its stop (kill_wait %s)", p.ID, s.now.Sub(is.At), kw)
		}
		pr.stopping = p.State == ProcStopping || issued
		if pr.n != nil {
			pr.n.used += pr.shares
			if s.gpuNodes != nil {
				s.takeGPUs(pr.n, wk, p)
			}
			if !pr.stopping {
				onNode[pr.n.idx]++
				if wk.w.ServiceID != "" {
					if pr.n.svc == nil {
						pr.n.svc = map[string]int{}
					}
					pr.n.svc[wk.w.ServiceID]++
				}
			}
		}
		if pr.stopping {
			continue
		}
		if pr.n == nil || (pr.n.n.State == NodeDown && wk.w.Kind != Reservation) {
			s.tracef("work %d: process %s on %s is written off (node %s)", wk.w.ID, p.ID, p.Node, nodeStateText(pr.n))
			continue
		}
		wk.live = append(wk.live, pr)
	}
	wk.cur = len(wk.live)
}

// workByID returns the work with the id, or nil.
func (s *sched) workByID(id uint64) *work {
	if i, ok := s.workBy[id]; ok {
		return s.byInput[i]
	}
	return nil
}

// procExists tells whether a process of the snapshot has the id.
func (s *sched) procExists(id string) bool { return s.mem.pids.has(id) }

func nodeStateText(n *node) string {
	if n == nil {
		return "unknown"
	}
	return n.n.State.String()
}

// workKey orders works by submit time, then id (the order of sched.works
// and of work.rank), with the Work's index in the input.
type workKey struct {
	t    time.Time
	sec  int64 // t.Unix()
	nsec int   // t.Nanosecond()
	id   uint64
	i    int
}

func newWorkKey(w *Work, i int) workKey {
	t := w.SubmitTime
	return workKey{t, t.Unix(), t.Nanosecond(), w.ID, i}
}

// compare orders by time.Time.Compare, then id.
func (a workKey) compare(b workKey) int {
	if c := a.t.Compare(b.t); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// compareWall is compare for times without a monotonic clock reading,
// which time.Time.Compare orders by their wall clock: seconds, then
// nanoseconds.
func (a workKey) compareWall(b workKey) int {
	if c := cmp.Compare(a.sec, b.sec); c != 0 {
		return c
	}
	if c := cmp.Compare(a.nsec, b.nsec); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// sortWorkKeys sorts keys by submit time, then id; input that is already
// in order, the usual case, is only checked. Submit times read back from
// the state have no monotonic clock reading, so integer keys decide.
func sortWorkKeys(keys []workKey) {
	f := workKey.compareWall
	for _, k := range keys {
		if k.t != k.t.Round(0) { // has a monotonic reading
			f = workKey.compare
			break
		}
	}
	if !slices.IsSortedFunc(keys, f) {
		slices.SortFunc(keys, f)
	}
}

// resolvePool finds a node's pool: the explicit one, else the deepest pool
// whose nodes match, else the first top-level pool.
func (s *sched) resolvePool(n *Node) *pool {
	if n.Pool != "" {
		if p, ok := s.poolBy[n.Pool]; ok {
			return p
		}
		s.tracef("node %s names unknown pool %q; using the node globs", n.Name, n.Pool)
	}
	var find func(ps []Nodepool) *Nodepool
	find = func(ps []Nodepool) *Nodepool {
		for i := range ps {
			if matchAny(ps[i].Nodes, n.Name) {
				if d := find(ps[i].Pools); d != nil {
					return d
				}
				return &ps[i]
			}
		}
		return nil
	}
	if np := find(s.cfg.Nodepools); np != nil {
		return s.poolBy[np.Name]
	}
	return s.pools[0]
}

func inMachineList(w *Work, name string) bool {
	if len(w.MachineList) == 0 {
		return true
	}
	for _, m := range w.MachineList {
		if m == name {
			return true
		}
		if ok, _ := path.Match(m, name); ok {
			return true
		}
	}
	return false
}

func joinIDs(ids []string) string { return strings.Join(ids, ", ") }

// Working state of the later steps of a cycle.
type schedState struct {
	shrinking map[uint64]*Shrinking
	observed  map[*work]bool  // beneficiaries of observe-only preemptions
	userHeld  map[string]*int // fair shares each user holds (see work.held)
	roundWait time.Duration   // time to the next preemption round
	budgetHit bool            // the round's max_per_round was used up
	anyOver   bool            // some job is over its fair share beyond the deadzone
}

// buildMem is the memory build lays the working state out in. A Scheduler
// keeps it between cycles, so a cycle reuses the previous one's slabs and
// maps instead of allocating (and later collecting) them again; every entry
// a cycle reads is written by that cycle first.
type buildMem struct {
	nodeSlab  []node
	nodes     []*node
	workSlab  []work
	works     []*work
	procSlab  []proc
	liveSlab  []*proc
	procLists []*proc
	onNode    []int
	keys      []workKey
	// The work keys of the last cycle, in input order and sorted: when a
	// snapshot lists the same works (id and submit time) in the same
	// order, their order is known without sorting.
	lastIn, lastSorted []workKey
	// The GPU layout's slabs (layoutGPUs), reused from cycle to cycle.
	gpuNodes []nodeGPU
	gpuDevs  []gpuDev
	nodeBy   map[string]*node
	workBy   map[uint64]int
	byInput  []*work
	pids     procIDs // the process ids, kept up to date
	// The pending reasons' sentences of this cycle and the last, by the
	// works' positions in their cycle (reasonText).
	reasons, lastReasons []cachedReason
	fsJobs               []fsJob   // the job heaps of one fairShare call
	fsOwners             []*fsUser // scratch space of fairShare
}

// grow returns b with length n, reusing its array when it is large enough.
// Its first n elements are left as they were.
//
// What lies beyond n is cleared: an earlier, bigger cycle left entries
// there that point into its Input, and any one of them would keep that
// whole Input (its works, their processes and strings) alive for as long
// as the Scheduler lives. A head whose backlog rose and fell held
// hundreds of old snapshots that way (the agent's RSS grew by ~100 KB per
// short job run).
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	clear(b[n:cap(b)])
	return b[:n]
}

// reuseMap returns m emptied, or a new map for about n entries if m is nil.
func reuseMap[K comparable, V any](m map[K]V, n int) map[K]V {
	if m == nil {
		return make(map[K]V, n)
	}
	clear(m)
	return m
}
