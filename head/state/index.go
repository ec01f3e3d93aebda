package state

import (
	"cmp"
	"iter"
	"slices"
)

// index is what the hot paths read instead of scanning every piece of work
// ever submitted (finished work stays in the state for `ducc jobs --all`
// and `ducc show`): live (not ended) work in id order and by state, live
// services by endpoint, and the processes of each node that have not
// ended, those of finished work that is still being stopped included.
//
// Every applied command touches at most one piece of work; Apply files it
// again afterwards (reindex), and Restore rebuilds the whole index, so no
// command has to remember an index.
type index struct {
	live     workSet                // work not ended, by id
	byState  map[WorkState]*workSet // live work by state
	filed    map[uint64]filing      // live work → where it is filed
	services map[string]*Work       // live services by endpoint
	nodes    map[string]*procSet    // node → its processes that have not ended
}

// filing is where a piece of live work is filed in the index.
type filing struct {
	state    WorkState
	endpoint string // services only
}

func newIndex() index {
	return index{byState: map[WorkState]*workSet{}, filed: map[uint64]filing{},
		services: map[string]*Work{}, nodes: map[string]*procSet{}}
}

// buildIndex indexes all of work (Restore).
func buildIndex(work map[uint64]*Work) index {
	x := newIndex()
	ids := make([]uint64, 0, len(work))
	for id := range work {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		x.reindex(work[id], true)
	}
	return x
}

// reindex files w again after a command changed it; procs says that the
// command may have added or ended processes.
func (x *index) reindex(w *Work, procs bool) {
	if w.Ended() {
		x.unfile(w)
	} else {
		x.file(w)
	}
	if !procs {
		return
	}
	for i, p := range w.Procs {
		ps := x.nodes[p.Node]
		if p.Ended() {
			if ps != nil && ps.remove(w.ID, i) && len(ps.procs) == 0 {
				delete(x.nodes, p.Node)
			}
			continue
		}
		if ps == nil {
			ps = &procSet{}
			x.nodes[p.Node] = ps
		}
		ps.add(nodeProc{w: w, p: p, seq: i})
	}
}

// file files live work under its current state and endpoint.
func (x *index) file(w *Work) {
	old, known := x.filed[w.ID]
	var now filing
	now.state = w.State
	if w.Service != nil {
		now.endpoint = w.Service.Spec.Endpoint
	}
	if known && old == now {
		return
	}
	if !known {
		x.live.add(w)
	}
	if known && old.state != now.state {
		x.byState[old.state].remove(w.ID)
	}
	if !known || old.state != now.state {
		s := x.byState[now.state]
		if s == nil {
			s = &workSet{}
			x.byState[now.state] = s
		}
		s.add(w)
	}
	if known && old.endpoint != now.endpoint && x.services[old.endpoint] == w {
		delete(x.services, old.endpoint)
	}
	if w.Service != nil {
		x.services[now.endpoint] = w
	}
	x.filed[w.ID] = now
}

// unfile removes ended work from the live indexes. Its processes stay
// filed under their nodes until they end.
func (x *index) unfile(w *Work) {
	old, known := x.filed[w.ID]
	if !known {
		return
	}
	x.live.remove(w.ID)
	x.byState[old.state].remove(w.ID)
	if x.services[old.endpoint] == w {
		delete(x.services, old.endpoint)
	}
	delete(x.filed, w.ID)
}

// workSet is a set of work sorted by id. Ids grow, so additions append.
type workSet []*Work

func (s *workSet) find(id uint64) (int, bool) {
	return slices.BinarySearchFunc(*s, id, func(w *Work, id uint64) int { return cmp.Compare(w.ID, id) })
}

func (s *workSet) add(w *Work) {
	if n := len(*s); n == 0 || (*s)[n-1].ID < w.ID {
		*s = append(*s, w)
		return
	}
	if i, ok := s.find(w.ID); ok {
		(*s)[i] = w
	} else {
		*s = slices.Insert(*s, i, w)
	}
}

func (s *workSet) remove(id uint64) {
	if i, ok := s.find(id); ok {
		*s = slices.Delete(*s, i, i+1)
	}
}

// nodeProc is a process filed under its node: seq is its place in its
// work's Procs, which only grow.
type nodeProc struct {
	w   *Work
	p   *Proc
	seq int
}

// procSet is the processes of one node sorted by work id, then seq: the
// order in which a scan of all work in id order would meet them.
type procSet struct{ procs []nodeProc }

func (s *procSet) find(id uint64, seq int) (int, bool) {
	return slices.BinarySearchFunc(s.procs, seq, func(np nodeProc, seq int) int {
		if c := cmp.Compare(np.w.ID, id); c != 0 {
			return c
		}
		return cmp.Compare(np.seq, seq)
	})
}

func (s *procSet) add(np nodeProc) {
	i, ok := s.find(np.w.ID, np.seq)
	if ok {
		s.procs[i] = np
		return
	}
	s.procs = slices.Insert(s.procs, i, np)
}

// remove reports whether the process was filed.
func (s *procSet) remove(id uint64, seq int) bool {
	i, ok := s.find(id, seq)
	if ok {
		s.procs = slices.Delete(s.procs, i, i+1)
	}
	return ok
}

// LiveWork yields the work that has not ended, in id order. Finished work
// is not visited, however much of it the state holds. Like every View
// method, its iterator is for use within FSM.View.
func (v *View) LiveWork() iter.Seq[*Work] {
	return func(yield func(*Work) bool) {
		for _, w := range v.f.idx.live {
			if !yield(w) {
				return
			}
		}
	}
}

// LiveInState yields the live work in one state (State*), in id order.
func (v *View) LiveInState(state WorkState) iter.Seq[*Work] {
	return func(yield func(*Work) bool) {
		s := v.f.idx.byState[state]
		if s == nil {
			return
		}
		for _, w := range *s {
			if !yield(w) {
				return
			}
		}
	}
}

// LiveCount is the number of pieces of work that have not ended.
func (v *View) LiveCount() int { return len(v.f.idx.live) }

// NodeProcs yields the processes placed on node that have not ended, with
// their work, in work id order and then in the order they were assigned.
// Processes of finished work that are still being stopped are among them;
// reservations' processes too (nothing runs for them).
func (v *View) NodeProcs(node string) iter.Seq2[*Work, *Proc] {
	return func(yield func(*Work, *Proc) bool) {
		s := v.f.idx.nodes[node]
		if s == nil {
			return
		}
		for _, np := range s.procs {
			if !yield(np.w, np.p) {
				return
			}
		}
	}
}

// touched returns the work a command changed, if any, and whether the
// command may have added or ended processes of it.
func (f *FSM) touched(c *Command, r Result) (w *Work, procs bool) {
	id := c.WorkID
	switch c.Type {
	case CmdConfig, CmdNodeAdmin, CmdIncarnation, CmdIDFloor, CmdPurge:
		return nil, false
	case CmdSubmit:
		id, procs = r.ID, c.Assign != nil // placed at submission
	case CmdSvcRegister:
		id = r.ID
	case CmdProc:
		if c.Proc == nil {
			return nil, false
		}
		id, procs = c.Proc.WorkID, true
	case CmdAssign, CmdCancel:
		procs = true
	}
	if id == 0 {
		return nil, false
	}
	return f.work[id], procs
}
