package orch

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ducc-project/ducc/head/rm"
)

// memIndex keeps the largest schedulable memory among the known nodes up to
// date as heartbeats change it, so that the submit check (does any node
// hold this much?) costs the same at 10 nodes and at 10,000. It counts the
// nodes per schedulable size: nodes come in few sizes, and the largest is
// looked for again only when the last node of the largest size shrinks.
type memIndex struct {
	nodes   int
	largest int64
	count   map[int64]int // schedulable bytes → known nodes that size
}

// add counts a node of mem schedulable bytes.
func (m *memIndex) add(mem int64) {
	if m.count == nil {
		m.count = make(map[int64]int)
	}
	m.nodes++
	m.count[mem]++
	if m.nodes == 1 || mem > m.largest {
		m.largest = mem
	}
}

// change records that a counted node's schedulable memory went from old to
// mem.
func (m *memIndex) change(old, mem int64) {
	if old == mem {
		return
	}
	m.count[mem]++
	if mem > m.largest {
		m.largest = mem
	}
	if m.count[old]--; m.count[old] > 0 {
		return
	}
	delete(m.count, old)
	if old == m.largest {
		m.largest = 0
		for v := range m.count {
			m.largest = max(m.largest, v)
		}
	}
}

// LargestSchedulable returns the most schedulable memory any known node
// reported (in any state), and false when no node is known yet. It scans
// nothing.
func (o *Orchestrator) LargestSchedulable() (mem int64, known bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.mems.largest, o.mems.nodes > 0
}

// SchedulableSizes returns how many known nodes (in any state) report each
// schedulable memory size; nil when no node is known yet. Nodes come in
// few sizes, so the map is small.
func (o *Orchestrator) SchedulableSizes() map[int64]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mems.nodes == 0 {
		return nil
	}
	out := make(map[int64]int, len(o.mems.count))
	for k, v := range o.mems.count {
		out[k] = v
	}
	return out
}

// gpuIndex counts the nodes with an inventory by the GPUs they have (their
// models and sizes, not their ids) and keeps one node of each kind, so that
// the submit check of a GPU request looks at each kind once: nodes come in
// few kinds, and at 10,000 nodes of eight GPUs the check costs what it does
// at one (GPUNodes, which lists every node, cost a GPU burst a third of the
// head's CPU; docs/performance.md).
type gpuIndex struct {
	count map[string]int     // kind → nodes of that kind
	rep   map[string]rm.Node // kind → one node of that kind
}

// gpuKind is the key of a node's GPUs: their models and sizes, in order.
func gpuKind(gs []rm.GPU) string {
	var b strings.Builder
	for _, g := range gs {
		b.WriteString(g.Model)
		b.WriteByte(0)
		b.WriteString(strconv.FormatInt(g.Memory, 10))
		b.WriteByte(1)
	}
	return b.String()
}

// add counts a node named name with GPUs gs.
func (x *gpuIndex) add(name string, gs []rm.GPU) {
	if x.count == nil {
		x.count, x.rep = map[string]int{}, map[string]rm.Node{}
	}
	k := gpuKind(gs)
	if x.count[k]++; x.count[k] == 1 {
		x.rep[k] = rm.Node{Name: name, GPUs: gs}
	}
}

// remove uncounts a node that had GPUs gs.
func (x *gpuIndex) remove(gs []rm.GPU) {
	k := gpuKind(gs)
	if x.count[k]--; x.count[k] <= 0 {
		delete(x.count, k)
		delete(x.rep, k)
	}
}

// GPUKinds returns one node of each kind of GPUs the nodes with an
// inventory have (one with none included), in a fixed order, and false
// when no node has sent one yet. rm.GPUFitModel over them tells whether
// some node could ever hold a request; to say why none can, with how many
// nodes have what, GPUNodes lists them all.
func (o *Orchestrator) GPUKinds() ([]rm.Node, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	keys := slices.Sorted(maps.Keys(o.gpuKinds.rep))
	out := make([]rm.Node, len(keys))
	for i, k := range keys {
		out[i] = o.gpuKinds.rep[k]
	}
	return out, len(out) > 0
}

// GPUNodes returns the GPUs of every node this head has an inventory of
// (a full heartbeat; in any state), for saying why no node can ever hold
// a GPU request (rm.GPUFitModel), and false when it has none yet. It
// copies a slice header per node: admission asks only once GPUKinds said
// that no node can.
func (o *Orchestrator) GPUNodes() ([]rm.Node, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []rm.Node
	for _, n := range o.nodes {
		if n.Inventory {
			out = append(out, rm.Node{Name: n.Name, GPUs: n.gpus})
		}
	}
	return out, len(out) > 0
}
