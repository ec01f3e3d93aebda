package orch

import "github.com/ducc-project/ducc/head/rm"

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

// GPUNodes returns the GPUs of every node this head has an inventory of
// (a full heartbeat; in any state), for refusing a GPU request that no
// node can ever hold (rm.GPUFitModel), and false when it has none yet. It
// copies a slice header per node: admission asks only for work that asks
// GPUs.
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
