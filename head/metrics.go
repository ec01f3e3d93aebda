package head

import (
	"strings"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/web"
	"github.com/ducc-project/ducc/wire"
)

// metricsWork is what the cluster series need of one piece of active work.
type metricsWork struct {
	id        uint64
	kind      wire.WorkKind
	class     string
	state     string
	canceling bool
	service   bool
	// running job with items left and processes: Completing if the job
	// driver has nothing queued for it (as jobInfo shows it).
	maybeCompleting bool
}

// clusterMetrics is the cluster as this head sees it, for the cluster-wide
// series its agent exports (web.HeadMetrics.ServeCluster). It runs at
// scrape time.
func (h *Head) clusterMetrics() web.Cluster {
	out := web.Cluster{At: h.cfg.Now()}
	if r := h.cfg.Raft; r != nil {
		out.RaftTerm, out.RaftIndex = r.CurrentTerm(), r.AppliedIndex()
	}
	var ws []metricsWork
	var svcs []*state.Work
	var totals state.Totals
	h.cfg.FSM.View(func(v *state.View) {
		totals = v.Totals()
		for w := range v.LiveWork() {
			mw := metricsWork{id: w.ID, kind: w.Kind, class: w.Class, state: w.State, canceling: w.Canceling, service: w.Service != nil}
			if j := w.Job; j != nil && w.State == state.StateRunning && j.Committed && j.Remaining() > 0 {
				for _, p := range w.Procs {
					if !p.Ended() {
						mw.maybeCompleting = true
						break
					}
				}
			}
			ws = append(ws, mw)
			if w.Service != nil {
				svcs = append(svcs, w.Copy())
			}
		}
	})

	type workKey struct {
		state string
		kind  wire.WorkKind
	}
	work := map[workKey]int{}
	pending := map[[2]string]int{}
	for _, w := range ws {
		reason := ""
		switch {
		case w.canceling:
		case w.state == state.StateWaitingForServices:
			reason = web.ReasonServices
		default:
			if p := h.orch.Pending(w.id); p != "" {
				reason = reasonCode(p)
			}
		}
		st := w.state
		if w.maybeCompleting && reason == "" && !w.canceling {
			if q, _, ok := h.jd.Demand(w.id); ok && q == 0 {
				st = state.StateCompleting
			}
		}
		if !w.service {
			work[workKey{st, w.kind}]++ // services have their own series
		}
		if reason != "" {
			pending[[2]string{w.class, reason}]++
		}
	}
	for k, n := range work {
		out.Work = append(out.Work, web.WorkCount{State: k.state, Kind: k.kind, N: n})
	}
	for k, n := range pending {
		out.Pending = append(out.Pending, web.PendingCount{Class: k[0], Reason: k[1], N: n})
	}
	out.Classes = h.Classes().Classes
	out.Nodes = h.Nodes().Nodes
	for _, w := range svcs {
		info := h.serviceInfo(w)
		out.Services = append(out.Services, web.ServiceSample{
			Endpoint: info.Endpoint, State: info.State, Running: len(info.Procs), Healthy: info.Healthy,
		})
	}
	out.Items = web.ItemTotals{Failed: totals.ItemsFailed, Retried: totals.ItemsRetried, Preempted: totals.ItemsPreempted}
	for k, n := range totals.Completed {
		out.Completed = append(out.Completed, web.CompletedCount{Kind: k.Kind, Reason: k.Completion, N: n})
	}
	return out
}

// reasonCode sorts the scheduler's explanation of why work has fewer
// processes than it wants into one of a few codes (web.Reason*), for a
// metric label with a small, fixed set of values.
func reasonCode(prose string) string {
	for _, r := range reasonPrefixes {
		if strings.HasPrefix(prose, r.prefix) && strings.Contains(prose, r.contains) {
			return r.code
		}
	}
	return web.ReasonOther
}

// reasonPrefixes are tried in order; the texts are those of head/rm
// (reasons.go, place.go) and of the class lookup.
var reasonPrefixes = []struct{ prefix, contains, code string }{
	{"waiting for resources: class ", "has no room left for priority", web.ReasonPriority},
	{"waiting for resources: class ", "fair share is 0", web.ReasonFairShare},
	{"waiting for resources: ", "", web.ReasonResources},
	{"waiting for preemptions: ", "", web.ReasonPreemption},
	{"shrinking: ", "", web.ReasonPreemption},
	{"defragmentation: ", "", web.ReasonPreemption},
	{"at fair share: ", "", web.ReasonFairShare},
	{"over fair share: ", "", web.ReasonFairShare},
	{"deferred: allotment", "", web.ReasonLimit},
	{"no node can hold ", "", web.ReasonSize},
	{"no node in pool ", "largest schedulable", web.ReasonSize},
	{"no machine in pool ", "has exactly", web.ReasonSize},
	{"waiting for services", "", web.ReasonServices},
	{"unknown class ", "", web.ReasonClass},
}
