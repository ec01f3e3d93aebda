package head

import (
	"strings"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/wire"
)

// History lists accounting records (docs/operations.md): ordinary users
// their own, root and the administrators anyone's.
func (h *Head) History(c wire.Caller, r wire.HistoryRequest) (wire.HistoryReply, error) {
	if c.User == "" {
		return wire.HistoryReply{}, wire.Errorf(wire.CodeUsage, "the history is shown to users only")
	}
	if !h.isAdmin(c) {
		if r.User != "" && r.User != c.User {
			return wire.HistoryReply{}, wire.Errorf(wire.CodeUsage,
				"only root or an administrator may see the history of other users (%s)", r.User)
		}
		r.User = c.User
	}
	// A reason the head does not know would select nothing: refuse it.
	completions := make([]string, 0, len(r.Completions))
	for _, s := range r.Completions {
		cm, ok := wire.ParseCompletion(s)
		if !ok {
			return wire.HistoryReply{}, wire.Errorf(wire.CodeUsage, "%q is not a completion reason; they are: %s", s, completionNames())
		}
		completions = append(completions, string(cm))
	}
	limit := r.Limit
	if limit <= 0 || limit > 5000 {
		limit = 5000
	}
	q := state.HistoryQuery{Since: r.Since, Until: r.Until, User: r.User, Class: r.Class, Completions: completions,
		AfterEnd: r.AfterEnd, AfterID: r.AfterID, Limit: limit, Scan: 100_000}
	var recs []state.Record
	var out wire.HistoryReply
	h.cfg.FSM.View(func(v *state.View) {
		recs, out.NextEnd, out.NextID, out.More = v.History(q)
	})
	out.Records = make([]wire.HistoryRecord, 0, len(recs))
	for _, x := range recs {
		out.Records = append(out.Records, toHistoryRecord(x))
	}
	return out, nil
}

func toHistoryRecord(x state.Record) wire.HistoryRecord {
	return wire.HistoryRecord{
		ID: x.ID, Kind: x.Kind, User: x.User, Class: x.Class, Description: x.Description,
		SubmittedAt: x.SubmittedAt, StartedAt: x.StartedAt, EndedAt: x.EndedAt, State: string(state.StateCompleted),
		Completion: string(x.Completion), Reason: x.Reason, ExitCode: x.ExitCode, Memory: x.Memory, MemoryLimit: x.MemoryLimit,
		MaxRSS: x.MaxRSS, CPUSeconds: x.CPUSeconds, Items: x.Items, Done: x.Done, Failed: x.Failed, Retried: x.Retried,
		Procs: x.Procs, Nodes: x.Nodes, NodeCount: x.NodeCount, WorkPurgedAt: x.WorkPurgedAt, ItemsPurgedAt: x.ItemsPurgedAt,
		GPUs: x.GPUs, GPUMemory: x.GPUMemory, GPUSeconds: x.GPUSeconds, GPUMemoryPeak: x.GPUMemoryPeak,
	}
}

// completionNames lists the completion reasons, for messages.
func completionNames() string {
	var names []string
	for _, c := range wire.Completions() {
		names = append(names, string(c))
	}
	return strings.Join(names, ", ")
}
