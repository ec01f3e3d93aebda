package head

import (
	"strings"

	"github.com/ducc-project/ducc/head/rm"
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

// fixedClass resolves the class of a managed reservation.
func fixedClass(sc *rm.Config, name string) (*rm.Class, *wire.CodedError) {
	if name == "" {
		if c, err := sc.DefaultClass(rm.FixedShare); err == nil {
			return c, nil
		}
		// No default: the first FIXED_SHARE class will do.
		fixed := classesOf(sc, rm.FixedShare)
		if len(fixed) == 0 {
			return nil, wire.Errorf(wire.CodeUsage, "no FIXED_SHARE class is configured; add one under scheduler.classes with policy: FIXED_SHARE")
		}
		name = fixed[0]
	}
	c, err := sc.Class(name)
	if err != nil {
		return nil, unknownClass(name, "'ducc run' and services", classesOf(sc, rm.FixedShare), rm.FixedShare)
	}
	if c.Policy != rm.FixedShare {
		return nil, wire.Errorf(wire.CodeUsage, "class %q is %s; `ducc run` needs a FIXED_SHARE class (%s)",
			name, c.Policy, strings.Join(classesOf(sc, rm.FixedShare), ", "))
	}
	return c, nil
}

// unknownClass is the error for a class that does not exist, naming only
// the classes the kind of work (who) may use, of policies: the others
// would be refused too.
func unknownClass(name, who string, may []string, policies string) *wire.CodedError {
	if len(may) == 0 {
		return wire.Errorf(wire.CodeUsage, "unknown class %q, and no %s class is configured for %s", name, policies, who)
	}
	return wire.Errorf(wire.CodeUsage, "unknown class %q; the classes %s may use (%s) are: %s ('ducc classes' lists all)",
		name, who, policies, strings.Join(may, ", "))
}

// classesOf names the classes of a policy, in the config's order.
func classesOf(sc *rm.Config, policy string) []string {
	var out []string
	for _, c := range sc.Classes {
		if c.Policy == policy {
			out = append(out, c.Name)
		}
	}
	return out
}

// reserveClass resolves the class of a reservation: a RESERVE class (a
// whole machine of exactly the requested size) or, as DUCC allows, a
// FIXED_SHARE class (the memory held in shares on a node).
func reserveClass(sc *rm.Config, name string) (*rm.Class, *wire.CodedError) {
	var class *rm.Class
	var err error
	if name == "" {
		class, err = sc.DefaultClass(rm.Reserve)
	} else if class, err = sc.Class(name); err != nil {
		return nil, unknownClass(name, "reservations", append(classesOf(sc, rm.Reserve), classesOf(sc, rm.FixedShare)...), rm.Reserve+" or "+rm.FixedShare)
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeUsage, "%v", err)
	}
	switch class.Policy {
	case rm.Reserve, rm.FixedShare:
		return class, nil
	}
	return nil, wire.Errorf(wire.CodeUsage, "class %q is %s; reservations need a RESERVE class (%s) or a FIXED_SHARE class (%s)",
		class.Name, class.Policy, strings.Join(classesOf(sc, rm.Reserve), ", "), strings.Join(classesOf(sc, rm.FixedShare), ", "))
}

// jobClass resolves the class of a job: FAIR_SHARE or FIXED_SHARE, or, as
// DUCC allows, RESERVE (each job process then holds a whole machine).
func jobClass(sc *rm.Config, name string) (*rm.Class, *wire.CodedError) {
	if name == "" {
		c, err := sc.DefaultClass(rm.FairShare)
		if err != nil {
			return nil, wire.Errorf(wire.CodeUsage, "%v", err)
		}
		return c, nil
	}
	c, err := sc.Class(name)
	if err != nil {
		return nil, wire.Errorf(wire.CodeUsage, "%v", err)
	}
	return c, nil
}

// driverClassOf picks the class of a job's driver process (DUCC's JD
// share, a small FIXED allocation): the job's own class when it is
// FIXED_SHARE, else the default FIXED_SHARE class.
func driverClassOf(sc *rm.Config, job *rm.Class) (*rm.Class, *wire.CodedError) {
	if job.Policy == rm.FixedShare {
		return job, nil
	}
	c, err := sc.DefaultClass(rm.FixedShare)
	if err != nil {
		return nil, wire.Errorf(wire.CodeUsage, "a driver process runs in a FIXED_SHARE class: %v", err)
	}
	return c, nil
}
