package rm

import (
	"fmt"

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
	size := units.FormatSize(int64(w.order) * w.quantum)
	note := ""
	switch {
	case s.cfg.Preemption.ObserveOnly && s.observed[w]:
		note = "; preemption is observe-only, so nothing is taken back for it"
	case s.roundWait > 0:
		note = fmt.Sprintf("; next preemption round in %s", s.roundWait)
	case s.budgetHit:
		note = "; this round's preemption budget (max_per_round) is used up"
	}
	if sh := s.shrinking[w.w.ID]; sh != nil {
		return fmt.Sprintf("shrinking: %d process(es) stopped this cycle: %s", len(sh.Procs), sh.Reason)
	}
	if s.holdShares(w) > 0 {
		return "waiting for preemptions: " + s.holdText(w)
	}
	cls := w.class.Name
	if w.target == 0 {
		k := s.poolCap[poolBand{w.pool.name, w.prio}]
		if k == 0 {
			return fmt.Sprintf("waiting for resources: class %s fair share is 0 processes because pool %s has no room left for priority %d work (it is held by higher-priority work)%s",
				cls, w.pool.name, w.prio, note)
		}
		cs := s.classShare[cls]
		us := s.userShare[classUser{cls, w.user}]
		if us < w.order {
			return fmt.Sprintf("waiting for resources: class %s fair share is 0 processes because pool %s's %s is split among classes by weight, class %s gets %s shared by %d user(s), and user %s's %s is less than one %s process%s",
				cls, w.pool.name, s.sz(w, k), cls, s.sz(w, cs), s.classUsers[cls], w.user, s.sz(w, us), size, note)
		}
		return fmt.Sprintf("waiting for resources: class %s fair share is 0 processes because user %s's share of class %s (%s) goes to their older jobs%s",
			cls, w.user, cls, s.sz(w, us), note)
	}
	if w.have() < w.target {
		return fmt.Sprintf("waiting for resources: fair share is %d processes, has %d; no node in pool %s has %s free%s",
			w.target, w.have(), w.pool.name, size, note)
	}
	if w.cur > w.target {
		return fmt.Sprintf("over fair share: holds %d processes, fair share is %d; the excess is taken back gradually when other work needs the space", w.cur, w.target)
	}
	return fmt.Sprintf("at fair share: class %s fair share gives this job %d of the %d processes it wants (user %s's share is %s of the class's %s)",
		cls, w.target, w.want, w.user, s.sz(w, s.userShare[classUser{cls, w.user}]), s.sz(w, s.classShare[cls]))
}

func (s *sched) sz(w *work, shares int) string { return units.FormatSize(int64(shares) * w.quantum) }

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
