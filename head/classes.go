package head

import (
	"context"
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// Classes lists the classes with the last cycle's demand and allocation.
func (h *Head) Classes() wire.ClassList {
	sc := h.sched()
	usage := map[string]rm.ClassUsage{}
	for _, u := range h.orch.Classes() {
		usage[u.Name] = u
	}
	var out wire.ClassList
	for _, c := range sc.Classes {
		u := usage[c.Name]
		out.Classes = append(out.Classes, wire.ClassInfo{
			Name: c.Name, Policy: c.Policy, Priority: c.Priority, Weight: c.Weight, Pool: c.Nodepool,
			Quantum: sc.Quantum(c.Nodepool), Guaranteed: c.Guaranteed.Bytes(), Max: c.Max.Bytes(), Default: c.Default,
			Works: u.Works, Demand: u.Demand, FairShare: u.FairShare, Allocated: u.Allocated,
		})
	}
	return out
}

// Reserve admits a reservation: a whole machine of exactly the requested
// size, in a RESERVE class.
func (h *Head) Reserve(ctx context.Context, c wire.Caller, r wire.ReserveRequest) (wire.SubmitReply, error) {
	if err := spec.ValidateReserve(r); err != nil {
		return wire.SubmitReply{}, wire.Errorf(wire.CodeUsage, "%v", err)
	}
	sc := h.sched()
	var class *rm.Class
	var err error
	if r.Class == "" {
		class, err = sc.DefaultClass(rm.Reserve)
	} else {
		class, err = sc.Class(r.Class)
	}
	if err != nil {
		return wire.SubmitReply{}, wire.Errorf(wire.CodeUsage, "%v", err)
	}
	switch class.Policy {
	case rm.Reserve: // a whole machine of exactly that size
		if err := h.someNodeIsExactly(r.Memory, sc.Quantum(class.Nodepool)); err != nil {
			return wire.SubmitReply{}, err
		}
	case rm.FixedShare: // as DUCC: the memory held in shares on a node
		if err := h.fitsSomeNode(r.Memory, sc.Quantum(class.Nodepool)); err != nil {
			return wire.SubmitReply{}, err
		}
	default:
		return wire.SubmitReply{}, wire.Errorf(wire.CodeUsage, "class %q is %s; reservations need a RESERVE class (%s) or a FIXED_SHARE class (%s)",
			class.Name, class.Policy, strings.Join(classesOf(sc, rm.Reserve), ", "), strings.Join(classesOf(sc, rm.FixedShare), ", "))
	}
	if err := h.checkSubmit(c, class.Name, r.Memory); err != nil {
		return wire.SubmitReply{}, err
	}
	w := &state.Work{
		Kind: wire.WorkReservation, User: c.User, UID: c.UID, GID: c.GID, Groups: c.Groups, Home: c.Home,
		Class: class.Name, Memory: r.Memory, Description: r.Description, MachineList: r.MachineList,
		State: state.StateWaitingForResources,
	}
	res, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdSubmit, Time: h.cfg.Now().UnixMilli(), Work: w})
	if err != nil {
		return wire.SubmitReply{}, err
	}
	if len(res) != 1 || res[0].Err != nil {
		return wire.SubmitReply{}, fmt.Errorf("reserve: %v", res)
	}
	h.log.Info("reservation submitted", "work", res[0].ID, "user", c.User, "memory", r.Memory)
	return wire.SubmitReply{ID: res[0].ID}, nil
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
