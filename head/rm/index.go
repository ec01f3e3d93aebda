package rm

import "container/heap"

// fitIndex finds, among the Up nodes of one pool, the node whose general
// free space is the smallest that still fits an order (best fit), ties by
// name. Buckets are lazy min-heaps of node indices: an entry is valid while
// the node's free space still equals its bucket.
type fitIndex struct {
	buckets []intHeap // by free shares
	nodes   []*node
	at      map[int]int // node idx -> bucket it is valid in
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
	ix := &fitIndex{buckets: make([]intHeap, maxShares+1), nodes: nodes, at: make(map[int]int, len(nodes))}
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
	if b, ok := ix.at[n.idx]; ok && b == f {
		return
	}
	ix.at[n.idx] = f
	heap.Push(&ix.buckets[f], n.idx)
}

// best returns the best-fit node for order among those ok accepts, or nil.
func (ix *fitIndex) best(order int, byIdx []*node, ok func(*node) bool) *node {
	top := len(ix.buckets) - 1
	for f := min(max(order, 0), top); f < len(ix.buckets); f++ {
		b := &ix.buckets[f]
		var skipped []int
		var found *node
		for b.Len() > 0 {
			i := (*b)[0]
			if ix.at[i] != f {
				heap.Pop(b) // stale
				continue
			}
			n := byIdx[i]
			if (ok != nil && !ok(n)) || (f == top && n.free() < order) {
				skipped = append(skipped, heap.Pop(b).(int))
				continue
			}
			found = n
			break
		}
		for _, i := range skipped {
			heap.Push(b, i)
		}
		if found != nil {
			return found
		}
	}
	return nil
}

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
