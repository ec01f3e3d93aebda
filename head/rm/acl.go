package rm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ducc-project/ducc/units"
)

// Class returns the named class, or an error listing the classes there are.
func (c *Config) Class(name string) (*Class, error) {
	for i := range c.Classes {
		if c.Classes[i].Name == name {
			return &c.Classes[i], nil
		}
	}
	return nil, fmt.Errorf("unknown class %q; classes are: %s", name, strings.Join(c.classNames(), ", "))
}

func (c *Config) classNames() []string {
	n := make([]string, len(c.Classes))
	for i := range c.Classes {
		n[i] = c.Classes[i].Name
	}
	return n
}

// DefaultClass returns the default class of a policy family (FairShare,
// FixedShare or Reserve).
func (c *Config) DefaultClass(policy string) (*Class, error) {
	for i := range c.Classes {
		if c.Classes[i].Policy == policy && c.Classes[i].Default {
			return &c.Classes[i], nil
		}
	}
	return nil, fmt.Errorf("no default %s class is configured: name a class explicitly or mark one with default: true", policy)
}

// PolicyFor returns the policy family a kind of work uses by default.
func PolicyFor(k WorkKind) string {
	switch k {
	case Service, ManagedReservation:
		return FixedShare
	case Reservation:
		return Reserve
	}
	return FairShare
}

// ResolveClass picks the class for work of kind k submitted by user (in
// groups) asking for class requested ("" for none): the requested class if
// given, else the first matching placement rule whose class suits the kind,
// else the default class of the kind's policy family. It checks that the
// class's policy may be used by that kind of work (docs/scheduling.md).
func (c *Config) ResolveClass(user string, groups []string, requested string, k WorkKind) (*Class, error) {
	if requested != "" {
		cl, err := c.Class(requested)
		if err != nil {
			return nil, err
		}
		if !policyAllowed(k, cl.Policy) {
			return nil, fmt.Errorf("class %q is %s, which %s cannot use; use a %s class such as %q", cl.Name, cl.Policy, k, PolicyFor(k), c.defaultName(PolicyFor(k)))
		}
		return cl, nil
	}
	for _, r := range c.Placement {
		if slices.Contains(r.Users, user) || intersects(r.Groups, groups) {
			if cl, err := c.Class(r.Class); err == nil && policyAllowed(k, cl.Policy) {
				return cl, nil
			}
		}
	}
	return c.DefaultClass(PolicyFor(k))
}

func (c *Config) defaultName(policy string) string {
	if cl, err := c.DefaultClass(policy); err == nil {
		return cl.Name
	}
	return ""
}

// policyAllowed says which class policies a kind of work may use. As in
// DUCC, a job may use a RESERVE class (each job process then gets a whole
// machine of exactly its memory) and a reservation a FIXED_SHARE class (it
// then holds its memory in shares on a node, not a whole machine).
func policyAllowed(k WorkKind, policy string) bool {
	switch k {
	case Job:
		return policy == FairShare || policy == FixedShare || policy == Reserve
	case Service, ManagedReservation:
		return policy == FixedShare
	case Reservation:
		return policy == Reserve || policy == FixedShare
	}
	return false
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// aclAllows reads a YuniKorn-style ACL: "users groups", each a comma list.
// An empty ACL or "*" allows everyone.
func aclAllows(acl, user string, groups []string) bool {
	acl = strings.TrimSpace(acl)
	if acl == "" || acl == "*" {
		return true
	}
	us, gs, _ := strings.Cut(acl, " ")
	for _, u := range strings.Split(us, ",") {
		if u = strings.TrimSpace(u); u == "*" || (u != "" && u == user) {
			return true
		}
	}
	for _, g := range strings.Split(gs, ",") {
		if g = strings.TrimSpace(g); g == "*" || (g != "" && slices.Contains(groups, g)) {
			return true
		}
	}
	return false
}

// IsClassAdmin tells whether user may administer work in class (admin_acl).
// A class without admin_acl has no class administrators.
func (c *Config) IsClassAdmin(user string, groups []string, class string) bool {
	cl, err := c.Class(class)
	if err != nil || strings.TrimSpace(cl.AdminACL) == "" {
		return false
	}
	return aclAllows(cl.AdminACL, user, groups)
}

// Tally is what one user or group currently has in a class.
type Tally struct {
	Jobs   int
	Memory int64
	GPUs   int // whole GPUs asked, a slice counting as one (Limit.MaxGPUs)
}

// Usage is the current usage a submission is checked against: the
// submitter's own tally and one per group, all within the target class.
type Usage struct {
	User   Tally
	Groups map[string]Tally
}

// SubmitNeeds tells what CheckSubmit reads for a submission to class: the
// caller's group names (a submit_acl that is not open to all, or a group
// limit) and the current usage (any limit). A class with neither is checked
// without resolving groups or counting work.
func (c *Config) SubmitNeeds(class string) (groups, usage bool) {
	cl, err := c.Class(class)
	if err != nil {
		return false, false // CheckSubmit refuses the class itself
	}
	if acl := strings.TrimSpace(cl.SubmitACL); acl != "" && acl != "*" {
		groups = true
	}
	for _, l := range cl.Limits {
		usage = true
		if l.Group != "" {
			groups = true
		}
	}
	return groups, usage
}

// CheckSubmit decides whether user (in groups) may submit one more piece of
// work of memory bytes (total, all processes it asks for up front) to class,
// given current usage in that class: CheckACL, then CheckLimits. The error
// says why not and what to do.
func (c *Config) CheckSubmit(user string, groups []string, class string, memory int64, usage Usage) error {
	cl, err := c.Class(class)
	if err != nil {
		return err
	}
	if err := cl.CheckACL(user, groups); err != nil {
		return err
	}
	return cl.CheckLimits(user, groups, memory, usage)
}

// CheckACL decides whether the class's submit_acl admits user (in groups).
func (cl *Class) CheckACL(user string, groups []string) error {
	if !aclAllows(cl.SubmitACL, user, groups) {
		return fmt.Errorf("user %s may not submit to class %q (submit_acl %q); ask an administrator or use another class", user, cl.Name, cl.SubmitACL)
	}
	return nil
}

// CheckLimits decides whether the class's per-user and per-group limits
// leave room for one more piece of work of memory bytes, given what user
// and its groups already have in the class.
func (cl *Class) CheckLimits(user string, groups []string, memory int64, usage Usage) error {
	for _, l := range cl.Limits {
		t, who, ok := l.appliesTo(user, groups, usage)
		if !ok {
			continue
		}
		if l.MaxJobs > 0 && t.Jobs+1 > l.MaxJobs {
			return fmt.Errorf("limit reached: %s has %d of at most %d jobs in class %q; wait for some to finish", who, t.Jobs, l.MaxJobs, cl.Name)
		}
		if l.MaxMemory > 0 && t.Memory+memory > int64(l.MaxMemory) {
			return fmt.Errorf("limit reached: %s would use %s of at most %s in class %q; ask for less memory or wait for work to finish",
				who, units.FormatSize(t.Memory+memory), l.MaxMemory, cl.Name)
		}
	}
	return nil
}

// CheckGPULimits decides whether the class's per-user and per-group
// max_gpus leave room for gpus more GPUs (whole GPUs, a slice counting as
// one), given what user and its groups already have in the class.
func (cl *Class) CheckGPULimits(user string, groups []string, gpus int, usage Usage) error {
	if gpus <= 0 {
		return nil
	}
	for _, l := range cl.Limits {
		t, who, ok := l.appliesTo(user, groups, usage)
		if l.MaxGPUs <= 0 || !ok {
			continue
		}
		if t.GPUs+gpus > l.MaxGPUs {
			return fmt.Errorf("limit reached: %s would hold %d of at most %d GPUs (max_gpus) in class %q; ask for fewer GPUs or wait for work to finish",
				who, t.GPUs+gpus, l.MaxGPUs, cl.Name)
		}
	}
	return nil
}

// appliesTo tells whether the limit is user's (its user, or "*") or one
// of its groups', and returns what that user or group already has and
// how a message names it.
func (l Limit) appliesTo(user string, groups []string, usage Usage) (Tally, string, bool) {
	switch {
	case l.User != "" && (l.User == user || l.User == "*"):
		return usage.User, "user " + user, true
	case l.Group != "" && slices.Contains(groups, l.Group):
		return usage.Groups[l.Group], "group " + l.Group, true
	}
	return Tally{}, "", false
}
