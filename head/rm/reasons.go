package rm

import (
	"strconv"
	"time"

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
	nheld := 0
	for _, w := range s.works {
		if w.class != nil && w.capCode != WaitNone && w.want < w.capMax {
			nheld++
		}
	}
	if nheld > 0 {
		s.plan.Held = make([]Held, 0, nheld)
	}
	for _, w := range s.works {
		if w.class == nil {
			_, err := s.cfg.Class(w.w.Class)
			s.pend(w, 0, max(w.want, 1), WaitBadClass, err.Error())
			continue
		}
		if w.capCode != WaitNone && w.want < w.capMax {
			h := Held{WorkID: w.id, Want: w.want, Max: w.capMax, Code: w.capCode, Class: w.class.Name, Arg: w.capArg}
			switch w.capCode {
			case HeldPrediction:
				h.Items, h.Horizon = w.w.ItemsRemaining, w.horizon
			case HeldInitFailures:
				h.Items = w.w.InitFailures
			}
			s.plan.Held = append(s.plan.Held, h)
		}
		if w.have() >= w.want && (w.pending == "" || w.have() > 0) {
			continue // a job with nothing running and a reason (too big) still waits
		}
		switch {
		case !w.fair:
			r, c := w.pending, w.pendCode
			if r == "" {
				r, c = s.npWaitReason(w), s.npWaitCode(w)
			}
			s.pend(w, w.have(), max(w.want, 1), c, r)
		default:
			c, r := s.fairReason(w)
			s.pend(w, w.have(), max(w.want, 1), c, r)
		}
	}
}

// Reason says why the job wants fewer processes than it could use, in
// words. It is formatted when asked for, not in every cycle.
func (h Held) Reason() string {
	switch h.Code {
	case HeldPrediction:
		return "held at " + itoa(h.Want) + " of " + itoa(h.Max) + " processes by the prediction (class " + h.Class +
			" use_prediction): at the job's mean item time, " + itoa(h.Want) + " processes finish its " + itoa(h.Items) +
			" remaining items before more could start (within " + h.Horizon.String() +
			": mean initialization time + scheduling cycle + prediction_fudge)"
	case HeldInitialization:
		return "held at " + itoa(h.Want) + " of " + itoa(h.Max) + " processes until one process initializes (class " +
			h.Class + " initialization_cap " + itoa(h.Arg) + ")"
	case HeldDoubling:
		return "growing by doubling: " + itoa(h.Want) + " of " + itoa(h.Max) + " processes this cycle (class " +
			h.Class + " expand_by_doubling)"
	case HeldInitFailures:
		return "held at " + itoa(h.Want) + " of " + itoa(h.Max) + " processes: " + itoa(h.Items) +
			" initialization failures reached process_initialization_failures_cap " + itoa(h.Arg) + ", so the job does not grow"
	}
	return ""
}

func (s *sched) pend(w *work, have, want int, code WaitCode, reason string) {
	s.plan.Pending = append(s.plan.Pending, Pending{WorkID: w.id, Have: have, Want: want, Code: code, Reason: reason})
	if s.trace {
		s.tracef("%s %d pending (%d of %d): %s", w.w.Kind, w.w.ID, have, want, reason)
	}
}

// fairReason classifies and explains why fair-share work w has fewer
// processes than it wants.
func (s *sched) fairReason(w *work) (WaitCode, string) {
	if w.pending != "" {
		return w.pendCode, w.pending
	}
	if sh := s.shrinking[w.id]; sh != nil {
		return WaitShrinking, "shrinking: " + itoa(len(sh.Procs)) + " process(es) stopped this cycle: " + sh.Reason
	}
	if s.holdShares(w) > 0 {
		return WaitPreempting, "waiting for preemptions: " + s.holdText(w)
	}
	// Each sentence is a function of its key alone (see reasonKey).
	cls := w.class.Name
	k := reasonKey{q: w.quantum, cls: cls, pool: w.pool.name, user: w.user}
	switch {
	case s.cfg.Preemption.ObserveOnly && s.observed[w]:
		k.note = noteObserveOnly
	case s.roundWait > 0:
		k.note, k.wait = noteNextRound, s.roundWait
	case s.budgetHit:
		k.note = noteBudget
	}
	note := func() string { return s.noteText(k.note) }
	if r := s.gpuFairReason(w, note); r != "" {
		return WaitGPUs, r
	}
	if w.target == 0 {
		pc := s.poolCap[poolBand{w.pool.name, w.prio}]
		if pc == 0 {
			k.kind, k.n = reasonPriority, [4]int64{int64(w.prio)}
			return WaitPriority, s.reasonText(w, k, func() string {
				return "waiting for resources: class " + cls + " fair share is 0 processes because pool " + w.pool.name +
					" has no room left for priority " + itoa(w.prio) + " work (it is held by higher-priority work)" + note()
			})
		}
		cs := s.classShare[cls]
		us := s.userShare[classUser{cls, w.user}]
		if us < w.order {
			cu := s.classUsers[cls]
			k.kind, k.n = reasonUserShare, [4]int64{int64(pc), int64(cs), int64(cu), int64(us)}
			k.order = w.order
			return WaitFairShare, s.reasonText(w, k, func() string {
				return "waiting for resources: class " + cls + " fair share is 0 processes because pool " + w.pool.name + "'s " + s.sz(w, pc) +
					" is split among classes by weight, class " + cls + " gets " + s.sz(w, cs) + " shared by " + itoa(cu) +
					" user(s), and user " + w.user + "'s " + s.sz(w, us) + " is less than one " + s.sz(w, w.order) + " process" + note()
			})
		}
		k.kind, k.n = reasonOlderJobs, [4]int64{int64(us)}
		return WaitFairShare, s.reasonText(w, k, func() string {
			return "waiting for resources: class " + cls + " fair share is 0 processes because user " + w.user + "'s share of class " + cls +
				" (" + s.sz(w, us) + ") goes to their older jobs" + note()
		})
	}
	if w.have() < w.target {
		k.kind, k.n, k.order = reasonNoRoom, [4]int64{int64(w.target), int64(w.have())}, w.order
		return WaitResources, s.reasonText(w, k, func() string {
			return "waiting for resources: fair share is " + itoa(w.target) + " processes, has " + itoa(w.have()) + "; no node in pool " +
				w.pool.name + " has " + s.sz(w, w.order) + " free" + note()
		})
	}
	if w.cur > w.target {
		k.kind, k.n, k.note, k.wait = reasonOverShare, [4]int64{int64(w.cur), int64(w.target)}, noteNone, 0
		return WaitOverShare, s.reasonText(w, k, func() string {
			return "over fair share: holds " + itoa(w.cur) + " processes, fair share is " + itoa(w.target) +
				"; the excess is taken back gradually when other work needs the space"
		})
	}
	us, cs := s.userShare[classUser{cls, w.user}], s.classShare[cls]
	k.kind, k.n, k.note, k.wait = reasonAtShare, [4]int64{int64(w.target), int64(w.want), int64(us), int64(cs)}, noteNone, 0
	if w.asksGPU() {
		return WaitAtShare, "at fair share: class " + cls + " fair share by dominant resource gives this job " + itoa(w.target) + " of the " +
			itoa(w.want) + " processes it wants; each asks " + gpuAsk(w.w.GPUs, w.w.GPUMemory) + " and " + s.sz(w, w.order) +
			", and its GPUs or its memory, whichever is the larger part of the pool, is shared (GPUs free: " + s.gpuFreeWhere(w) + ")"
	}
	return WaitAtShare, s.reasonText(w, k, func() string {
		return "at fair share: class " + cls + " fair share gives this job " + itoa(w.target) + " of the " + itoa(w.want) +
			" processes it wants (user " + w.user + "'s share is " + s.sz(w, us) + " of the class's " + s.sz(w, cs) + ")"
	})
}

// The notes on the preemption round that fairReason appends.
const (
	noteNone uint8 = iota
	noteObserveOnly
	noteNextRound
	noteBudget
)

// noteText formats a note on the preemption round.
func (s *sched) noteText(kind uint8) string {
	switch kind {
	case noteObserveOnly:
		return "; preemption is observe-only, so nothing is taken back for it"
	case noteNextRound:
		if s.waitText == "" {
			s.waitText = "; next preemption round in " + s.roundWait.String()
		}
		return s.waitText
	case noteBudget:
		return "; this round's preemption budget (max_per_round) is used up"
	}
	return ""
}

// The sentences of pending reasons that a Scheduler keeps (reasonKey.kind).
const (
	reasonPriority uint8 = iota + 1 // the zero key matches none
	reasonUserShare
	reasonOlderJobs
	reasonNoRoom
	reasonOverShare
	reasonAtShare
)

// reasonKey is everything a kept sentence of a pending reason is made of:
// which sentence (kind), its numbers (n, order, shares or bytes), the
// quantum its sizes are counted in (q), the names it quotes and the note
// on the preemption round (kind and wait) that fairReason appends. Equal
// keys make equal sentences, whichever work they were made for.
type reasonKey struct {
	kind, note      uint8
	n               [4]int64
	order           int
	q               int64
	wait            time.Duration
	cls, pool, user string
}

// cachedReason is a sentence with its key.
type cachedReason struct {
	key  reasonKey
	text string
}

// reasonText returns the sentence of key k for work w: the one the last
// cycle made for the same work when its key was k, else format's. Either
// way it is kept for the next cycle.
func (s *sched) reasonText(w *work, k reasonKey, format func() string) string {
	m := s.mem
	var t string
	if r := m.pids.prev[w.rank]; r >= 0 && int(r) < len(m.lastReasons) && m.lastReasons[r].key == k {
		t = m.lastReasons[r].text
	} else {
		t = format()
	}
	m.reasons[w.rank] = cachedReason{k, t}
	return t
}

// keepReasons makes the sentences of the last cycle the ones reasonText
// looks up (by the works' positions in the last cycle) and clears room
// for this cycle's.
func (m *buildMem) keepReasons(nworks int) {
	m.lastReasons, m.reasons = m.reasons, m.lastReasons
	m.reasons = grow(m.reasons, nworks)
	clear(m.reasons)
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
