package server

import (
	"context"

	"github.com/ducc-project/ducc/head"
	"github.com/ducc-project/ducc/wire"
)

// Dispatch runs the head method called method on h with a decoded request
// body, a pointer of the type wire.LookupMethod(method).NewRequest gives.
// It is the one routing switch of the head; Server.Handle decodes and
// calls it, and tests may call it with a head of their own.
// wire.MethodRaftJoin and wire.MethodRemoveServer are not here: they
// concern the Raft group, not the head of one term (Server.Handle answers
// them).
func Dispatch(ctx context.Context, h *head.Head, method string, c wire.Caller, req any) (any, error) {
	switch method {
	case wire.MethodRun:
		return h.RunManaged(ctx, c, *req.(*wire.RunRequest))
	case wire.MethodCancel:
		return h.Cancel(ctx, c, *req.(*wire.CancelRequest))
	case wire.MethodShow:
		return h.Show(c, req.(*wire.IDRequest).ID)
	case wire.MethodWait:
		return h.Wait(ctx, c, *req.(*wire.WaitRequest))
	case wire.MethodJobs:
		return h.List(c, *req.(*wire.ListRequest)), nil
	case wire.MethodNodes:
		return h.Nodes(), nil
	case wire.MethodStatus:
		return h.Status(), nil
	case wire.MethodSubmit:
		return h.SubmitJob(ctx, c, *req.(*wire.SubmitJobRequest))
	case wire.MethodItems:
		return h.AddItems(ctx, c, *req.(*wire.ItemsRequest))
	case wire.MethodResults:
		return h.Results(c, *req.(*wire.ResultsRequest))
	case wire.MethodHistory:
		return h.History(c, *req.(*wire.HistoryRequest))
	case wire.MethodExchange:
		return h.Exchange(ctx, *req.(*wire.ExchangeRequest))
	case wire.MethodDriver:
		return h.Driver(ctx, *req.(*wire.DriverRequest))
	case wire.MethodClasses:
		return h.Classes(), nil
	case wire.MethodReserve:
		return h.Reserve(ctx, c, *req.(*wire.ReserveRequest))
	case wire.MethodReconfigure:
		return h.Reconfigure(ctx, c, *req.(*wire.ReconfigureRequest))
	case wire.MethodNodeAdmin:
		return h.NodeAdmin(ctx, c, *req.(*wire.NodeAdminRequest))
	case wire.MethodServiceRegister:
		return h.RegisterService(ctx, c, *req.(*wire.ServiceRegisterRequest))
	case wire.MethodServiceControl:
		return h.ControlService(ctx, c, *req.(*wire.ServiceControlRequest))
	case wire.MethodServiceQuery:
		return h.QueryServices(c, *req.(*wire.ServiceQueryRequest))
	case wire.MethodReport:
		return h.Report(ctx, *req.(*wire.Report))
	case wire.MethodCharts:
		return h.Charts(*req.(*wire.ChartsRequest)), nil
	case wire.MethodLogAccess:
		return h.LogAccess(c, req.(*wire.IDRequest).ID)
	}
	return nil, wire.Errorf(wire.CodeUsage, "%q is not a method of the head", method)
}
