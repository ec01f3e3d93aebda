package rm

import (
	"container/heap"
	"sort"
)

// Fair share (docs/scheduling.md, step 2) by progressive filling in quantum shares: the
// class with the least shares per weight (classes under their guarantee
// first) gives one process to its least-served user, who gives it to their
// least-served job (oldest first on ties). An entity that cannot use more
// (demand met, class max reached, order larger than what is left) drops out,
// so its share flows to the others: this is water-filling, and because every
// process that still fits is handed out, it includes the final bonus pass
// over left-over blocks of exact order.

type fsJob struct {
	w     *work
	alloc int // shares
}

type fsUser struct {
	name  string
	alloc int
	jobs  jobHeap
}

type fsClass struct {
	c          *Class
	weight     int64
	guaranteed int // shares
	max        int // shares; 0 = none
	alloc      int
	users      userHeap
	nusers     int
}

// fairShare computes targets for the given fair jobs (all of one band and
// one pool) over capacity shares, and returns the shares used.
func (s *sched) fairShare(jobs []*work, capacity int, quantum int64) int {
	classes := map[string]*fsClass{}
	users := map[string]*fsUser{}
	var cl []*fsClass
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
		key := w.class.Name + "\x00" + w.user
		u := users[key]
		if u == nil {
			u = &fsUser{name: w.user}
			users[key] = u
			c.users = append(c.users, u)
			c.nusers++
		}
		u.jobs = append(u.jobs, &fsJob{w: w})
	}
	sort.Slice(cl, func(a, b int) bool { return cl[a].c.Name < cl[b].c.Name })
	ch := classHeap(cl)
	for _, c := range ch {
		sort.Slice(c.users, func(a, b int) bool { return c.users[a].name < c.users[b].name })
		for _, u := range c.users {
			heap.Init(&u.jobs)
		}
		heap.Init(&c.users)
	}
	heap.Init(&ch)
	left := capacity
	for ch.Len() > 0 && left > 0 {
		c := ch[0]
		u := c.users[0]
		j := u.jobs[0]
		w := j.w
		if w.target >= w.want || w.order > left || (c.max > 0 && c.alloc+w.order > c.max) {
			heap.Pop(&u.jobs)
			if u.jobs.Len() == 0 {
				heap.Pop(&c.users)
				if c.users.Len() == 0 {
					heap.Pop(&ch)
				}
			}
			continue
		}
		w.target++
		j.alloc += w.order
		u.alloc += w.order
		c.alloc += w.order
		left -= w.order
		heap.Fix(&u.jobs, 0)
		heap.Fix(&c.users, 0)
		heap.Fix(&ch, 0)
	}
	for _, c := range cl {
		s.classShare[c.c.Name] += c.alloc
		s.classUsers[c.c.Name] += c.nusers
	}
	for k, u := range users {
		s.userShare[k] += u.alloc
	}
	return capacity - left
}

type jobHeap []*fsJob

func (h jobHeap) Len() int { return len(h) }
func (h jobHeap) Less(i, j int) bool {
	if h[i].alloc != h[j].alloc {
		return h[i].alloc < h[j].alloc
	}
	return h[i].w.rank < h[j].w.rank
}
func (h jobHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *jobHeap) Push(x any)   { *h = append(*h, x.(*fsJob)) }
func (h *jobHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type userHeap []*fsUser

func (h userHeap) Len() int { return len(h) }
func (h userHeap) Less(i, j int) bool {
	if h[i].alloc != h[j].alloc {
		return h[i].alloc < h[j].alloc
	}
	return h[i].name < h[j].name
}
func (h userHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *userHeap) Push(x any)   { *h = append(*h, x.(*fsUser)) }
func (h *userHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type classHeap []*fsClass

func (h classHeap) Len() int { return len(h) }
func (h classHeap) Less(i, j int) bool {
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
func (h classHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *classHeap) Push(x any)   { *h = append(*h, x.(*fsClass)) }
func (h *classHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
