package web

import (
	"context"
	"fmt"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// Source fetches data from the head; the agent implements it by
// forwarding to the head. Methods used: wire.MethodJobs (wire.ListRequest
// → wire.WorkList), wire.MethodShow (wire.IDRequest → wire.WorkInfo),
// wire.MethodNodes (wire.Empty → wire.NodeList), wire.MethodStatus
// (wire.Empty → wire.StatusInfo), wire.MethodClasses,
// wire.MethodServiceQuery and wire.MethodResults.
//
// c is the user the dashboard identified (web.private with a token or a
// trusted proxy's header), or the zero Caller for an anonymous request; the
// head decides from it what is private to whom.
type Source interface {
	Call(ctx context.Context, c wire.Caller, method string, req, resp any) error
}

// callTimeout bounds one call to the head from a page, an API request or
// a scrape.
const callTimeout = 5 * time.Second

// fetcher wraps a Source with typed calls and error context.
type fetcher struct{ src Source }

func (f fetcher) call(ctx context.Context, c wire.Caller, method string, req, resp any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := f.src.Call(ctx, c, method, req, resp); err != nil {
		return fmt.Errorf("ask the head for %s: %w", method, err)
	}
	return nil
}

// For an anonymous request the dashboard shows nothing private even if
// the head sent it (the head sends nothing private to a caller without a
// user name): no arguments of work, no environment or arguments of
// services; jobs, show and services redact what they return. For an
// identified user the head has already redacted what is not theirs to see
// (the same rule as for `ducc show`), so the answer is passed on.

func (f fetcher) jobs(ctx context.Context, c wire.Caller, r wire.ListRequest) (wire.WorkList, error) {
	var out wire.WorkList
	err := f.call(ctx, c, wire.MethodJobs, r, &out)
	if c.User == "" {
		for i := range out.Work {
			out.Work[i].Redact()
		}
	}
	return out, err
}

func (f fetcher) show(ctx context.Context, c wire.Caller, id uint64) (wire.WorkInfo, error) {
	var out wire.WorkInfo
	err := f.call(ctx, c, wire.MethodShow, wire.IDRequest{ID: id}, &out)
	if c.User == "" {
		out.Redact()
	}
	return out, err
}

func (f fetcher) services(ctx context.Context, c wire.Caller, r wire.ServiceQueryRequest) (wire.ServiceList, error) {
	var out wire.ServiceList
	err := f.call(ctx, c, wire.MethodServiceQuery, r, &out)
	if c.User == "" {
		for i := range out.Services {
			out.Services[i].Redact()
		}
	}
	return out, err
}

// results are a job's item outcomes; the head refuses callers who may
// not read them, anonymous ones included.
func (f fetcher) results(ctx context.Context, c wire.Caller, r wire.ResultsRequest) (wire.ResultsReply, error) {
	var out wire.ResultsReply
	if c.User == "" {
		return out, wire.Errorf(wire.CodeUsage, "the results of work %d are private to its owner, those it is shared with and administrators", r.ID)
	}
	err := f.call(ctx, c, wire.MethodResults, r, &out)
	return out, err
}

func (f fetcher) nodes(ctx context.Context) (wire.NodeList, error) {
	var out wire.NodeList
	err := f.call(ctx, wire.Caller{}, wire.MethodNodes, wire.Empty{}, &out)
	return out, err
}

func (f fetcher) status(ctx context.Context) (wire.StatusInfo, error) {
	var out wire.StatusInfo
	err := f.call(ctx, wire.Caller{}, wire.MethodStatus, wire.Empty{}, &out)
	return out, err
}
