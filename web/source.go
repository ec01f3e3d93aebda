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
// wire.MethodNodes (wire.Empty → wire.NodeList) and wire.MethodStatus
// (wire.Empty → wire.StatusInfo).
type Source interface {
	Call(ctx context.Context, method string, req, resp any) error
}

// callTimeout bounds one call to the head from a page, an API request or
// a scrape.
const callTimeout = 5 * time.Second

// fetcher wraps a Source with typed calls and error context.
type fetcher struct{ src Source }

func (f fetcher) call(ctx context.Context, method string, req, resp any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := f.src.Call(ctx, method, req, resp); err != nil {
		return fmt.Errorf("ask the head for %s: %w", method, err)
	}
	return nil
}

// The dashboard cannot tell who is looking, so it shows nothing private
// even if the head sent it (the head sends nothing private to a caller
// without a user name): no arguments of work, no environment or arguments
// of services. jobs, show and services redact what they return.

func (f fetcher) jobs(ctx context.Context, r wire.ListRequest) (wire.WorkList, error) {
	var out wire.WorkList
	err := f.call(ctx, wire.MethodJobs, r, &out)
	for i := range out.Work {
		out.Work[i].Redact()
	}
	return out, err
}

func (f fetcher) show(ctx context.Context, id uint64) (wire.WorkInfo, error) {
	var out wire.WorkInfo
	err := f.call(ctx, wire.MethodShow, wire.IDRequest{ID: id}, &out)
	out.Redact()
	return out, err
}

func (f fetcher) services(ctx context.Context, r wire.ServiceQueryRequest) (wire.ServiceList, error) {
	var out wire.ServiceList
	err := f.call(ctx, wire.MethodServiceQuery, r, &out)
	for i := range out.Services {
		out.Services[i].Redact()
	}
	return out, err
}

func (f fetcher) nodes(ctx context.Context) (wire.NodeList, error) {
	var out wire.NodeList
	err := f.call(ctx, wire.MethodNodes, wire.Empty{}, &out)
	return out, err
}

func (f fetcher) status(ctx context.Context) (wire.StatusInfo, error) {
	var out wire.StatusInfo
	err := f.call(ctx, wire.MethodStatus, wire.Empty{}, &out)
	return out, err
}
