package head

import (
	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/web"
	"github.com/ducc-project/ducc/wire"
)

// metricsWork is what the cluster series need of one piece of active work.
type metricsWork struct {
	id        uint64
	kind      wire.WorkKind
	class     string
	state     state.WorkState
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
	classGPUs := map[string]float64{}
	h.cfg.FSM.View(func(v *state.View) {
		totals = v.Totals()
		for w := range v.LiveWork() {
			if w.AsksGPUs() || w.Kind == wire.WorkReservation { // a whole-machine reservation holds its node's GPUs
				for _, p := range w.Procs {
					if len(p.GPUs) > 0 && !p.Ended() {
						classGPUs[w.Class] += p.GPUDevices()
					}
				}
			}
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
		state state.WorkState
		kind  wire.WorkKind
	}
	work := map[workKey]int{}
	pending := map[[2]string]int{}
	for _, w := range ws {
		reason := ""
		switch {
		case w.canceling:
		case w.state == state.StateWaitingForServices:
			reason = string(wire.ReasonServices)
		default:
			// The codes users see (docs/jobs.md): why it waits, or why
			// running work has fewer processes than it wants.
			if wt, ok := h.orch.Waiting(w.id); ok {
				switch {
				case wt.Reason != "":
					reason = string(reasonCode(wt.Code))
				case wt.HeldCode != rm.WaitNone:
					reason = string(reasonCode(wt.HeldCode))
				}
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
		out.Work = append(out.Work, web.WorkCount{State: string(k.state), Kind: k.kind, N: n})
	}
	for k, n := range pending {
		out.Pending = append(out.Pending, web.PendingCount{Class: k[0], Reason: k[1], N: n})
	}
	for cl, n := range classGPUs {
		out.ClassGPUs = append(out.ClassGPUs, web.ClassGPUs{Class: cl, GPUs: n})
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
		out.Completed = append(out.Completed, web.CompletedCount{Kind: k.Kind, Reason: string(k.Completion), N: n})
	}
	return out
}
