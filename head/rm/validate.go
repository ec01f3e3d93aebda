package rm

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/ducc-project/ducc/units"
)

// ConfigError lists every problem found in a scheduler config, each saying
// what to change.
type ConfigError struct {
	Problems []string
}

func (e *ConfigError) Error() string {
	if len(e.Problems) == 1 {
		return "scheduler config: " + e.Problems[0]
	}
	return "scheduler config has " + fmt.Sprint(len(e.Problems)) + " problems:\n  - " +
		strings.Join(e.Problems, "\n  - ")
}

// Validate reports every mistake in the config at once, as a *ConfigError.
func (c *Config) Validate() error {
	var v validator
	if c.ShareQuantum < units.Size(MinQuantum) {
		v.addf("share_quantum %s is too small: use at least %s (e.g. 1G)", c.ShareQuantum, units.FormatSize(MinQuantum))
	}
	if c.DefaultMemory <= 0 {
		v.addf("default_memory must be positive (e.g. 4G)")
	}
	if c.GlobalAllotment < 0 {
		v.addf("global_allotment must not be negative; leave it out for no limit")
	}
	if c.Cycle <= 0 {
		v.addf("cycle must be positive (e.g. 1s)")
	}
	if c.MinInterval < 0 || (c.Cycle > 0 && c.MinInterval > c.Cycle) {
		v.addf("min_interval %s must be between 0 and cycle (%s)", c.MinInterval, c.Cycle)
	}
	if c.FragmentationThreshold < 0 {
		v.addf("fragmentation_threshold must not be negative (default 8)")
	}
	v.preemption(&c.Preemption)
	pools := v.pools(c.Nodepools)
	v.classes(c.Classes, pools)
	classNames := map[string]bool{}
	for _, cl := range c.Classes {
		classNames[cl.Name] = true
	}
	for i, r := range c.Placement {
		if !classNames[r.Class] {
			v.addf("placement rule %d names unknown class %q; classes are: %s", i+1, r.Class, strings.Join(sortedKeys(classNames), ", "))
		}
		if len(r.Users) == 0 && len(r.Groups) == 0 {
			v.addf("placement rule %d (class %q) matches nobody: give users or groups", i+1, r.Class)
		}
	}
	if len(v.problems) > 0 {
		return &ConfigError{Problems: v.problems}
	}
	return nil
}

type validator struct{ problems []string }

func (v *validator) addf(format string, a ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, a...))
}

func (v *validator) preemption(p *Preemption) {
	if p.Interval <= 0 {
		v.addf("preemption.interval must be positive (default 3s)")
	}
	if p.KillWait < 0 {
		v.addf("preemption.kill_wait must not be negative (default 15s)")
	}
	if p.MaxPerRound <= 0 || p.MaxPerRound > 1 {
		v.addf("preemption.max_per_round %v must be in (0, 100%%] (default 10%%)", float64(p.MaxPerRound))
	}
	if p.NaturalTerminationFactor <= 0 || p.NaturalTerminationFactor > 1 {
		v.addf("preemption.natural_termination_factor %v must be in (0, 1] (default 0.2)", float64(p.NaturalTerminationFactor))
	}
	if p.Deadzone < 0 || p.Deadzone >= 1 {
		v.addf("preemption.deadzone %v must be in [0, 100%%) (default 10%%)", float64(p.Deadzone))
	}
	if p.MinRuntime < 0 {
		v.addf("preemption.min_runtime must not be negative")
	}
}

// pools checks the nodepool tree and returns the set of pool names.
func (v *validator) pools(top []Nodepool) map[string]bool {
	names := map[string]bool{}
	if len(top) == 0 {
		v.addf("no nodepools: add one, e.g. {name: default, nodes: \"*\"}")
	}
	var walk func(ps []Nodepool, parent *Nodepool, depth int)
	walk = func(ps []Nodepool, parent *Nodepool, depth int) {
		for i := range ps {
			p := &ps[i]
			if p.Name == "" {
				v.addf("a nodepool has no name: give every pool a name")
				continue
			}
			if names[p.Name] {
				v.addf("nodepool %q is defined twice: rename or merge one of them", p.Name)
			}
			names[p.Name] = true
			if depth > 0 && p.ShareQuantum != 0 {
				v.addf("nodepool %q is nested and sets share_quantum: only top-level pools may set it; remove it", p.Name)
			}
			if p.ShareQuantum != 0 && p.ShareQuantum < units.Size(MinQuantum) {
				v.addf("nodepool %q: share_quantum %s is too small: use at least %s", p.Name, p.ShareQuantum, units.FormatSize(MinQuantum))
			}
			if len(p.Nodes) == 0 {
				v.addf("nodepool %q has no nodes: give a glob (\"gpu*\") or a list of names", p.Name)
			}
			for _, pat := range p.Nodes {
				if _, err := path.Match(pat, ""); err != nil {
					v.addf("nodepool %q: bad node pattern %q: %v", p.Name, pat, err)
				}
				if parent != nil && !hasMeta(pat) && !matchAny(parent.Nodes, pat) {
					v.addf("nodepool %q lists node %q, which is not in its parent pool %q: move it or widen %q's nodes", p.Name, pat, parent.Name, parent.Name)
				}
			}
			for j := 0; j < i; j++ {
				if o := overlap(&ps[j], p); o != "" {
					v.addf("nodepools %q and %q overlap (%s): pools at one level must not share nodes; nest one in the other or narrow their nodes", ps[j].Name, p.Name, o)
				}
			}
			walk(p.Pools, p, depth+1)
		}
	}
	walk(top, nil, 0)
	return names
}

func hasMeta(pat string) bool { return strings.ContainsAny(pat, "*?[\\") }

func matchAny(pats []string, name string) bool {
	for _, p := range pats {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// overlap reports how two sibling pools overlap, or "".
func overlap(a, b *Nodepool) string {
	for _, x := range a.Nodes {
		for _, y := range b.Nodes {
			switch {
			case x == y:
				return fmt.Sprintf("both list %q", x)
			case x == "*" || y == "*":
				return "one of them takes every node (\"*\")"
			case !hasMeta(y) && matchAny([]string{x}, y):
				return fmt.Sprintf("%q matches %q", x, y)
			case !hasMeta(x) && matchAny([]string{y}, x):
				return fmt.Sprintf("%q matches %q", y, x)
			}
		}
	}
	return ""
}

func (v *validator) classes(cs []Class, pools map[string]bool) {
	if len(cs) == 0 {
		v.addf("no classes: add at least one FAIR_SHARE class")
	}
	seen := map[string]bool{}
	defaults := map[string][]string{}
	byPriority := map[int]map[string][]string{}
	for _, c := range cs {
		if c.Name == "" {
			v.addf("a class has no name: give every class a name")
			continue
		}
		if seen[c.Name] {
			v.addf("class %q is defined twice: rename or remove one of them", c.Name)
		}
		seen[c.Name] = true
		switch c.Policy {
		case FairShare, FixedShare, Reserve:
		case "":
			v.addf("class %q has no policy: set policy to FAIR_SHARE, FIXED_SHARE or RESERVE", c.Name)
		default:
			v.addf("class %q has unknown policy %q: use FAIR_SHARE, FIXED_SHARE or RESERVE", c.Name, c.Policy)
		}
		if c.Policy != FairShare {
			if c.Weight != 0 {
				v.addf("class %q is %s but has weight %d: weight only applies to FAIR_SHARE classes; remove it", c.Name, c.Policy, c.Weight)
			}
			if c.Guaranteed != 0 || c.Max != 0 {
				v.addf("class %q is %s but sets guaranteed/max: these only apply to FAIR_SHARE classes; remove them", c.Name, c.Policy)
			}
		} else {
			if c.Weight < 0 {
				v.addf("class %q has negative weight %d: use a positive weight", c.Name, c.Weight)
			}
			if c.MaxAllotment != 0 {
				v.addf("class %q is FAIR_SHARE but sets max_allotment: allotments only apply to FIXED_SHARE and RESERVE classes; remove it", c.Name)
			}
		}
		if c.Guaranteed < 0 || c.Max < 0 || c.MaxAllotment < 0 {
			v.addf("class %q: guaranteed, max and max_allotment must not be negative", c.Name)
		}
		if c.Max > 0 && c.Guaranteed > c.Max {
			v.addf("class %q guarantees %s but has max %s: raise max or lower guaranteed", c.Name, c.Guaranteed, c.Max)
		}
		if c.Nodepool != "" && !pools[c.Nodepool] {
			v.addf("class %q uses unknown nodepool %q; nodepools are: %s", c.Name, c.Nodepool, strings.Join(sortedKeys(pools), ", "))
		}
		if c.InitializationCap < 1 {
			v.addf("class %q: initialization_cap must be at least 1", c.Name)
		}
		if c.PredictionFudge < 0 {
			v.addf("class %q: prediction_fudge must not be negative", c.Name)
		}
		if c.Default && c.Policy != "" {
			defaults[c.Policy] = append(defaults[c.Policy], c.Name)
		}
		if byPriority[c.Priority] == nil {
			byPriority[c.Priority] = map[string][]string{}
		}
		byPriority[c.Priority][c.Policy] = append(byPriority[c.Priority][c.Policy], c.Name)
		for i, l := range c.Limits {
			if (l.User == "") == (l.Group == "") {
				v.addf("class %q limit %d: give exactly one of user or group", c.Name, i+1)
			}
			if l.MaxJobs < 0 || l.MaxMemory < 0 || l.MaxGPUs < 0 {
				v.addf("class %q limit %d: max_jobs, max_memory and max_gpus must not be negative", c.Name, i+1)
			}
		}
	}
	for _, fam := range sortedKeys(defaults) {
		if n := defaults[fam]; len(n) > 1 {
			v.addf("classes %s are all default for %s: keep default: true on only one", quoteList(n), fam)
		}
	}
	prios := make([]int, 0, len(byPriority))
	for p := range byPriority {
		prios = append(prios, p)
	}
	sort.Ints(prios)
	for _, p := range prios {
		fams := byPriority[p]
		if len(fams) > 1 {
			var parts []string
			for _, f := range sortedKeys(fams) {
				parts = append(parts, fmt.Sprintf("%s (%s)", f, strings.Join(fams[f], ", ")))
			}
			v.addf("priority %d mixes policies %s: classes of one priority must share one policy; give them different priorities", p, strings.Join(parts, " and "))
		}
	}
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
