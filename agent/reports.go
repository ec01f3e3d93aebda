package agent

import (
	"context"
	"sync"

	"github.com/ducc-project/ducc/wire"
)

// reporter queues process states for the head, sent by one goroutine
// (reportLoop) a batch at a time: states that arrive while a report is in
// flight go together in the next one, and a process's newer state
// replaces its older one. A short process's start and end then often
// cost the head one Raft commit instead of two, several processes' ends
// share one, and the reconcile loop does not wait for the head before it
// starts the next process. Nothing is lost when a report fails: the
// heartbeats repeat running processes and, until the head acknowledges
// them, ended ones.
type reporter struct {
	mu      sync.Mutex
	pending map[string]wire.ProcStatus
	order   []string // ids in pending, first queued first
	wake    chan struct{}
}

func newReporter() *reporter {
	return &reporter{pending: map[string]wire.ProcStatus{}, wake: make(chan struct{}, 1)}
}

// add queues a state. An ended state is not replaced by one of a process
// that has not ended (a late start report).
func (r *reporter) add(ps wire.ProcStatus) {
	r.mu.Lock()
	if old, ok := r.pending[ps.ID]; ok {
		if old.Ended() && !ps.Ended() {
			r.mu.Unlock()
			return
		}
	} else {
		r.order = append(r.order, ps.ID)
	}
	r.pending[ps.ID] = ps
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// take returns the queued states, first queued first, and empties the
// queue.
func (r *reporter) take() []wire.ProcStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) == 0 {
		return nil
	}
	out := make([]wire.ProcStatus, 0, len(r.order))
	for _, id := range r.order {
		out = append(out, r.pending[id])
	}
	clear(r.pending)
	r.order = r.order[:0]
	return out
}

// reportLoop sends the queued process states until ctx ends.
func (a *Agent) reportLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.reports.wake:
		}
		if batch := a.reports.take(); len(batch) > 0 {
			a.report(ctx, batch)
		}
	}
}
