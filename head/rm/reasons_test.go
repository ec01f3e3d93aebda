package rm

import (
	"strings"
	"testing"
	"time"
)

func pendingEntry(p Plan, id uint64) (Pending, bool) {
	for _, x := range p.Pending {
		if x.WorkID == id {
			return x, true
		}
	}
	return Pending{}, false
}

func heldEntry(p Plan, id uint64) (Held, bool) {
	for _, x := range p.Held {
		if x.WorkID == id {
			return x, true
		}
	}
	return Held{}, false
}

// TestWaitCodes checks that every kind of pending reason carries the code
// that classifies it, next to its prose.
func TestWaitCodes(t *testing.T) {
	big := []Node{{Name: "big1", MemSchedulable: 128 * GiB}}
	small := mkNodes("n", 2, 16*GiB)
	res := Work{ID: 9, Kind: Reservation, User: "ann", Class: "reserve", Memory: 64 * GiB, SubmitTime: t0}
	svc := running(Work{ID: 1, Kind: Service, User: "x", Class: "fixed", Memory: 4 * GiB, ServiceID: "s"}, 4, "small1")
	tests := []struct {
		name  string
		nodes []Node
		work  []Work
		id    uint64
		code  WaitCode
		text  string
	}{
		{"reservation, machine busy", []Node{{Name: "small1", MemSchedulable: 64 * GiB}}, []Work{svc, res}, 9, WaitResources, "cannot be evicted"},
		{"reservation, no machine of its size", big, []Work{res}, 9, WaitNoFit, "exactly 64 GiB"},
		{"reservation, no machine up", nil, []Work{res}, 9, WaitNoNodes, "none up"},
		{"managed, too big", small, []Work{{ID: 5, Kind: ManagedReservation, User: "u", Class: "fixed", Memory: 64 * GiB, SubmitTime: t0}}, 5, WaitNoFit, "no node can hold"},
		{"job, no node up", []Node{{Name: "d1", MemSchedulable: 16 * GiB, State: NodeDown}}, []Work{job(3, "u", "normal", GiB, 4)}, 3, WaitNoNodes, "is up to hold 1 GiB"},
		{"unknown class", small, []Work{job(4, "u", "nosuch", GiB, 4)}, 4, WaitBadClass, "nosuch"},
		{"job at its fair share", mkNodes("n", 1, 4*GiB), []Work{
			running(job(6, "u", "normal", GiB, 10), 1, "n01", "n01"), running(job(7, "v", "normal", GiB, 10), 1, "n01", "n01"),
		}, 6, WaitAtShare, "at fair share"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Schedule(Input{Now: t0, Config: flat(DefaultConfig()), Nodes: tt.nodes, Work: tt.work})
			pd, ok := pendingEntry(p, tt.id)
			if !ok {
				t.Fatalf("work %d not pending: %+v", tt.id, p.Pending)
			}
			if pd.Code != tt.code || !strings.Contains(pd.Reason, tt.text) {
				t.Errorf("pending %+v, want code %d and a reason with %q", pd, tt.code, tt.text)
			}
		})
	}
}

// TestHeldCodes checks the reasons a job wants fewer processes than its
// items could use.
func TestHeldCodes(t *testing.T) {
	tr := true
	nodes := mkNodes("n", 4, 32*GiB)
	fresh := job(1, "u", "normal", GiB, 10)
	fresh.EverInitialized = false
	predicted := running(job(2, "u", "normal", GiB, 10), 1, "n01")
	predicted.MeanItemTime = time.Second
	predicted.MeanInitTime = 30 * time.Second
	failing := running(job(3, "u", "normal", GiB, 10), 1, "n01")
	failing.InitFailures, failing.InitFailuresCap = 2, 2
	tests := []struct {
		name string
		cfg  func(*Config)
		w    Work
		code WaitCode
		text string
	}{
		{"initialization cap", func(*Config) {}, fresh, HeldInitialization, "until one process initializes"},
		{"doubling", func(c *Config) {
			for i := range c.Classes {
				c.Classes[i].ExpandByDoubling = &tr
			}
		}, running(job(4, "u", "normal", GiB, 10), 1, "n01"), HeldDoubling, "doubling: 2 of 10"},
		{"prediction", func(c *Config) {
			for i := range c.Classes {
				c.Classes[i].UsePrediction = &tr
			}
		}, predicted, HeldPrediction, "by the prediction"},
		{"initialization failures", func(*Config) {}, failing, HeldInitFailures, "initialization failures"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := flat(DefaultConfig())
			tt.cfg(cfg)
			p := Schedule(Input{Now: t0, Config: cfg, Nodes: nodes, Work: []Work{tt.w}})
			h, ok := heldEntry(p, tt.w.ID)
			if !ok {
				t.Fatalf("job %d not held: %+v", tt.w.ID, p.Held)
			}
			if h.Code != tt.code || !strings.Contains(h.Reason(), tt.text) || h.Max != 10 || h.Want >= h.Max {
				t.Errorf("held %+v, want code %d, max 10 and a reason with %q", h, tt.code, tt.text)
			}
		})
	}
	// Nothing holds a job that gets what its items need.
	p := Schedule(Input{Now: t0, Config: flat(DefaultConfig()), Nodes: nodes, Work: []Work{job(5, "u", "normal", GiB, 3)}})
	if len(p.Held) != 0 {
		t.Errorf("held %+v, want none", p.Held)
	}
}
