package rm

import "slices"

// procIDs is the multiset of the process ids of a snapshot's works, kept
// by a Scheduler from one cycle to the next and updated from what changed,
// so that a cycle hashes only the ids of works whose process lists changed
// instead of every process id. It finds duplicate ids (dups) and answers
// whether a process exists (has).
//
// An update is start, next for every work in submit order, then finish.
// Works are matched with those of the last update by a merge over the two
// lists, both in submit order; a matched work whose process ids are the
// same costs a comparison of its ids, any other work has its old ids
// removed and its new ids added. Whatever the matching finds, every old
// work's ids are removed once unless matched and every new work's ids
// added once unless matched, so the counts are right for any input; the
// order only decides how much is hashed.
type procIDs struct {
	count map[string]int32
	dups  int // ids counted more than once
	// The works of the last update in submit order (their keys) and their
	// process ids: those of work r are ids[end[r-1]:end[r]].
	keys []workKey
	ids  []string
	end  []int32
	// The node name of each process (names, as ids) and the node it named
	// (nodes), if the snapshot's nodes are the same (sameNodes) as when
	// it was found; layoutWork fills them.
	names []string
	nodes []*node
	// prev[r] is the position of work r in the update before, or -1 when
	// it was not there (or not matched).
	prev []int32
	// During an update: the update before's lists and its next work.
	old      []workKey
	oldIDs   []string
	oldEnd   []int32
	oldNames []string
	oldNodes []*node
	i        int
	busy     bool // between start and finish
	// The processes of the work next took last, if matched: their ids,
	// names and nodes in the update before start at match (else -1).
	match, matchLen int
	// The snapshot's node names, in its order, and whether they are the
	// last snapshot's (then a name finds the same node in the same place).
	nodeNames []string
	nodesSame bool
}

// sameNodes tells whether the snapshot's nodes are named as the last
// snapshot's, in the same order, and keeps their names for the next.
func (c *procIDs) sameNodes(ns []Node) bool {
	same := len(ns) == len(c.nodeNames)
	if same {
		for i := range ns {
			if ns[i].Name != c.nodeNames[i] {
				same = false
				break
			}
		}
	}
	if !same {
		clear(c.nodeNames)
		c.nodeNames = c.nodeNames[:0]
		for i := range ns {
			c.nodeNames = append(c.nodeNames, ns[i].Name)
		}
	}
	c.nodesSame = same
	return same
}

// cachedNode returns the node process j of the work next took last was
// found on in the update before, if that process named the same node
// and the snapshot's nodes are the same.
func (c *procIDs) cachedNode(j int, name string) (*node, bool) {
	if !c.nodesSame || c.match < 0 || j >= c.matchLen || c.oldNames[c.match+j] != name {
		return nil, false
	}
	return c.oldNodes[c.match+j], true
}

func (c *procIDs) add(id string) {
	n := c.count[id] + 1
	c.count[id] = n
	if n == 2 {
		c.dups++
	}
}

func (c *procIDs) remove(id string) {
	switch n := c.count[id] - 1; n {
	case 0:
		delete(c.count, id)
	case 1:
		c.dups--
		fallthrough
	default:
		c.count[id] = n
	}
}

// has tells whether some process of the snapshot has the id.
func (c *procIDs) has(id string) bool { return c.count[id] > 0 }

// start begins an update for the works of keys (in submit order), which
// have nprocs processes. The lists of the update before become old; the
// arrays old held before (those of two updates ago) take the new lists.
func (c *procIDs) start(keys []workKey, nprocs int) {
	if c.count == nil || c.busy {
		// The first update, or the one before did not finish (its cycle
		// panicked): start from nothing.
		*c = procIDs{count: make(map[string]int32, nprocs)}
	}
	c.busy = true
	spareKeys, spareIDs, spareEnd, spareNames, spareNodes := c.old, c.oldIDs, c.oldEnd, c.oldNames, c.oldNodes
	c.old, c.oldIDs, c.oldEnd, c.oldNames, c.oldNodes, c.i = c.keys, c.ids, c.end, c.names, c.nodes, 0
	c.keys = append(spareKeys[:0], keys...)
	c.ids, c.end = room(spareIDs, nprocs), room(spareEnd, len(keys))
	c.names, c.nodes = room(spareNames, nprocs), room(spareNodes, nprocs)
	c.prev = grow(c.prev, len(keys))
}

// oldRange returns the process ids of old work r.
func (c *procIDs) oldRange(r int) []string {
	lo := int32(0)
	if r > 0 {
		lo = c.oldEnd[r-1]
	}
	return c.oldIDs[lo:c.oldEnd[r]]
}

// next takes the processes of work r (in submit order).
func (c *procIDs) next(r int, procs []Proc) {
	k := c.keys[r]
	for c.i < len(c.old) && c.old[c.i].compareWall(k) < 0 {
		for _, id := range c.oldRange(c.i) {
			c.remove(id)
		}
		c.i++
	}
	start := len(c.ids)
	for j := range procs {
		c.ids = append(c.ids, procs[j].ID)
	}
	fresh := c.ids[start:]
	c.end = append(c.end, int32(len(c.ids)))
	c.prev[r], c.match, c.matchLen = -1, -1, 0
	if c.i < len(c.old) && c.old[c.i].id == k.id && c.old[c.i].compareWall(k) == 0 {
		if c.i > 0 {
			c.match = int(c.oldEnd[c.i-1])
		} else {
			c.match = 0
		}
		c.matchLen = int(c.oldEnd[c.i]) - c.match
		// Ids read from the same memory compare by pointer first.
		if prev := c.oldRange(c.i); !slices.Equal(prev, fresh) {
			for _, id := range prev {
				c.remove(id)
			}
			for _, id := range fresh {
				c.add(id)
			}
		}
		c.prev[r] = int32(c.i)
		c.i++
		return
	}
	for _, id := range fresh {
		c.add(id)
	}
}

// finish ends an update: the old works not matched are gone.
func (c *procIDs) finish() {
	for ; c.i < len(c.old); c.i++ {
		for _, id := range c.oldRange(c.i) {
			c.remove(id)
		}
	}
	// The old lists are the next update's arrays; they keep nothing alive.
	clear(c.oldIDs)
	clear(c.oldNames)
	clear(c.oldNodes)
	c.busy = false
}

// room returns b emptied, with room for n elements.
func room[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, 0, n)
	}
	return b[:0]
}
