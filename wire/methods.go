package wire

import (
	"slices"
	"strings"
	"sync"
)

// Callers says who may call a method; a method may allow several.
type Callers uint8

const (
	// FromCLI methods are served on the local API socket (POST
	// /v1/<method>) and forwarded by the agent to the head.
	FromCLI Callers = 1 << iota
	// FromAgent methods are sent by agents (or their feeders) to the head
	// and are not on the local API socket.
	FromAgent
	// FromHead methods are sent by the head to an agent, which handles
	// them itself.
	FromHead
)

// Method describes one RPC method: its name, its request and reply types,
// who may call it and whether it may be sent again to a new head.
type Method struct {
	Name string
	// Callers says who may call the method.
	Callers Callers
	// ReadOnly methods change nothing (or repeating them is harmless, as
	// for a process report), so a caller may send them again to the next
	// head when the head changed while it handled them.
	ReadOnly bool
	// NewRequest and NewReply return pointers to new, empty values of
	// the request and reply body types.
	NewRequest func() any
	NewReply   func() any
}

// ToHead reports whether the head serves the method (agents serve the
// FromHead methods).
func (m Method) ToHead() bool { return m.Callers&(FromCLI|FromAgent) != 0 }

// OnSocket reports whether the local API socket serves the method.
func (m Method) OnSocket() bool { return m.Callers&FromCLI != 0 }

// newOf returns a constructor of *T.
func newOf[T any]() func() any { return func() any { return new(T) } }

// methodIndex is the method table and its index by name, built once.
// LookupMethod and Methods hand out copies, so nobody can change it.
var methodIndex = sync.OnceValues(func() ([]Method, map[string]int) {
	table := methodTable()
	byName := make(map[string]int, len(table))
	for i, m := range table {
		byName[m.Name] = i
	}
	return table, byName
})

// methodTable is the one list of RPC methods.
func methodTable() []Method {
	m := func(name string, callers Callers, readOnly bool, req, reply func() any) Method {
		return Method{Name: name, Callers: callers, ReadOnly: readOnly, NewRequest: req, NewReply: reply}
	}
	const ro, rw = true, false
	return []Method{
		// Work: managed reservations, jobs, reservations.
		m(MethodRun, FromCLI, rw, newOf[RunRequest](), newOf[SubmitReply]()),
		m(MethodCancel, FromCLI, rw, newOf[CancelRequest](), newOf[WorkInfo]()),
		m(MethodJobs, FromCLI, ro, newOf[ListRequest](), newOf[WorkList]()),
		m(MethodShow, FromCLI, ro, newOf[IDRequest](), newOf[WorkInfo]()),
		m(MethodWait, FromCLI, ro, newOf[WaitRequest](), newOf[WorkInfo]()),
		m(MethodSubmit, FromCLI, rw, newOf[SubmitJobRequest](), newOf[SubmitReply]()),
		m(MethodItems, FromCLI, rw, newOf[ItemsRequest](), newOf[Empty]()),
		m(MethodResults, FromCLI, ro, newOf[ResultsRequest](), newOf[ResultsReply]()),
		m(MethodReserve, FromCLI, rw, newOf[ReserveRequest](), newOf[SubmitReply]()),
		m(MethodHistory, FromCLI, ro, newOf[HistoryRequest](), newOf[HistoryReply]()),
		// The cluster.
		m(MethodNodes, FromCLI, ro, newOf[Empty](), newOf[NodeList]()),
		m(MethodStatus, FromCLI, ro, newOf[Empty](), newOf[StatusInfo]()),
		m(MethodClasses, FromCLI, ro, newOf[Empty](), newOf[ClassList]()),
		m(MethodReconfigure, FromCLI, rw, newOf[ReconfigureRequest](), newOf[ClassList]()),
		m(MethodNodeAdmin, FromCLI, rw, newOf[NodeAdminRequest](), newOf[NodeList]()),
		m(MethodRemoveServer, FromCLI, rw, newOf[RemoveServerRequest](), newOf[RemoveServerReply]()),
		// Services.
		m(MethodServiceRegister, FromCLI, rw, newOf[ServiceRegisterRequest](), newOf[SubmitReply]()),
		m(MethodServiceControl, FromCLI, rw, newOf[ServiceControlRequest](), newOf[ServiceInfo]()),
		m(MethodServiceQuery, FromCLI, ro, newOf[ServiceQueryRequest](), newOf[ServiceList]()),
		// The dashboard.
		m(MethodWebToken, FromCLI, ro, newOf[WebTokenRequest](), newOf[WebTokenReply]()),
		m(MethodCharts, FromCLI, ro, newOf[ChartsRequest](), newOf[ChartsReply]()),
		// Agent → head.
		m(MethodReport, FromAgent, ro, newOf[Report](), newOf[Empty]()),
		m(MethodExchange, FromAgent, rw, newOf[ExchangeRequest](), newOf[ExchangeReply]()),
		m(MethodDriver, FromAgent, rw, newOf[DriverRequest](), newOf[DriverReply]()),
		m(MethodRaftJoin, FromAgent, rw, newOf[Empty](), newOf[Empty]()),
		m(MethodLogAccess, FromAgent, ro, newOf[IDRequest](), newOf[LogAccess]()),
		// Head → agent.
		m(MethodDesired, FromHead, rw, newOf[DesiredState](), newOf[Empty]()),
		m(MethodPingRun, FromHead, rw, newOf[PingRunRequest](), newOf[PingRunReply]()),
	}
}

// LookupMethod returns the method called name.
func LookupMethod(name string) (Method, bool) {
	table, byName := methodIndex()
	i, ok := byName[name]
	if !ok {
		return Method{}, false
	}
	return table[i], true
}

// Methods returns every RPC method.
func Methods() []Method {
	table, _ := methodIndex()
	return slices.Clone(table)
}

// Error and exit codes. RPC errors carry them (Response.Code, CodedError)
// and the ducc command exits with them.
const (
	CodeOK          = 0 // success
	CodeError       = 1 // the work or the command failed; anything else
	CodeUsage       = 2 // bad input: unknown class, malformed request, ...
	CodeUnreachable = 3 // the head (or the peer) cannot be reached
	// CodeMemoryCap: 'ducc run' and 'ducc wait' of a managed reservation
	// whose process exited 0 while the OOM killer killed processes of its
	// tree at the memory cap. It is what a shell reports for a process
	// killed by SIGKILL (128 + 9), the code of a process that was itself
	// killed at the cap.
	CodeMemoryCap = 137
)

// notHeadText is in the answer of a peer asked to act as head that is
// not (any more); IsNotHead recognizes it after the trip over the wire.
const notHeadText = "is not the head"

// NotHead is the error of a peer, named node, asked to act as head that
// is not (any more). The request did not run, so it may be sent to the
// next head.
func NotHead(node string) *CodedError {
	return Errorf(CodeUnreachable, "%s %s", node, notHeadText)
}

// IsNotHead reports whether err is (or carries the text of) a NotHead
// error.
func IsNotHead(err error) bool {
	return err != nil && strings.Contains(err.Error(), notHeadText)
}
