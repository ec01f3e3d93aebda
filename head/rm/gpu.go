package rm

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/ducc-project/ducc/units"
)

// GPUs as the second dimension of a share (docs/scheduling.md, "GPUs"). A
// node's devices are laid out beside its shares; a work asks either whole
// devices per process (Work.GPUs, all on one node) or a slice of one
// device's memory (Work.GPUMemory). A device held whole takes no slice and
// no other whole holder; slices on one device never add up to more than
// its memory. Nothing here is looked at for work that asks no GPUs on a
// cluster without them, so memory-only cycles decide as before.

// gpuDev is one device of a node in the cycle's working state.
type gpuDev struct {
	id    string
	model string
	mem   int64
	whole bool  // held whole by one process (or a whole-machine reservation)
	used  int64 // bytes of slices placed on it
}

// partly tells whether slices are on the device.
func (d *gpuDev) partly() bool { return d.used > 0 }

// free tells whether nothing is placed on the device.
func (d *gpuDev) free() bool { return !d.whole && d.used == 0 }

// of tells whether the device is of model ("" is any model).
func (d *gpuDev) of(model string) bool { return model == "" || d.model == model }

// asksGPU tells whether w wants GPUs per process.
func (w *work) asksGPU() bool { return w.gpu }

// nodeGPU is the GPU state of one node, kept beside the nodes (in
// sched.gpuNodes, by node index) rather than in them: a cycle without GPUs
// walks nodes of the size it always did.
type nodeGPU struct {
	devs     []gpuDev
	free     int  // devices with nothing on them
	inPartly bool // listed in pool.partly
}

// gpuOf returns n's GPU state, nil when no node has GPUs.
func (s *sched) gpuOf(n *node) *nodeGPU {
	if s.gpuNodes == nil {
		return nil
	}
	return &s.gpuNodes[n.idx]
}

// devs returns n's devices (nil without any).
func (s *sched) devs(n *node) []gpuDev {
	if s.gpuNodes == nil {
		return nil
	}
	return s.gpuNodes[n.idx].devs
}

// layoutGPUs gives every node its devices, the first of an id listed
// twice winning and devices without memory left out (both said in the
// trace). Without any GPU in the snapshot nothing is made.
func (s *sched) layoutGPUs() {
	s.gpuNodes = nil
	if !slices.ContainsFunc(s.nodes, func(n *node) bool { return len(n.n.GPUs) > 0 }) {
		return
	}
	// One slab of nodes and one of devices, kept from the last cycle: a
	// cycle on 10,000 nodes of eight GPUs allocates nothing here.
	total := 0
	for _, nd := range s.nodes {
		total += len(nd.n.GPUs)
	}
	m := s.mem
	if cap(m.gpuNodes) < len(s.nodes) {
		m.gpuNodes = make([]nodeGPU, len(s.nodes))
	}
	if cap(m.gpuDevs) < total {
		m.gpuDevs = make([]gpuDev, 0, total)
	}
	s.gpuNodes, m.gpuNodes = m.gpuNodes[:len(s.nodes)], m.gpuNodes[:len(s.nodes)]
	devs := m.gpuDevs[:0]
	for i, nd := range s.nodes {
		start := len(devs)
		for _, d := range nd.n.GPUs {
			switch {
			case d.Memory <= 0:
				s.tracef("node %s: GPU %s has no memory; not scheduled", nd.n.Name, d.ID)
				continue
			case slices.ContainsFunc(devs[start:], func(x gpuDev) bool { return x.id == d.ID }):
				s.tracef("node %s: GPU %s listed twice; using the first", nd.n.Name, d.ID)
				continue
			}
			devs = append(devs, gpuDev{id: d.ID, model: d.Model, mem: d.Memory})
		}
		s.gpuNodes[i] = nodeGPU{devs: devs[start:len(devs):len(devs)], free: len(devs) - start}
	}
}

// resetGPUs forgets what is placed on n's devices (a layout done again).
func (s *sched) resetGPUs(n *node) {
	g := s.gpuOf(n)
	if g == nil {
		return
	}
	for i := range g.devs {
		g.devs[i].whole, g.devs[i].used = false, 0
	}
	g.free = len(g.devs)
	if g.inPartly {
		n.pool.partly = slices.DeleteFunc(n.pool.partly, func(m *node) bool { return m == n })
		g.inPartly = false
	}
}

// take puts one holder on device i of n: whole, or a slice of mem bytes,
// and keeps the counts (nodeGPU.free, the pool's histogram and list of
// partly used nodes).
func (s *sched) take(n *node, i int, whole bool, mem int64) {
	g := &s.gpuNodes[n.idx]
	d := &g.devs[i]
	if d.free() {
		if h := n.pool.gpuHist; h != nil && n.up() {
			h[g.free]--
			h[g.free-1]++
		}
		g.free--
	}
	if whole {
		d.whole = true
		return
	}
	d.used += mem
	if !g.inPartly {
		g.inPartly = true
		n.pool.partly = append(n.pool.partly, n)
	}
}

// index returns the index of the device with the id, or -1.
func (g *nodeGPU) index(id string) int {
	for i := range g.devs {
		if g.devs[i].id == id {
			return i
		}
	}
	return -1
}

// takeGPUs records the devices an existing process of w holds on n (a
// stopping one included: it holds them until it is gone). A whole-machine
// reservation holds every device of its node.
func (s *sched) takeGPUs(n *node, w *work, p *Proc) {
	g := s.gpuOf(n)
	if g == nil || len(g.devs) == 0 {
		return
	}
	if w.whole {
		for i := range g.devs {
			s.take(n, i, true, 0)
		}
		return
	}
	if !w.asksGPU() {
		return
	}
	for _, id := range p.GPUs {
		i := g.index(id)
		if i < 0 {
			s.tracef("process %s holds GPU %s, which node %s does not list", p.ID, id, n.n.Name)
			continue
		}
		s.take(n, i, w.w.GPUs > 0, w.w.GPUMemory)
	}
}

// gpuScore ranks nodes for one process of a GPU work: lower is better,
// compared a first, then b.
type gpuScore struct{ a, b int64 }

func (x gpuScore) less(y gpuScore) bool {
	if x.a != y.a {
		return x.a < y.a
	}
	return x.b < y.b
}

// pick returns the devices (indexes in g.devs) one process of w would
// get on g's node now, how good a fit that is, and whether it fits at all.
// Whole devices: the first free ones by position, scored by the free
// devices left (best fit). A slice: a partly used device before a free
// one, then the least memory left over (packing).
func (g *nodeGPU) pick(w *work, dst []int) ([]int, gpuScore, bool) {
	dst = dst[:0]
	if g == nil {
		return dst, gpuScore{}, false
	}
	model := w.w.GPUModel
	if k := w.w.GPUs; k > 0 {
		nfree := 0
		for i := range g.devs {
			if g.devs[i].free() && g.devs[i].of(model) {
				nfree++
				if len(dst) < k {
					dst = append(dst, i)
				}
			}
		}
		return dst, gpuScore{int64(nfree - k), 0}, len(dst) == k
	}
	best, bs := -1, gpuScore{}
	for i := range g.devs {
		d := &g.devs[i]
		left := d.mem - d.used - w.w.GPUMemory
		if d.whole || left < 0 || !d.of(model) {
			continue
		}
		sc := gpuScore{1, left}
		if d.partly() {
			sc.a = 0
		}
		if best < 0 || sc.less(bs) {
			best, bs = i, sc
		}
	}
	if best < 0 {
		return dst, bs, false
	}
	return append(dst, best), bs, true
}

// gpuFits tells whether w's GPU request can be met on n now. A
// whole-machine reservation needs as many devices as it asks, and for a
// slice one device of that size, on a machine it empties.
func (s *sched) gpuFits(w *work, n *node) bool {
	if !w.asksGPU() {
		return true
	}
	if w.whole {
		return gpuCanHold(s.devs(n), w.w.GPUs, w.w.GPUMemory, w.w.GPUModel)
	}
	_, _, ok := s.gpuOf(n).pick(w, s.gpuBuf[:0])
	return ok
}

// gpuCanHold tells whether devices of these sizes could ever hold k whole
// devices or a slice of mem bytes, of model ("" any).
func gpuCanHold(gs []gpuDev, k int, mem int64, model string) bool {
	n := 0
	for _, d := range gs {
		if !d.of(model) {
			continue
		}
		n++
		if k <= 0 && d.mem >= mem {
			return true
		}
	}
	return k > 0 && n >= k
}

// assignGPUs marks on n the devices a new process of w gets and returns
// their ids (nil: none). A whole-machine reservation gets every device of
// its node; work that asks no GPUs gets none.
func (s *sched) assignGPUs(w *work, n *node) []string {
	g := s.gpuOf(n)
	if g == nil || len(g.devs) == 0 {
		return nil
	}
	var ids []string
	if w.whole {
		s.gpuTaken++
		for i := range g.devs {
			s.take(n, i, true, 0)
			ids = append(ids, g.devs[i].id)
		}
		return ids
	}
	if !w.asksGPU() {
		return nil
	}
	s.gpuTaken++
	pick, _, ok := s.gpuOf(n).pick(w, s.gpuBuf[:0])
	if !ok {
		panic(fmt.Sprintf("rm: work %d placed on %s where its GPUs do not fit", w.id, n.n.Name)) // a bug: every placement checks gpuFits
	}
	for _, i := range pick {
		s.take(n, i, w.w.GPUs > 0, w.w.GPUMemory)
		ids = append(ids, g.devs[i].id)
	}
	return ids
}

// fitGPU is fitIn for work that asks GPUs: among p's Up nodes where w's
// memory and GPUs fit, service instances spread first, then the best GPU
// fit (nodeGPU.pick), then the name (scanGPU; fitWhole and fitSlice give
// the same answer without looking at every node).
//
// Free space and free devices only shrink within a cycle (a stop frees
// nothing until its process is gone), so a request that found no node in
// a pool finds none for the rest of the cycle: such failures are kept
// (gpuNoFit) for work whose fit depends on nothing else (no machine list,
// no space held for it).
func (s *sched) fitGPU(w *work, p *pool) *node {
	key, keep := gpuFitKey{p, w.w.GPUs, w.w.GPUMemory, w.w.GPUModel, w.order}, len(w.w.MachineList) == 0 && len(w.holds) == 0
	if keep && s.gpuNoFit[key] {
		return nil
	}
	var best *node
	switch {
	case !keep || w.w.ServiceID != "" || w.w.GPUModel != "":
		best = s.scanGPU(w, p) // fitWhole's histogram and fitSlice's sizes count every model
	case w.w.GPUs > 0:
		best = s.fitWhole(w, p)
	default:
		best = s.fitSlice(w, p)
	}
	if best == nil && keep {
		if s.gpuNoFit == nil {
			s.gpuNoFit = map[gpuFitKey]bool{}
		}
		s.gpuNoFit[key] = true
	}
	return best
}

// gpuFitKey is a request that found no node in a pool (fitGPU).
type gpuFitKey struct {
	p     *pool
	gpus  int
	mem   int64
	model string
	order int
}

// scanGPU is fitGPU's search over every node of p, for service instances
// (spread first) and work with a machine list or held space: the fewest
// instances of its service, then the best GPU fit, then the name.
func (s *sched) scanGPU(w *work, p *pool) *node {
	var best *node
	var bestSc gpuScore
	bestSvc := 0
	for _, n := range p.nodes { // by name: the first of equals wins
		if !n.up() || !inMachineList(w.w, n.n.Name) || n.freeFor(s, w) < w.order {
			continue
		}
		_, sc, ok := s.gpuOf(n).pick(w, s.gpuBuf[:0])
		if !ok {
			continue
		}
		svc := 0
		if w.w.ServiceID != "" {
			svc = n.svc[w.w.ServiceID]
		}
		if best == nil || svc < bestSvc || (svc == bestSvc && sc.less(bestSc)) {
			best, bestSc, bestSvc = n, sc, svc
		}
	}
	return best
}

// fitWhole is scanGPU for whole GPUs without a service or machine list, in
// the same order without looking at every node: the pool's histogram of
// free devices gives the tightest count that exists, and the first node
// by name with that count and the memory is the answer (else the next
// count).
func (s *sched) fitWhole(w *work, p *pool) *node {
	if s.gpuNodes == nil {
		return nil
	}
	h := s.gpuHistogram(p)
	for f := w.w.GPUs; f < len(h); f++ {
		if h[f] == 0 {
			continue
		}
		for _, n := range p.nodes {
			if s.gpuNodes[n.idx].free == f && n.up() && n.freeFor(s, w) >= w.order {
				return n
			}
		}
	}
	return nil
}

// gpuHistogram counts p's Up nodes by free devices, once per cycle (take
// keeps it).
func (s *sched) gpuHistogram(p *pool) []int {
	if p.gpuHist != nil {
		return p.gpuHist
	}
	most := 0
	for _, n := range p.nodes {
		most = max(most, len(s.devs(n)))
	}
	p.gpuHist = make([]int, most+1)
	for _, n := range p.nodes {
		if n.up() {
			p.gpuHist[s.gpuNodes[n.idx].free]++
		}
	}
	return p.gpuHist
}

// fitSlice is scanGPU for a slice without a service or machine list, in
// the same order without looking at every node: a partly used device
// (among the pool's nodes that have one) with the least left over, then
// the name; else a free device, where the first node by name with the
// smallest device size that fits is the answer.
func (s *sched) fitSlice(w *work, p *pool) *node {
	if s.gpuNodes == nil {
		return nil
	}
	var best *node
	var bs gpuScore
	for _, n := range p.partly {
		if !n.up() || n.freeFor(s, w) < w.order {
			continue
		}
		_, sc, ok := s.gpuOf(n).pick(w, s.gpuBuf[:0])
		if ok && sc.a == 0 && (best == nil || sc.less(bs) || (sc == bs && n.n.Name < best.n.Name)) {
			best, bs = n, sc
		}
	}
	if best != nil {
		return best
	}
	floor := s.smallestDevice(p, w.w.GPUMemory) - w.w.GPUMemory // the least a free device can leave over
	for _, n := range p.nodes {
		if !n.up() || s.gpuNodes[n.idx].free == 0 || n.freeFor(s, w) < w.order {
			continue
		}
		_, sc, ok := s.gpuOf(n).pick(w, s.gpuBuf[:0])
		if !ok {
			continue
		}
		if sc.b == floor {
			return n
		}
		if best == nil || sc.less(bs) {
			best, bs = n, sc
		}
	}
	return best
}

// smallestDevice is the smallest device size of p's nodes of at least mem
// bytes (0 if none).
func (s *sched) smallestDevice(p *pool, mem int64) int64 {
	if p.minDev == nil {
		p.minDev = []int64{}
		for _, n := range p.nodes {
			for _, d := range s.devs(n) {
				p.minDev = append(p.minDev, d.mem)
			}
		}
		slices.Sort(p.minDev)
	}
	i, _ := slices.BinarySearch(p.minDev, mem)
	if i == len(p.minDev) {
		return 0
	}
	return p.minDev[i]
}

// gpuAsk says w's GPU request in words: "2 GPUs" or "a 20 GiB GPU slice".
func gpuAsk(k int, mem int64) string {
	if k > 0 {
		if k == 1 {
			return "1 whole GPU"
		}
		return fmt.Sprintf("%d whole GPUs", k)
	}
	return "a " + units.FormatSize(mem) + " GPU memory slice"
}

// gpuBadAsk says what is wrong with w's GPU request, or "".
func gpuBadAsk(w *Work) string {
	switch {
	case w.GPUs < 0 || w.GPUMemory < 0:
		return fmt.Sprintf("GPU request is negative (gpus %d, gpu memory %d); ask a positive number of GPUs or a positive slice", w.GPUs, w.GPUMemory)
	case w.GPUs > 0 && w.GPUMemory > 0:
		return fmt.Sprintf("asks both %d whole GPUs and a %s GPU memory slice per process; ask one of the two", w.GPUs, units.FormatSize(w.GPUMemory))
	}
	return ""
}

// gpuTooBig says why no Up node of pools ps can ever hold w's GPU request
// (with the sizes that exist), or "".
func (s *sched) gpuTooBig(w *work, ps []*pool) string {
	if msg := gpuBadAsk(w.w); msg != "" {
		return msg
	}
	var nodes []Node
	for _, p := range ps {
		for _, n := range p.nodes {
			if !n.up() || !inMachineList(w.w, n.n.Name) {
				continue
			}
			if gpuCanHold(s.devs(n), w.w.GPUs, w.w.GPUMemory, w.w.GPUModel) {
				return ""
			}
			nodes = append(nodes, *n.n)
		}
	}
	if len(nodes) == 0 {
		return "" // no node is up: tooBig says so
	}
	return fitMessage(w.w.GPUs, w.w.GPUMemory, w.w.GPUModel, nodes)
}

// GPUFit tells whether one process asking k whole GPUs, or a slice of mem
// bytes of one GPU, could ever be placed on some node of nodes (whatever
// their state and load): "" if so, else why not, with the GPU sizes that
// exist, for refusing such a request at once. A request of neither is "".
// It is pure, like Schedule.
func GPUFit(k int, mem int64, nodes []Node) string { return GPUFitModel(k, mem, "", nodes) }

// GPUFitModel is GPUFit for devices of one model ("" any): a model no
// node has is said with the models that exist.
func GPUFitModel(k int, mem int64, model string, nodes []Node) string {
	if msg := gpuBadAsk(&Work{GPUs: k, GPUMemory: mem}); msg != "" {
		return msg
	}
	if k == 0 && mem == 0 {
		return ""
	}
	for i := range nodes {
		devs := make([]gpuDev, 0, len(nodes[i].GPUs))
		for _, g := range nodes[i].GPUs {
			if g.Memory > 0 {
				devs = append(devs, gpuDev{id: g.ID, model: g.Model, mem: g.Memory})
			}
		}
		if gpuCanHold(devs, k, mem, model) {
			return ""
		}
	}
	return fitMessage(k, mem, model, nodes)
}

// fitMessage says that no node of nodes can hold the request, and which
// GPUs the nodes have: "no node has 3 GPUs; nodes have 2 × 80 GiB GPUs (4
// nodes), no GPUs (1 node)".
func fitMessage(k int, mem int64, model string, nodes []Node) string {
	if model != "" {
		return fitModelMessage(k, mem, model, nodes)
	}
	head := fmt.Sprintf("no node has %d GPUs", k)
	if k == 1 {
		head = "no node has a GPU"
	}
	if k == 0 {
		var largest int64
		for _, n := range nodes {
			for _, g := range n.GPUs {
				largest = max(largest, g.Memory)
			}
		}
		head = "no GPU has " + units.FormatSize(mem) + " of memory for the slice"
		if largest > 0 {
			head += " (the largest has " + units.FormatSize(largest) + ")"
		}
	}
	if len(nodes) == 0 {
		return head + "; there are no nodes"
	}
	return head + "; nodes have " + gpuSizes(nodes)
}

// fitModelMessage is fitMessage for a request of one model: the models
// that exist when no node has the model, else fitMessage over the devices
// of the model ("no node has 3 GPUs of model "A100"; nodes have ...").
func fitModelMessage(k int, mem int64, model string, nodes []Node) string {
	var models []string
	of := make([]Node, len(nodes))
	for i, n := range nodes {
		of[i].Name = n.Name
		for _, g := range n.GPUs {
			if g.Memory <= 0 {
				continue
			}
			if !slices.Contains(models, g.Model) {
				models = append(models, g.Model)
			}
			if g.Model == model {
				of[i].GPUs = append(of[i].GPUs, g)
			}
		}
	}
	if !slices.Contains(models, model) {
		if len(models) == 0 {
			return fmt.Sprintf("no GPU is of model %q; no node has GPUs", model)
		}
		slices.Sort(models)
		quoted := make([]string, len(models))
		for i, m := range models {
			quoted[i] = strconv.Quote(m)
		}
		return fmt.Sprintf("no GPU is of model %q; the models are %s", model, strings.Join(quoted, ", "))
	}
	msg := fitMessage(k, mem, "", of)
	head, rest, _ := strings.Cut(msg, ";")
	if i := strings.Index(head, " ("); i >= 0 { // the largest slice: say the model first
		head, rest = head[:i], head[i:]+";"+rest
	} else {
		rest = ";" + rest
	}
	return head + fmt.Sprintf(" of model %q", model) + rest
}

// gpuSizes groups nodes by the GPUs they have, most common first (then by
// the words): "2 × 80 GiB GPUs (4 nodes), no GPUs (1 node)".
func gpuSizes(nodes []Node) string {
	count := map[string]int{}
	var kinds []string
	for _, n := range nodes {
		k := gpuKind(n.GPUs)
		if count[k] == 0 {
			kinds = append(kinds, k)
		}
		count[k]++
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		noun := "nodes"
		if count[k] == 1 {
			noun = "node"
		}
		parts[i] = fmt.Sprintf("%s (%d %s)", k, count[k], noun)
	}
	return strings.Join(parts, ", ")
}

// gpuKind says which GPUs one node has: "2 × 80 GiB GPUs", "1 × 80 GiB +
// 2 × 40 GiB GPUs", "no GPUs".
func gpuKind(gs []GPU) string {
	by := map[int64]int{}
	var sizes []int64
	for _, g := range gs {
		if g.Memory <= 0 {
			continue
		}
		if by[g.Memory] == 0 {
			sizes = append(sizes, g.Memory)
		}
		by[g.Memory]++
	}
	if len(sizes) == 0 {
		return "no GPUs"
	}
	slices.SortFunc(sizes, func(a, b int64) int { return int(min(max(b-a, -1), 1)) })
	parts := make([]string, len(sizes))
	total := 0
	for i, sz := range sizes {
		parts[i] = fmt.Sprintf("%d × %s", by[sz], units.FormatSize(sz))
		total += by[sz]
	}
	if total == 1 {
		return parts[0] + " GPU"
	}
	return strings.Join(parts, " + ") + " GPUs"
}

// gpuWaitReason says where GPUs are free when w's next process finds no
// node with its GPUs free.
func (s *sched) gpuWaitReason(w *work) string {
	return fmt.Sprintf("waiting for GPUs: no node in pool %s has %s and %s of memory free; free now: %s",
		w.pool.name, gpuAsk(w.w.GPUs, w.w.GPUMemory), units.FormatSize(int64(w.order)*w.quantum), s.gpuFreeWhere(w))
}

// gpuFreeWhere says what is free on the GPUs of w's pool, node by node,
// the first six nodes. The sentence is kept per pool until a device is
// taken (gpuTaken) for work without a machine list.
func (s *sched) gpuFreeWhere(w *work) string {
	keep := len(w.w.MachineList) == 0 && w.w.GPUModel == ""
	if c, ok := s.gpuWhere[w.pool]; keep && ok && c.taken == s.gpuTaken {
		return c.text
	}
	text := s.gpuFreeText(w)
	if keep {
		if s.gpuWhere == nil {
			s.gpuWhere = map[*pool]gpuWhereText{}
		}
		s.gpuWhere[w.pool] = gpuWhereText{text, s.gpuTaken}
	}
	return text
}

// gpuWhereText is gpuFreeWhere's sentence for a pool, as of gpuTaken.
type gpuWhereText struct {
	text  string
	taken int
}

// gpuFreeText is gpuFreeWhere's sentence, made.
func (s *sched) gpuFreeText(w *work) string {
	var parts []string
	more := 0
	for _, n := range w.pool.nodes {
		if !n.up() || !slices.ContainsFunc(s.devs(n), func(d gpuDev) bool { return d.of(w.w.GPUModel) }) || !inMachineList(w.w, n.n.Name) {
			continue
		}
		if len(parts) == 6 {
			more++
			continue
		}
		parts = append(parts, n.n.Name+" "+nodeGPUText(s.devs(n), w.w.GPUModel))
	}
	where := strings.Join(parts, "; ")
	if more > 0 {
		where += fmt.Sprintf("; and %d more node(s)", more)
	}
	if where == "" {
		where = "no node with GPUs is up"
	}
	return where
}

// nodeGPUText says what is free on n's devices (of model, "" any): "1
// of 2 GPUs free, largest slice free 40 GiB".
func nodeGPUText(devs []gpuDev, model string) string {
	nfree, ndev := 0, 0
	var slice int64
	for _, d := range devs {
		if !d.of(model) {
			continue
		}
		ndev++
		if d.free() {
			nfree++
		}
		if !d.whole {
			slice = max(slice, d.mem-d.used)
		}
	}
	txt := fmt.Sprintf("%d of %d GPUs free", nfree, ndev)
	if model != "" {
		txt = fmt.Sprintf("%d of %d %s GPUs free", nfree, ndev, model)
	}
	if slice > 0 {
		txt += ", largest slice free " + units.FormatSize(slice)
	}
	return txt
}

// gpuBlocked tells whether w's next process waits for GPUs: no Up node
// it may use has its GPUs free (whatever its memory). Devices are only
// taken within a cycle, so a request once blocked stays blocked: that is
// kept (gpuNoFit, order -1) for work without a machine list.
func (s *sched) gpuBlocked(w *work) bool {
	if !w.asksGPU() || w.whole {
		return false
	}
	key, keep := gpuFitKey{w.pool, w.w.GPUs, w.w.GPUMemory, w.w.GPUModel, -1}, len(w.w.MachineList) == 0
	if keep && s.gpuNoFit[key] {
		return true
	}
	for _, p := range append([]*pool{w.pool}, w.pool.squat()...) {
		for _, n := range p.nodes {
			if n.up() && inMachineList(w.w, n.n.Name) && s.gpuFits(w, n) {
				return false
			}
		}
	}
	if keep {
		if s.gpuNoFit == nil {
			s.gpuNoFit = map[gpuFitKey]bool{}
		}
		s.gpuNoFit[key] = true
	}
	return true
}

// Fair share by dominant resource (Ghodsi et al., NSDI 2011). A process of
// GPU work costs its memory shares and its GPU bytes (a whole GPU counts
// the mean device size of the reach); what it adds to its job's, user's
// and class's allocation is its dominant share expressed in memory
// shares: the larger of its shares and its GPU bytes' fraction of the
// band's GPU capacity times the band's share capacity. Progressive filling
// then equalizes dominant shares and stops an entity at either capacity.
// Work without GPUs costs its order and no GPU bytes, exactly as before.

// gpuCap is what fair-share work of one band may get of the GPUs of a
// pool and its sub-pools: bytes, and the mean device size a whole GPU
// counts as.
type gpuCap struct {
	bytes, mean int64
}

// fairGPUCap is the GPUs fair-share work of one band may get in the pools
// of reach: the devices of their Up nodes, less what other work holds on
// them now and what better fair bands were given. It is zero unless one of
// jobs asks GPUs (and then nothing of this is computed).
func (s *sched) fairGPUCap(jobs []*work, reach []*pool) gpuCap {
	if !slices.ContainsFunc(jobs, (*work).asksGPU) {
		return gpuCap{}
	}
	var total, all int64
	ndev := 0
	for _, p := range reach {
		total -= s.gpuFair[p]
		for _, n := range p.nodes {
			if !n.up() {
				continue
			}
			for _, d := range s.devs(n) {
				all += d.mem
				ndev++
			}
		}
	}
	total += all
	gc := gpuCap{}
	if ndev > 0 {
		gc.mean = all / int64(ndev)
	}
	for _, w := range s.works {
		if w.fair || w.class == nil {
			continue
		}
		for _, pr := range w.live {
			if pr.n.up() && slices.Contains(reach, pr.n.pool) {
				total -= gpuBytes(w, s.devs(pr.n))
			}
		}
	}
	for _, st := range s.plan.Starts { // other work started in this cycle's better bands
		w, n := s.workByID(st.WorkID), s.nodeBy[st.Node]
		if !w.fair && slices.Contains(reach, n.pool) {
			total -= gpuBytes(w, s.devs(n))
		}
	}
	gc.bytes = max(total, 0)
	return gc
}

// gpuBytes is what one process of w holds of n's GPUs.
func gpuBytes(w *work, devs []gpuDev) int64 {
	switch {
	case w.whole:
		var b int64
		for _, d := range devs {
			b += d.mem
		}
		return b
	case w.w.GPUs > 0:
		return int64(w.w.GPUs) * meanGPU(devs)
	}
	return max(w.w.GPUMemory, 0)
}

// meanGPU is the mean memory of devices (0 without any).
func meanGPU(ds []gpuDev) int64 {
	if len(ds) == 0 {
		return 0
	}
	var b int64
	for _, d := range ds {
		b += d.mem
	}
	return b / int64(len(ds))
}

// dominant returns the GPU memory of one process of w in MiB (rounded up)
// and its dominant share in memory shares, over the band's capacity shares
// and GPUs gc. With no GPU capacity the process costs more than there is
// (it cannot be handed out).
func dominant(w *work, capacity int, gc gpuCap) (int32, int32) {
	per := w.w.GPUMemory
	if w.w.GPUs > 0 {
		per = int64(w.w.GPUs) * gc.mean
	}
	mib := int32(min((max(per, 1)+units.MiB-1)/units.MiB, math.MaxInt32))
	order := int32(min(w.order, math.MaxInt32))
	if gc.bytes <= 0 || per <= 0 {
		return mib, order
	}
	hi, lo := bits.Mul64(uint64(per), uint64(capacity))
	if hi >= uint64(gc.bytes) {
		return mib, math.MaxInt32
	}
	q, r := bits.Div64(hi, lo, uint64(gc.bytes))
	if r > 0 {
		q++
	}
	return mib, max(order, int32(min(q, math.MaxInt32)))
}

// gpuFairReason says why fair-share work w waits for GPUs, or "": its
// share is 0 because no GPUs are left, or it has fewer processes than its
// share and no node has its GPUs free.
func (s *sched) gpuFairReason(w *work, note func() string) string {
	switch {
	case w.target == 0 && s.gpuBlocked(w):
		return "fair share is 0 processes: no GPUs are left to share in pool " + w.pool.name + "; " + s.gpuWaitReason(w) + note()
	case w.target > 0 && w.have() < w.target && s.gpuBlocked(w):
		return "fair share is " + itoa(w.target) + " processes, has " + itoa(w.have()) + "; " + s.gpuWaitReason(w) + note()
	}
	return ""
}
