package head

import (
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

// admissionChecks are the checks every submission passes (a managed
// reservation, RunManaged; a reservation, Reserve; a job, SubmitJob; a
// service, RegisterService), in this order, each once: the first that
// refuses answers the caller, with the message and code users have always
// seen for it, and nothing is applied before the last one passed. A check
// with nothing to say about a kind of work passes it. Why this order:
// head/doc.go, "Admission".
var admissionChecks = []admissionCheck{
	{"request", checkRequest},   // the spec alone is well-formed
	{"class", checkClass},       // the class exists and suits the kind; default memory
	{"fit", checkFit},           // some known node can hold a process
	{"gpus", checkGPUs},         // the GPU request is well-formed and some known node's GPUs can hold it
	{"items", checkItems},       // a job's items, or its driver process
	{"acl", checkACL},           // the class's submit_acl admits the caller
	{"limits", checkLimits},     // the caller's and its groups' limits in the class
	{"services", checkServices}, // a job's service dependencies that are not registered
}

// admissionCheck is one named step of admission.
type admissionCheck struct {
	name  string
	check func(h *Head, a *admission) *wire.CodedError
}

// admission is one submission on its way through the checks: who asks,
// what for, and what the checks found so far.
type admission struct {
	kind   wire.WorkKind
	caller wire.Caller

	// What is asked, as the kind's handler fills it in.
	validate  func() error  // the kind's spec rules (package spec)
	className string        // the class named; "" for the kind's default
	memory    int64         // bytes per process; 0 for the default memory
	noProcess bool          // a ping-only service: nothing to place
	job       *wire.JobSpec // a job's spec: its driver and service dependencies
	items     []string      // a job's first chunk of items
	more      bool          // more chunks of items follow
	gpus      gpuAsk        // the GPUs each process asks (a job: each job process)

	// What the checks found.
	sc          *rm.Config // the scheduler config in force, read once per submission
	class       *rm.Class  // class: the class resolved
	driverClass *rm.Class  // items: a job's driver process's class
	needUsage   bool       // acl: the class has limits
	groups      []string   // acl: the caller's group names, when the class needs them
	unknown     []string   // services: a job's dependencies that are not registered
}

// admit runs a through admissionChecks.
func (h *Head) admit(a *admission) error {
	a.sc = h.sched()
	for _, ck := range admissionChecks {
		if h.admitVisit != nil {
			h.admitVisit(a.kind, ck.name)
		}
		if err := ck.check(h, a); err != nil {
			return err
		}
	}
	return nil
}

// checkRequest: the spec alone is well-formed.
func checkRequest(_ *Head, a *admission) *wire.CodedError {
	if err := a.validate(); err != nil {
		return wire.Errorf(wire.CodeUsage, "%v", err)
	}
	return nil
}

// checkClass resolves the class by the rules of the kind of work, and the
// memory of a request that names none.
func checkClass(_ *Head, a *admission) *wire.CodedError {
	var err *wire.CodedError
	switch a.kind {
	case wire.WorkManaged:
		a.class, err = fixedClass(a.sc, a.className)
	case wire.WorkService:
		if a.class, err = fixedClass(a.sc, a.className); err != nil {
			err = wire.Errorf(wire.CodeUsage, "scheduling_class: %v", err)
		}
	case wire.WorkReservation:
		a.class, err = reserveClass(a.sc, a.className)
	case wire.WorkJob:
		a.class, err = jobClass(a.sc, a.className)
	default:
		err = wire.Errorf(wire.CodeUsage, "cannot admit work of kind %q", a.kind)
	}
	if err != nil {
		return err
	}
	if a.memory == 0 {
		a.memory = a.sc.DefaultMemory.Bytes() // a reservation always names its size
	}
	return nil
}

// checkFit refuses memory that no known node could ever hold: in a RESERVE
// class each process gets a whole machine of exactly its memory (a
// reservation, or each process of a job); elsewhere it is held in shares.
func checkFit(h *Head, a *admission) *wire.CodedError {
	if a.noProcess {
		return nil
	}
	quantum := a.sc.Quantum(a.class.Nodepool)
	if a.class.Policy == rm.Reserve {
		return h.someNodeIsExactly(a.memory, quantum)
	}
	return h.fitsSomeNode(a.memory, quantum)
}

// gpuAsk is a GPU request per process: whole GPUs or a slice of GPU
// memory, of a model ("" any).
type gpuAsk struct {
	count  int
	memory int64
	model  string
}

// asks tells whether g asks any GPU.
func (g gpuAsk) asks() bool { return g.count > 0 || g.memory > 0 }

// devices is what g counts against a max_gpus limit: its whole GPUs, a
// slice as one.
func (g gpuAsk) devices() int {
	if g.count > 0 {
		return g.count
	}
	if g.memory > 0 {
		return 1
	}
	return 0
}

// checkGPUs refuses a GPU request that no node this head knows could ever
// hold (more GPUs than any node has, a slice bigger than any GPU, a model
// no node has), with the GPUs that exist. A malformed request (negative,
// both whole GPUs and a slice, a model without either) never gets here:
// the spec's validation, the request check, refuses it. Until the head has
// a node's inventory the request is let through: it waits with a reason.
func checkGPUs(h *Head, a *admission) *wire.CodedError {
	g := a.gpus
	if !g.asks() || a.noProcess {
		return nil
	}
	kinds, known := h.orch.GPUKinds()
	if !known || rm.GPUFitModel(g.count, g.memory, g.model, kinds) == "" {
		return nil
	}
	nodes, _ := h.orch.GPUNodes()
	if msg := rm.GPUFitModel(g.count, g.memory, g.model, nodes); msg != "" {
		return wire.Errorf(wire.CodeUsage, "%s", msg)
	}
	return nil
}

// checkItems checks where a job's items come from: the request (they must
// be well-formed) or a driver process (then the request sends none, and the
// driver's class and memory must be placeable).
func checkItems(h *Head, a *admission) *wire.CodedError {
	if a.kind != wire.WorkJob {
		return nil
	}
	if err := spec.CheckItems(a.items); err != nil {
		return wire.Errorf(wire.CodeUsage, "%v", err)
	}
	s := a.job
	if s.DriverExecutable == "" {
		return nil
	}
	if len(a.items) > 0 || a.more {
		return wire.Errorf(wire.CodeUsage, "a job with a driver_executable gets its items from the driver process; send none")
	}
	dc, err := driverClassOf(a.sc, a.class)
	if err != nil {
		return err
	}
	if s.DriverMemory == 0 {
		s.DriverMemory = wire.DefaultDriverMemory
	}
	if err := h.fitsSomeNode(s.DriverMemory, a.sc.Quantum(dc.Nodepool)); err != nil {
		return err
	}
	a.driverClass = dc
	return nil
}

// checkACL applies the class's submit_acl (docs/scheduling.md). The group
// database is read for the caller's groups once, and only when the class
// needs them (an ACL that is not open to all, or a group limit).
func checkACL(_ *Head, a *admission) *wire.CodedError {
	var needGroups bool
	needGroups, a.needUsage = a.sc.SubmitNeeds(a.class.Name)
	if needGroups {
		a.groups = groupNames(a.caller.Groups)
	}
	if err := a.class.CheckACL(a.caller.User, a.groups); err != nil {
		return wire.Errorf(wire.CodeUsage, "%v", err)
	}
	return nil
}

// checkLimits applies the class's per-user and per-group limits
// (docs/scheduling.md) against what the caller and its groups already
// have in the class; the work is counted only when the class has limits.
func checkLimits(h *Head, a *admission) *wire.CodedError {
	if !a.needUsage {
		return nil
	}
	usage := h.usage(a.caller, a.groups, a.class.Name)
	if err := a.class.CheckLimits(a.caller.User, a.groups, a.memory, usage); err != nil {
		return wire.Errorf(wire.CodeUsage, "%v", err)
	}
	if err := a.class.CheckGPULimits(a.caller.User, a.groups, a.gpus.devices(), usage); err != nil {
		return wire.Errorf(wire.CodeUsage, "%v", err)
	}
	return nil
}

// checkServices notes which of a job's service dependencies are not
// registered (docs/services.md): it refuses nothing, the job then ends at
// once with ServicesUnavailable; known ones make it wait for them.
func checkServices(h *Head, a *admission) *wire.CodedError {
	if a.kind != wire.WorkJob || len(a.job.ServiceDependency) == 0 {
		return nil
	}
	h.cfg.FSM.View(func(v *state.View) {
		for _, d := range a.job.ServiceDependency {
			if v.ActiveService(d) == nil {
				a.unknown = append(a.unknown, d)
			}
		}
	})
	return nil
}

// usage is what caller c and its groups (named groups, in the order of
// c.Groups) have in class: their active work and its memory.
func (h *Head) usage(c wire.Caller, groups []string, class string) rm.Usage {
	nameOf := make(map[uint32]string, len(groups))
	for i, g := range groups {
		nameOf[c.Groups[i]] = g
	}
	usage := rm.Usage{Groups: map[string]rm.Tally{}}
	h.cfg.FSM.View(func(v *state.View) {
		for _, w := range v.Active() {
			if w.Class != class {
				continue
			}
			procs := max(len(w.JobProcs()), 1) // job processes: a driver process is small and fixed
			mem := w.Memory * int64(procs)
			gpus := gpuAsk{count: w.GPUs, memory: w.GPUMemory}.devices() * procs
			if w.User == c.User {
				usage.User.Jobs++
				usage.User.Memory += mem
				usage.User.GPUs += gpus
			}
			for _, g := range w.Groups {
				if name, ok := nameOf[g]; ok {
					t := usage.Groups[name]
					t.Jobs++
					t.Memory += mem
					t.GPUs += gpus
					usage.Groups[name] = t
				}
			}
		}
	})
	return usage
}

// fitsSomeNode refuses memory that no known node could ever hold. It asks
// the orchestrator for the largest schedulable node, which it keeps up to
// date as heartbeats arrive, so a submission scans no nodes.
func (h *Head) fitsSomeNode(mem, quantum int64) *wire.CodedError {
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
func (h *Head) someNodeIsExactly(mem, quantum int64) *wire.CodedError {
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
