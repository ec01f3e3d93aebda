package orch

import (
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// TestLargestSchedulable follows the largest schedulable node through
// heartbeats that add nodes, grow and shrink them, and checks it against a
// scan of Nodes after every step.
func TestLargestSchedulable(t *testing.T) {
	const gib = 1 << 30
	f := newFixture(t)
	if _, known := f.o.LargestSchedulable(); known {
		t.Fatal("a node is known before any heartbeat")
	}
	steps := []struct {
		node string
		mem  int64
		want int64
	}{
		{"a", 8 * gib, 8 * gib},
		{"b", 16 * gib, 16 * gib},
		{"c", 16 * gib, 16 * gib},
		{"b", 4 * gib, 16 * gib}, // c is still 16
		{"c", 4 * gib, 8 * gib},  // the last 16 shrank: a is the largest
		{"a", 8 * gib, 8 * gib},  // unchanged
		{"a", 2 * gib, 4 * gib},
		{"b", 0, 4 * gib},
		{"c", 0, 2 * gib},
		{"a", 0, 0},
		{"d", 32 * gib, 32 * gib},
	}
	for i, s := range steps {
		f.o.Heartbeat(f.ctx, wire.Heartbeat{Node: s.node, Seq: uint64(i + 1), Time: int64(i + 1), MemSchedulable: s.mem}, "peer-"+s.node)
		got, known := f.o.LargestSchedulable()
		var scan int64
		for _, n := range f.o.Nodes() {
			scan = max(scan, n.HB.MemSchedulable)
		}
		if !known || got != s.want || got != scan {
			t.Fatalf("step %d (%s → %d): largest %d (known %v), want %d, a scan says %d", i, s.node, s.mem, got, known, s.want, scan)
		}
	}
}

// TestLargestSchedulableCountsSeededNodes: a node seeded from the durable
// state (Unknown, no heartbeat yet) is known with nothing schedulable, as a
// scan of Nodes would say.
func TestLargestSchedulableCountsSeededNodes(t *testing.T) {
	f := newFixture(t)
	id := f.submit(t)
	f.o.Heartbeat(f.ctx, wire.Heartbeat{Node: "n1", Seq: 1, Time: 1, MemSchedulable: 4 << 30}, "p1")
	if err := f.o.cycle(f.ctx); err != nil {
		t.Fatal(err)
	}
	g := newFixture(t, func(c *Config) { c.FSM, c.Apply = f.fsm, f.app })
	g.o.seedNodes()
	got, known := g.o.LargestSchedulable()
	if !known || got != 0 || len(g.o.Nodes()) != 1 {
		t.Fatalf("after seeding work %d: largest %d (known %v), nodes %+v", id, got, known, g.o.Nodes())
	}
}
