package rm

import (
	"math"
	"slices"
	"strings"

	"github.com/ducc-project/ducc/units"
)

// Fair share (docs/scheduling.md, step 2) by progressive filling in quantum shares: the
// class with the least shares per weight (classes under their guarantee
// first) gives one process to its least-served user, who gives it to their
// least-served job (oldest first on ties). An entity that cannot use more
// (demand met, class max reached, order larger than what is left) drops out,
// so its share flows to the others: this is water-filling, and because every
// process that still fits is handed out, it includes the final bonus pass
// over left-over blocks of exact order.

// The heaps hold their keys by value, so sifting compares without
// following pointers.

type fsJob struct {
	alloc  int // dominant shares (fairGPU): shares, for work without GPUs
	target int // processes handed out; written to w.target when the job leaves
	want   int // w.want
	w      *work
	rank   int32 // the work's rank (age)
	order  int32 // w.order
	dom    int32 // what one process adds to alloc: its dominant share (fairGPU), order without GPUs
	gpu    int32 // GPU memory of one process in MiB (fairGPU)
}

type fsUser struct {
	name  string
	alloc int
	mem   int // shares handed out (alloc counts dominant shares)
	jobs  minHeap[fsJob]
	njobs int // len(jobs) once filled
}

type fsUserEntry struct {
	alloc int // shares, as fsUser.alloc
	rank  int // position by name within the class
	u     *fsUser
}

type fsClass struct {
	c          *Class
	weight     int64
	guaranteed int // shares
	max        int // shares; 0 = none
	alloc      int // dominant shares (fairGPU)
	mem        int // shares
	users      minHeap[fsUserEntry]
	nusers     int
}

// classUser keys fair-share results by class and user.
type classUser struct{ class, user string }

// fairShare computes targets for the given fair jobs (all of one band and
// one pool) over capacity shares and the GPUs of gc (fairGPUCap), and
// returns the shares and GPU bytes used.
func (s *sched) fairShare(jobs []*work, capacity int, quantum int64, gc gpuCap) (int, int64) {
	classes := map[string]*fsClass{}
	users := map[classUser]*fsUser{}
	var cl []*fsClass
	var ul []classUser // users in first-seen order
	byClass := map[*fsClass][]*fsUser{}
	// The users' job heaps are carved out of one slab, kept between calls;
	// owners remembers each job's user for the second pass.
	owners := s.mem.fsOwners[:0]
	for _, w := range jobs {
		w.target = 0
		if w.want <= 0 {
			continue
		}
		c := classes[w.class.Name]
		if c == nil {
			c = &fsClass{c: w.class, weight: int64(max(w.class.Weight, 1)),
				guaranteed: int(int64(w.class.Guaranteed) / quantum),
				max:        int(int64(w.class.Max) / quantum)}
			classes[w.class.Name] = c
			cl = append(cl, c)
		}
		key := classUser{w.class.Name, w.user}
		u := users[key]
		if u == nil {
			u = &fsUser{name: w.user}
			users[key] = u
			ul = append(ul, key)
			byClass[c] = append(byClass[c], u)
			c.nusers++
		}
		u.njobs++
		owners = append(owners, u)
	}
	s.mem.fsOwners = owners
	slab := grow(s.mem.fsJobs, len(owners))
	s.mem.fsJobs = slab
	for _, k := range ul {
		u := users[k]
		u.jobs = slab[:0:u.njobs]
		slab = slab[u.njobs:]
	}
	i := 0
	for _, w := range jobs {
		if w.want <= 0 {
			continue
		}
		u := owners[i]
		i++
		order := int32(min(w.order, math.MaxInt32))
		u.jobs = append(u.jobs, fsJob{rank: int32(w.rank), want: w.want, order: order, dom: order, w: w})
		if w.gpu {
			j := &u.jobs[len(u.jobs)-1]
			j.gpu, j.dom = dominant(w, capacity, gc)
		}
	}
	slices.SortFunc(cl, func(a, b *fsClass) int { return strings.Compare(a.c.Name, b.c.Name) })
	ch := classHeap(cl)
	for _, c := range ch {
		us := byClass[c]
		slices.SortFunc(us, func(a, b *fsUser) int { return strings.Compare(a.name, b.name) })
		c.users = make(minHeap[fsUserEntry], len(us))
		for i, u := range us {
			c.users[i] = fsUserEntry{rank: i, u: u}
			u.jobs.init()
		}
		c.users.init()
	}
	ch.init()
	left, gpuLeft := capacity, gc.bytes/units.MiB
	for len(ch) > 0 && left > 0 {
		c := ch[0]
		ue := &c.users[0]
		u := ue.u
		j := &u.jobs[0]
		order := int(j.order)
		if j.target >= j.want || order > left || int64(j.gpu) > gpuLeft || (c.max > 0 && c.mem+order > c.max) {
			j.w.target = j.target
			u.jobs.pop()
			if len(u.jobs) == 0 {
				c.users.pop()
				if len(c.users) == 0 {
					ch.pop()
				}
			}
			continue
		}
		j.target++
		dom := int(j.dom)
		j.alloc += dom
		ue.alloc += dom
		u.alloc += dom
		c.alloc += dom
		u.mem += order
		c.mem += order
		left -= order
		gpuLeft -= int64(j.gpu)
		u.jobs.down(0)
		c.users.down(0)
		ch.down(0)
	}
	for _, c := range ch {
		for _, ue := range c.users {
			for _, j := range ue.u.jobs {
				j.w.target = j.target
			}
		}
	}
	for _, c := range cl {
		s.classShare[c.c.Name] += c.mem
		s.classUsers[c.c.Name] += c.nusers
	}
	for _, k := range ul {
		s.userShare[k] += users[k].mem
	}
	return capacity - left, (gc.bytes/units.MiB - gpuLeft) * units.MiB
}

// minHeap is a binary min-heap of small values ordered by their before
// method: the fair-share passes keep one of jobs per user and one of users
// per class. Only the root's key grows, so down(0) restores the order
// after a hand-out. A type parameter instead of container/heap's interface keeps
// the comparisons direct calls on the cycle's hottest loop.
type minHeap[T interface{ before(T) bool }] []T

func (h minHeap[T]) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h minHeap[T]) down(i int) {
	for {
		l, m := 2*i+1, i
		if l < len(h) && h[l].before(h[m]) {
			m = l
		}
		if r := l + 1; r < len(h) && h[r].before(h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h *minHeap[T]) pop() {
	a := *h
	last := len(a) - 1
	a[0] = a[last]
	*h = a[:last]
	h.down(0)
}

// before orders a user's jobs by shares handed out, then age.
//
//lint:ignore U1000 called through minHeap's type constraint (staticcheck does not follow it)
func (a fsJob) before(b fsJob) bool {
	if a.alloc != b.alloc {
		return a.alloc < b.alloc
	}
	return a.rank < b.rank
}

// before orders a class's users by shares handed out, then name.
//
//lint:ignore U1000 called through minHeap's type constraint (staticcheck does not follow it)
func (a fsUserEntry) before(b fsUserEntry) bool {
	if a.alloc != b.alloc {
		return a.alloc < b.alloc
	}
	return a.rank < b.rank
}

type classHeap []*fsClass

func (h classHeap) less(i, j int) bool {
	a, b := h[i], h[j]
	ag, bg := a.alloc < a.guaranteed, b.alloc < b.guaranteed
	if ag != bg {
		return ag
	}
	// a.alloc/a.weight < b.alloc/b.weight without division.
	l, r := int64(a.alloc)*b.weight, int64(b.alloc)*a.weight
	if l != r {
		return l < r
	}
	if a.weight != b.weight {
		return a.weight > b.weight
	}
	return a.c.Name < b.c.Name
}

func (h classHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h classHeap) down(i int) {
	for {
		l, m := 2*i+1, i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r := l + 1; r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// pop moves the root behind the heap's end (it stays in the backing
// array, which fairShare reads again when it sums up).
func (h *classHeap) pop() {
	a := *h
	last := len(a) - 1
	a[0], a[last] = a[last], a[0]
	*h = a[:last]
	h.down(0)
}

// poolBand keys what the fair computation saw per pool and priority band.
type poolBand struct {
	pool string
	prio int
}
