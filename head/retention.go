package head

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// Retention says how long finished work is kept (docs/operations.md,
// "Retention and accounting"; the head.retention keys of the agent's
// config). Each time counts from the end of the work.
type Retention struct {
	// Work is how long finished work stays in the live state: `ducc jobs
	// --all`, `ducc show` with its processes.
	Work time.Duration
	// Results is how long a job's items and results stay (`ducc results`);
	// at least Work.
	Results time.Duration
	// History is how long the accounting record stays (`ducc history`); at
	// least Results.
	History time.Duration
}

// Default retention times (head.retention.*).
const (
	DefaultRetainWork    = time.Hour
	DefaultRetainResults = 24 * time.Hour
	DefaultRetainHistory = 30 * 24 * time.Hour
)

// WithDefaults fills the times left zero (a default is raised to the time
// before it when that is longer).
func (r Retention) WithDefaults() Retention {
	if r.Work <= 0 {
		r.Work = DefaultRetainWork
	}
	if r.Results <= 0 {
		r.Results = max(DefaultRetainResults, r.Work)
	}
	if r.History <= 0 {
		r.History = max(DefaultRetainHistory, r.Results)
	}
	return r
}

// Validate checks that each time is positive and that results outlive the
// work and records outlive the results.
func (r Retention) Validate() error {
	switch {
	case r.Work <= 0 || r.Results <= 0 || r.History <= 0:
		return fmt.Errorf("head.retention: every time must be more than zero")
	case r.Results < r.Work:
		return fmt.Errorf("head.retention.results %v: must be at least head.retention.work (%v)", r.Results, r.Work)
	case r.History < r.Results:
		return fmt.Errorf("head.retention.history %v: must be at least head.retention.results (%v)", r.History, r.Results)
	}
	return nil
}

// purgeInterval is the least time between two purges: a tenth of the
// shortest retention time, between a second and a minute, so that the
// work ending over a while is purged by one Raft entry.
func (r Retention) purgeInterval() time.Duration {
	return min(max(r.Work/10, time.Second), time.Minute)
}

// cutoffs are the purge's cut-off times for a leader's now.
func (r Retention) cutoffs(now time.Time) *state.Purge {
	return &state.Purge{
		Work:    now.Add(-r.Work).UnixMilli(),
		Results: now.Add(-r.Results).UnixMilli(),
		History: now.Add(-r.History).UnixMilli(),
	}
}

// purgeDue reports whether a purge at now would remove something, and if
// not, when one would (ok false: nothing is finished).
func (h *Head) purgeDue(now time.Time) (due bool, at time.Time, ok bool) {
	r := h.cfg.Retention
	var ms int64
	h.cfg.FSM.View(func(v *state.View) {
		ms, ok = v.NextPurge(r.Work.Milliseconds(), r.Results.Milliseconds(), r.History.Milliseconds())
	})
	if !ok {
		return false, time.Time{}, false
	}
	at = time.UnixMilli(ms)
	return !at.After(now), at, true
}

// purge applies one purge with the cut-off times of now.
func (h *Head) purge(ctx context.Context, now time.Time) (int, error) {
	res, err := h.cfg.Apply.Apply(ctx, state.Command{Type: state.CmdPurge, Time: now.UnixMilli(), Purge: h.cfg.Retention.cutoffs(now)})
	if err != nil {
		return 0, fmt.Errorf("purge: %w", err)
	}
	if len(res) != 1 || res[0].Err != nil {
		return 0, fmt.Errorf("purge: %v", res)
	}
	return res[0].Count, nil
}

// releaseEvery is how often, at most, the head hands the memory a purge
// freed back to the system (Config.ReleaseMemory).
const releaseEvery = time.Minute

// retain purges finished work for the term, until ctx ends: when the
// oldest finished work, held results or record is due, at most once per
// purge interval. With nothing finished it waits for work to end
// (SchedulingChanged announces that); otherwise it sleeps until the next
// is due or the interval passed, and then only reads the front of three
// queues: an idle head applies nothing. After a purge that removed
// something, and at most once per releaseEvery, it returns the freed
// memory to the system: the Go runtime would keep the pages of a heap
// that held a few large jobs for many minutes.
func (h *Head) retain(ctx context.Context) {
	interval := h.cfg.Retention.purgeInterval()
	release := h.cfg.ReleaseMemory
	if release == nil {
		release = debug.FreeOSMemory
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	var released time.Time // when memory was last released
	freed := false         // a purge removed something since then
	for {
		changed := h.cfg.FSM.SchedulingChanged()
		now := h.cfg.Now()
		if freed && now.Sub(released) >= releaseEvery {
			release()
			released, freed = now, false
		}
		due, at, ok := h.purgeDue(now)
		var wake <-chan struct{}
		next := interval
		switch {
		case due:
			if n, err := h.purge(ctx, now); err != nil {
				if ctx.Err() != nil {
					return
				}
				h.log.Warn("cannot purge finished work", "err", err)
			} else {
				h.log.Debug("purged finished work", "removed", n)
				freed = freed || n > 0
			}
		case ok:
			// Look again at least every interval: the clock is the head's
			// (injected), the timer is not.
			next = min(max(at.Sub(now), 0)+time.Millisecond, interval)
		case !freed:
			wake, next = changed, 0 // nothing to do until work ends
		}
		if freed {
			// Come back when the release is due (by the head's clock).
			next = min(next, max(releaseEvery-now.Sub(released), time.Millisecond))
		}
		if next > 0 {
			t.Reset(next)
		} else {
			t.Stop()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
	}
}

// purgedInfo describes purged work from its accounting record: what
// `ducc show` and `ducc wait` answer once the work left the live state.
func purgedInfo(x *state.Record) wire.WorkInfo {
	info := wire.WorkInfo{
		ID: x.ID, Kind: x.Kind, User: x.User, Class: x.Class, State: string(state.StateCompleted), Reason: x.Reason,
		Memory: x.Memory, SubmittedAt: x.SubmittedAt, StartedAt: x.StartedAt, EndedAt: x.EndedAt,
		ExitCode: x.ExitCode, Description: x.Description, Completion: string(x.Completion), Ended: true,
		PurgedAt: x.WorkPurgedAt,
	}
	if len(x.Nodes) > 0 {
		info.Node = x.Nodes[len(x.Nodes)-1]
	}
	if x.Kind == wire.WorkJob {
		info.Job = &wire.JobStats{Total: x.Items, Done: x.Done, Failed: x.Failed, Retried: x.Retried}
	}
	return info
}

// purgedResults is the error of `ducc results` for a job whose items and
// results were dropped.
func purgedResults(x *state.Record, ret Retention) error {
	return wire.Errorf(wire.CodeUsage,
		"the items and results of job %d were purged at %s, %s after it ended (head.retention.results); "+
			"an administrator can keep them longer by raising head.retention.results in the head's config; "+
			"its accounting record stays: ducc history --since %s",
		x.ID, time.UnixMilli(x.ItemsPurgedAt).Format(time.DateTime), units.FormatDuration(ret.Results),
		time.UnixMilli(x.EndedAt).Format(time.DateOnly))
}
