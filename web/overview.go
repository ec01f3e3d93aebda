package web

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/ducc-project/ducc/wire"
)

// overviewBody is the overview page (/): the cluster at a glance, each
// part linked to its list.
type overviewBody struct {
	Status wire.StatusInfo
	// Nodes: up, all, and the names of those not up.
	NodesUp, NodesAll int
	NotUp             []wire.NodeInfo
	// Memory of the up nodes: schedulable, held by work (their shares
	// used), free to schedule, and in use as measured.
	MemSchedulable, MemAllocated, MemFree, MemUsed int64
	SharesUsed, Shares                             int
	// Work is the active work by state, most first; Ended how much
	// ended work the head still keeps.
	Work  []stateCount
	Ended int
	// Pending groups waiting or held-back work by reason code.
	Pending []pendingReason
	// Services by state.
	Services     []stateCount
	ServiceCount int
	// Failures are the latest ended work that failed, newest first.
	Failures []wire.WorkInfo
}

// stateCount is how many pieces of work (or services) are in one state,
// and of which kinds.
type stateCount struct {
	State string
	N     int
	Kinds string // "2 job, 1 managed"
}

// pendingReason is the work that waits (or runs held back) for one
// reason: how many, the ids (the first few), and one reason in words.
type pendingReason struct {
	Code    wire.ReasonCode
	Held    bool // running, held below what it could use
	IDs     []uint64
	More    int // ids not listed
	Example string
}

// maxOverviewFailures and maxReasonIDs bound the overview's lists.
const (
	maxOverviewFailures = 5
	maxReasonIDs        = 5
)

// failed reports whether ended work failed: it did not end as asked
// (EndOfJob, a program's exit 0, a cancel), or a job lost items.
func failed(w wire.WorkInfo) bool {
	if !w.Ended {
		return false
	}
	switch {
	case w.Completion == "EndOfJob":
		return w.Job != nil && w.Job.Failed > 0
	case w.Completion == "ProgramExit":
		return w.ExitCode != 0
	case strings.HasPrefix(w.Completion, "CanceledBy") && w.Completion != "CanceledBySystem" && w.Completion != "CanceledByDriver":
		return false
	}
	return true
}

func fillOverview(s *server, r *http.Request, d *pageData) error {
	d.Title, d.API = "Overview", "/api/v1/jobs?all=1"
	b := &overviewBody{}
	d.Body = b
	ctx, c := r.Context(), callerOf(r)
	st, err := s.data.status(ctx)
	if err != nil {
		return err
	}
	b.Status = st
	nodes, err := s.data.nodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes.Nodes {
		b.NodesAll++
		if n.State != "Up" {
			b.NotUp = append(b.NotUp, n)
			continue
		}
		b.NodesUp++
		b.MemSchedulable += n.MemSchedulable
		b.MemUsed += n.MemUsed
		b.SharesUsed += n.SharesUsed
		b.Shares += n.Shares
		if n.Shares > 0 {
			b.MemAllocated += n.MemSchedulable * int64(min(n.SharesUsed, n.Shares)) / int64(n.Shares)
		}
	}
	b.MemFree = b.MemSchedulable - b.MemAllocated
	slices.SortFunc(b.NotUp, func(x, y wire.NodeInfo) int { return cmp.Compare(x.Name, y.Name) })

	list, err := s.data.jobs(ctx, c, wire.ListRequest{All: true})
	if err != nil {
		return err
	}
	byState := map[string]map[wire.WorkKind]int{}
	byReason := map[string]*pendingReason{}
	for _, w := range list.Work {
		if w.Ended {
			b.Ended++
			if failed(w) {
				b.Failures = append(b.Failures, w)
			}
			continue
		}
		if byState[w.State] == nil {
			byState[w.State] = map[wire.WorkKind]int{}
		}
		byState[w.State][w.Kind]++
		code, why, held := w.ReasonCode, w.Reason, false
		if code == "" && w.HeldCode != "" {
			code, why, held = w.HeldCode, w.Held, true
		}
		if code == "" {
			continue
		}
		key := string(code)
		if held {
			key += "/held"
		}
		p := byReason[key]
		if p == nil {
			p = &pendingReason{Code: code, Held: held, Example: why}
			byReason[key] = p
		}
		if len(p.IDs) < maxReasonIDs {
			p.IDs = append(p.IDs, w.ID)
		} else {
			p.More++
		}
	}
	b.Work = countStates(byState)
	for _, p := range byReason {
		b.Pending = append(b.Pending, *p)
	}
	slices.SortFunc(b.Pending, func(x, y pendingReason) int {
		return cmp.Or(cmp.Compare(len(y.IDs)+y.More, len(x.IDs)+x.More), cmp.Compare(x.Code, y.Code), cmp.Compare(boolInt(x.Held), boolInt(y.Held)))
	})
	slices.SortFunc(b.Failures, func(x, y wire.WorkInfo) int {
		return cmp.Or(cmp.Compare(y.EndedAt, x.EndedAt), cmp.Compare(y.ID, x.ID))
	})
	if len(b.Failures) > maxOverviewFailures {
		b.Failures = b.Failures[:maxOverviewFailures]
	}

	svcs, err := s.data.services(ctx, c, wire.ServiceQueryRequest{})
	if err != nil {
		return err
	}
	svcState := map[string]int{}
	for _, sv := range svcs.Services {
		svcState[sv.State]++
	}
	b.ServiceCount = len(svcs.Services)
	for st, n := range svcState {
		b.Services = append(b.Services, stateCount{State: st, N: n})
	}
	sortCounts(b.Services)
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// countStates turns state → kind → count into rows, the largest first.
func countStates(m map[string]map[wire.WorkKind]int) []stateCount {
	var out []stateCount
	for st, kinds := range m {
		row := stateCount{State: st}
		var parts []string
		for _, k := range []wire.WorkKind{wire.WorkJob, wire.WorkManaged, wire.WorkReservation, wire.WorkService} {
			if n := kinds[k]; n > 0 {
				row.N += n
				parts = append(parts, plural(n, kindNoun(k)))
			}
		}
		row.Kinds = strings.Join(parts, ", ")
		out = append(out, row)
	}
	sortCounts(out)
	return out
}

// sortCounts puts the largest count first, then by state.
func sortCounts(cs []stateCount) {
	slices.SortFunc(cs, func(x, y stateCount) int { return cmp.Or(cmp.Compare(y.N, x.N), cmp.Compare(x.State, y.State)) })
}

// kindNoun names one piece of work of kind k in a count ("2 jobs").
func kindNoun(k wire.WorkKind) string {
	switch k {
	case wire.WorkManaged:
		return "managed reservation"
	default:
		return string(k)
	}
}

// plural is "1 job", "2 jobs".
func plural(n int, noun string) string {
	s := strconv.Itoa(n) + " " + noun
	if n != 1 {
		s += "s"
	}
	return s
}
