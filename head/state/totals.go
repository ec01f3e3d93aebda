package state

import "github.com/ducc-project/ducc/wire"

// Totals counts events this replica applied since it started: the
// cluster's counters for Prometheus (the head exports them, web.Cluster).
// They are not part of the state: not in snapshots, starting from zero in
// every process, the way a Prometheus counter resets when its process
// restarts. Every replica counts the same entries, so the head that
// exports them after a failover carries on from about where the last one
// stopped.
type Totals struct {
	ItemsFailed    uint64 // items that failed for good (retries used up)
	ItemsRetried   uint64 // failed attempts that were tried again
	ItemsPreempted uint64 // items taken back from a process that ended before answering them
	// Completed counts work that ended, by kind and completion reason
	// (CompletionEndOfJob, ...).
	Completed map[CompletionKey]uint64
}

// CompletionKey is a kind of work and how it ended.
type CompletionKey struct {
	Kind       wire.WorkKind
	Completion Completion
}

// Totals returns a copy of the event counters.
func (v *View) Totals() Totals {
	t := v.f.totals
	t.Completed = make(map[CompletionKey]uint64, len(v.f.totals.Completed))
	for k, n := range v.f.totals.Completed {
		t.Completed[k] = n
	}
	return t
}

// completed counts work w ending with completion.
func (t *Totals) completed(w *Work, completion Completion) {
	if t.Completed == nil {
		t.Completed = map[CompletionKey]uint64{}
	}
	t.Completed[CompletionKey{Kind: w.Kind, Completion: completion}]++
}
