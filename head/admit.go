package head

import (
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// fitsSomeNode refuses memory that no known node could ever hold. It asks
// the orchestrator for the largest schedulable node, which it keeps up to
// date as heartbeats arrive, so a submission scans no nodes.
func (h *Head) fitsSomeNode(mem, quantum int64) error {
	largest, known := h.orch.LargestSchedulable()
	if !known {
		return nil // nothing known yet: it waits with a reason
	}
	need := (mem + quantum - 1) / quantum
	shares := largest / quantum
	if shares >= need {
		return nil
	}
	return wire.Errorf(wire.CodeUsage, "no node can hold %s; largest schedulable is %s",
		units.FormatSize(need*quantum), units.FormatSize(shares*quantum))
}

// someNodeIsExactly refuses a reservation that no known node could ever
// hold: a reservation gets a whole machine of exactly its size in shares
// (docs/jobs.md), as `ducc run` is refused a size bigger than every node.
func (h *Head) someNodeIsExactly(mem, quantum int64) error {
	sizes := h.orch.SchedulableSizes()
	if sizes == nil || quantum <= 0 {
		return nil // nothing known yet: it waits with a reason
	}
	need := (mem + quantum - 1) / quantum
	byShares := map[int64]int{}
	for b, n := range sizes {
		byShares[b/quantum] += n
	}
	if byShares[need] > 0 {
		return nil
	}
	keys := make([]int64, 0, len(byShares))
	for k := range byShares {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	have := make([]string, 0, len(keys))
	for _, k := range keys {
		have = append(have, fmt.Sprintf("%d × %s", byShares[k], units.FormatSize(k*quantum)))
	}
	return wire.Errorf(wire.CodeUsage, "no node has exactly %s schedulable, and work in a RESERVE class (a reservation, or each process of a job) gets a whole machine of exactly its size; "+
		"the nodes have %s (ask for one of these sizes, or use a FIXED_SHARE class for part of a machine)", units.FormatSize(need*quantum), strings.Join(have, ", "))
}

// checkSubmit applies the class's submit_acl and per-user/group limits
// (docs/scheduling.md) against what the caller already has in the class.
func (h *Head) checkSubmit(c wire.Caller, class string, memory int64) error {
	sc := h.sched()
	// Limits apply to the caller and the caller's groups only, so the
	// group database is read for the caller's groups, once, and the work
	// is counted only when the class has limits.
	needGroups, needUsage := sc.SubmitNeeds(class)
	var groups []string
	if needGroups {
		groups = groupNames(c.Groups)
	}
	nameOf := make(map[uint32]string, len(groups))
	for i, g := range groups {
		nameOf[c.Groups[i]] = g
	}
	usage := rm.Usage{Groups: map[string]rm.Tally{}}
	h.cfg.FSM.View(func(v *state.View) {
		if !needUsage {
			return
		}
		for _, w := range v.Active() {
			if w.Class != class {
				continue
			}
			mem := w.Memory * int64(max(len(w.JobProcs()), 1)) // job processes: a driver process is small and fixed
			if w.User == c.User {
				usage.User.Jobs++
				usage.User.Memory += mem
			}
			for _, g := range w.Groups {
				if name, ok := nameOf[g]; ok {
					t := usage.Groups[name]
					t.Jobs++
					t.Memory += mem
					usage.Groups[name] = t
				}
			}
		}
	})
	if err := sc.CheckSubmit(c.User, groups, class, memory, usage); err != nil {
		return wire.Errorf(wire.CodeUsage, "%v", err)
	}
	return nil
}

// groupNames resolves group ids to names through the system's group
// database; unknown ids are kept as numbers.
func groupNames(gids []uint32) []string {
	out := make([]string, 0, len(gids))
	for _, g := range gids {
		id := strconv.FormatUint(uint64(g), 10)
		if gr, err := user.LookupGroupId(id); err == nil {
			out = append(out, gr.Name)
		} else {
			out = append(out, id)
		}
	}
	return out
}
