package head

import (
	"fmt"
	"slices"
	"time"

	"github.com/ducc-project/ducc/head/orch"
	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
)

// policy adapts the scheduler to the orchestrator.
type policy struct {
	cfg *rm.Config
}

func newPolicy(cfg *rm.Config) orch.Policy { return &policy{cfg: cfg} }

// Schedule places managed reservations FIXED_SHARE, best fit.
func (p *policy) Schedule(now time.Time, nodes []orch.Node, active []*state.Work) orch.Plan {
	plan := orch.Plan{Pending: map[uint64]string{}}
	q := p.cfg.Quantum("")
	free := map[string]int64{}
	for _, n := range nodes {
		if n.State == orch.NodeUp {
			free[n.Name] = n.HB.MemSchedulable / q
		}
	}
	for _, w := range active {
		for _, pr := range w.Live() {
			if _, ok := free[pr.Node]; ok {
				free[pr.Node] -= int64(pr.Shares)
			}
		}
	}
	for _, w := range active {
		if w.Kind != state.KindManaged || w.Canceling || len(w.Procs) > 0 {
			continue
		}
		need := (w.Memory + q - 1) / q
		best, bestFree := "", int64(-1)
		var largest int64
		for _, n := range nodes {
			f, up := free[n.Name]
			if !up {
				continue
			}
			largest = max(largest, n.HB.MemSchedulable/q)
			if len(w.MachineList) > 0 && !slices.Contains(w.MachineList, n.Name) {
				continue
			}
			if f >= need && (best == "" || f < bestFree) {
				best, bestFree = n.Name, f
			}
		}
		switch {
		case best != "":
			free[best] -= need
			plan.Starts = append(plan.Starts, orch.Start{WorkID: w.ID, Node: best, Shares: int(need), Memory: need * q})
		case len(free) == 0:
			plan.Pending[w.ID] = "waiting for resources: no node is up"
		case largest < need:
			plan.Pending[w.ID] = fmt.Sprintf("waiting for resources: no node can hold %s; largest schedulable is %s",
				rm.FormatSize(need*q), rm.FormatSize(largest*q))
		default:
			plan.Pending[w.ID] = fmt.Sprintf("waiting for resources: no node has %s free", rm.FormatSize(need*q))
		}
	}
	return plan
}
