package rm

import (
	"strconv"

	"github.com/ducc-project/ducc/units"
)

// reasons writes a human reason for every piece of work that has fewer
// processes than it wants after this plan.
func (s *sched) reasons() {
	s.plan.Pending = make([]Pending, 0, len(s.works))
	defer func() {
		if len(s.plan.Pending) == 0 {
			s.plan.Pending = nil // as when nothing was ever appended
		}
	}()
	for _, w := range s.works {
		if w.class == nil {
			_, err := s.cfg.Class(w.w.Class)
			s.pend(w, 0, max(w.want, 1), err.Error())
			continue
		}
		if w.have() >= w.want && w.pending == "" {
			continue
		}
		if w.have() >= w.want {
			continue
		}
		switch {
		case !w.fair:
			r := w.pending
			if r == "" {
				r = s.npWaitReason(w)
			}
			s.pend(w, w.have(), w.want, r)
		default:
			s.pend(w, w.have(), w.want, s.fairReason(w))
		}
	}
}

func (s *sched) pend(w *work, have, want int, reason string) {
	s.plan.Pending = append(s.plan.Pending, Pending{WorkID: w.w.ID, Have: have, Want: want, Reason: reason})
	if s.trace {
		s.tracef("%s %d pending (%d of %d): %s", w.w.Kind, w.w.ID, have, want, reason)
	}
}

func (s *sched) fairReason(w *work) string {
	if w.pending != "" {
		return w.pending
	}
	if sh := s.shrinking[w.w.ID]; sh != nil {
		return "shrinking: " + itoa(len(sh.Procs)) + " process(es) stopped this cycle: " + sh.Reason
	}
	if s.holdShares(w) > 0 {
		return "waiting for preemptions: " + s.holdText(w)
	}
	note := ""
	switch {
	case s.cfg.Preemption.ObserveOnly && s.observed[w]:
		note = "; preemption is observe-only, so nothing is taken back for it"
	case s.roundWait > 0:
		note = "; next preemption round in " + s.roundWait.String()
	case s.budgetHit:
		note = "; this round's preemption budget (max_per_round) is used up"
	}
	cls := w.class.Name
	if w.target == 0 {
		k := s.poolCap[poolBand{w.pool.name, w.prio}]
		if k == 0 {
			return "waiting for resources: class " + cls + " fair share is 0 processes because pool " + w.pool.name +
				" has no room left for priority " + itoa(w.prio) + " work (it is held by higher-priority work)" + note
		}
		cs := s.classShare[cls]
		us := s.userShare[classUser{cls, w.user}]
		if us < w.order {
			return "waiting for resources: class " + cls + " fair share is 0 processes because pool " + w.pool.name + "'s " + s.sz(w, k) +
				" is split among classes by weight, class " + cls + " gets " + s.sz(w, cs) + " shared by " + itoa(s.classUsers[cls]) +
				" user(s), and user " + w.user + "'s " + s.sz(w, us) + " is less than one " + s.sz(w, w.order) + " process" + note
		}
		return "waiting for resources: class " + cls + " fair share is 0 processes because user " + w.user + "'s share of class " + cls +
			" (" + s.sz(w, us) + ") goes to their older jobs" + note
	}
	if w.have() < w.target {
		return "waiting for resources: fair share is " + itoa(w.target) + " processes, has " + itoa(w.have()) + "; no node in pool " +
			w.pool.name + " has " + s.sz(w, w.order) + " free" + note
	}
	if w.cur > w.target {
		return "over fair share: holds " + itoa(w.cur) + " processes, fair share is " + itoa(w.target) +
			"; the excess is taken back gradually when other work needs the space"
	}
	return "at fair share: class " + cls + " fair share gives this job " + itoa(w.target) + " of the " + itoa(w.want) +
		" processes it wants (user " + w.user + "'s share is " + s.sz(w, s.userShare[classUser{cls, w.user}]) + " of the class's " +
		s.sz(w, s.classShare[cls]) + ")"
}

// itoa formats n as %d does.
func itoa(n int) string { return strconv.Itoa(n) }

// sz formats shares of w's quantum as a size; the few sizes a cycle uses
// are formatted once each.
func (s *sched) sz(w *work, shares int) string {
	b := int64(shares) * w.quantum
	if t, ok := s.sizes[b]; ok {
		return t
	}
	if s.sizes == nil {
		s.sizes = map[int64]string{}
	}
	t := units.FormatSize(b)
	s.sizes[b] = t
	return t
}

// summaries fills Plan.Classes for `ducc classes`.
func (s *sched) summaries() {
	idx := map[string]int{}
	for i := range s.cfg.Classes {
		c := &s.cfg.Classes[i]
		p := s.poolBy[c.Nodepool]
		q := int64(s.cfg.ShareQuantum)
		if p != nil {
			q = p.quantum
		}
		idx[c.Name] = i
		s.plan.Classes = append(s.plan.Classes, ClassUsage{
			Name: c.Name, Policy: c.Policy, Priority: c.Priority, Weight: c.Weight, Pool: c.Nodepool,
			Quantum: q, Guaranteed: int64(c.Guaranteed), Max: int64(c.Max),
			FairShare: int64(s.classShare[c.Name]) * q,
		})
	}
	for _, w := range s.works {
		if w.class == nil {
			continue
		}
		cu := &s.plan.Classes[idx[w.class.Name]]
		mem := int64(w.order) * w.quantum
		cu.Works++
		cu.Demand += int64(w.want) * mem
		cu.Allocated += int64(w.have()) * mem
	}
}
