package rm

import "math/bits"

// fitIndex finds, among the Up nodes of one pool, the node whose general
// free space is the smallest that still fits an order (best fit), ties by
// name. Buckets are lazy min-heaps of positions in the pool's node list
// (which is sorted by name): an entry is valid while the node's free space
// still equals its bucket. live counts the valid entries of each bucket and
// a bit set marks the buckets that have any, so a search skips empty
// buckets a word at a time instead of visiting each.
type fitIndex struct {
	buckets  []intHeap // by free shares
	nodes    []*node   // the pool's nodes, by name
	at       []int     // position -> bucket it is valid in, -1 if none
	live     []int     // valid entries per bucket
	nonEmpty []uint64  // bit f set while live[f] > 0
}

// maxBuckets bounds the index size; nodes with more free shares share the
// top bucket, where each entry is checked against the order.
const maxBuckets = 1024

func newFitIndex(nodes []*node) *fitIndex {
	maxShares := 0
	for _, n := range nodes {
		maxShares = max(maxShares, n.shares)
	}
	maxShares = min(maxShares, maxBuckets)
	ix := &fitIndex{
		buckets:  make([]intHeap, maxShares+1),
		nodes:    nodes,
		at:       make([]int, len(nodes)),
		live:     make([]int, maxShares+1),
		nonEmpty: make([]uint64, (maxShares+1+63)/64),
	}
	for i, n := range nodes {
		n.pos = i
		ix.at[i] = -1
	}
	for _, n := range nodes {
		if n.up() {
			ix.update(n)
		}
	}
	return ix
}

// update records n's current free space.
func (ix *fitIndex) update(n *node) {
	if !n.up() {
		return
	}
	f := max(n.free(), 0)
	if f >= len(ix.buckets) {
		f = len(ix.buckets) - 1
	}
	old := ix.at[n.pos]
	if old == f {
		return
	}
	if old >= 0 {
		ix.live[old]--
		if ix.live[old] == 0 {
			ix.nonEmpty[old/64] &^= 1 << (old % 64)
		}
	}
	ix.at[n.pos] = f
	ix.live[f]++
	ix.nonEmpty[f/64] |= 1 << (f % 64)
	ix.buckets[f].push(n.pos)
}

// next returns the first bucket at or after f with a valid entry, or -1.
func (ix *fitIndex) next(f int) int {
	for w := f / 64; w < len(ix.nonEmpty); w++ {
		word := ix.nonEmpty[w]
		if w == f/64 {
			word &^= 1<<(f%64) - 1
		}
		if word != 0 {
			return w*64 + bits.TrailingZeros64(word)
		}
	}
	return -1
}

// best returns the best-fit node for order among those ok accepts, or nil.
func (ix *fitIndex) best(order int, ok func(*node) bool) *node {
	top := len(ix.buckets) - 1
	for f := ix.next(min(max(order, 0), top)); f >= 0; f = ix.next(f + 1) {
		b := &ix.buckets[f]
		var skipped []int
		var found *node
		for len(*b) > 0 {
			i := (*b)[0]
			if ix.at[i] != f {
				b.pop() // stale
				continue
			}
			n := ix.nodes[i]
			if (ok != nil && !ok(n)) || (f == top && n.free() < order) {
				skipped = append(skipped, b.pop())
				continue
			}
			found = n
			break
		}
		for _, i := range skipped {
			b.push(i)
		}
		if found != nil {
			return found
		}
	}
	return nil
}

// intHeap is a binary min-heap of ints.
type intHeap []int

func (h *intHeap) push(x int) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p] <= a[i] {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *intHeap) pop() int {
	a := *h
	x := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(a) && a[l] < a[m] {
			m = l
		}
		if r := l + 1; r < len(a) && a[r] < a[m] {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return x
}
