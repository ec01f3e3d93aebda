package orch

import (
	"time"

	"github.com/ducc-project/ducc/head/state"
)

// Policy decides placements. It must be a pure function of its input; the
// production policy wraps head/rm.
type Policy interface {
	Schedule(now time.Time, nodes []Node, active []*state.Work) Plan
}

// Plan is what one scheduling cycle decided.
type Plan struct {
	Starts  []Start
	Stops   []Stop
	Fail    []Fail
	Pending map[uint64]string // work id → human reason it waits
}

// Start places one new process of a piece of work.
type Start struct {
	WorkID uint64
	Node   string
	Shares int
	Memory int64 // the cgroup cap, shares × quantum
	// Instance is the service instance id (services only).
	Instance int
}

// Stop asks for one process to be stopped.
type Stop struct {
	WorkID uint64
	ProcID string
	Reason string
}

// Fail ends a piece of work that can never run.
type Fail struct {
	WorkID     uint64
	Completion string
	Reason     string
}
