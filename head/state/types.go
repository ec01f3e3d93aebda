package state

import (
	"context"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// WorkState is the state of a piece of work (docs/jobs.md; managed
// reservations use a subset). It is stored as its name, a CBOR text
// string, as the plain strings before it were.
type WorkState string

// Work states.
const (
	StateReceived            WorkState = "Received"
	StateWaitingForServices  WorkState = "WaitingForServices"
	StateWaitingForResources WorkState = "WaitingForResources"
	StateAssigned            WorkState = "Assigned"
	StateInitializing        WorkState = "Initializing"
	StateRunning             WorkState = "Running"
	StateCompleting          WorkState = "Completing"
	StateCompleted           WorkState = "Completed"

	// StateWaitingForDriver: a job's driver process is being placed, started
	// or initialized (docs/jobs.md, "Driver process protocol"); it comes
	// before WaitingForResources.
	StateWaitingForDriver WorkState = "WaitingForDriver"
)

func (s WorkState) String() string { return string(s) }

// Completion is how a piece of work ended (docs/jobs.md), "" while it
// has not: wire.Completion, the one list of the reasons, stored as its
// name, a CBOR text string.
type Completion = wire.Completion

// Completion reasons (wire's).
const (
	CompletionEndOfJob         = wire.CompletionEndOfJob
	CompletionError            = wire.CompletionError
	CompletionCanceledByUser   = wire.CompletionCanceledByUser
	CompletionCanceledByAdmin  = wire.CompletionCanceledByAdmin
	CompletionResourcesUnavail = wire.CompletionResourcesUnavail
	CompletionLaunchFailure    = wire.CompletionLaunchFailure
	CompletionProgramExit      = wire.CompletionProgramExit
	CompletionProcessFailure   = wire.CompletionProcessFailure
	CompletionServicesUnavail  = wire.CompletionServicesUnavail
	CompletionNoWorkItemsFound = wire.CompletionNoWorkItemsFound
	CompletionCanceledByDriver = wire.CompletionCanceledByDriver
	CompletionInitFailure      = wire.CompletionInitFailure
	CompletionCanceledBySystem = wire.CompletionCanceledBySystem
	// A job's driver process ended before it said ready, or after that
	// before its last item (docs/jobs.md).
	CompletionDriverInitFailure = wire.CompletionDriverInitFailure
	CompletionDriverFailed      = wire.CompletionDriverFailed
)

// Work is one piece of work: a job, a service, a managed reservation or a
// reservation.
type Work struct {
	ID          uint64        `cbor:"1,keyasint"`
	Kind        wire.WorkKind `cbor:"2,keyasint"`
	User        string        `cbor:"3,keyasint"`
	UID         uint32        `cbor:"4,keyasint"`
	GID         uint32        `cbor:"5,keyasint"`
	Groups      []uint32      `cbor:"6,keyasint,omitempty"`
	Home        string        `cbor:"7,keyasint,omitempty"`
	Class       string        `cbor:"8,keyasint"`
	Memory      int64         `cbor:"9,keyasint"` // requested bytes
	Path        string        `cbor:"10,keyasint,omitempty"`
	Args        []string      `cbor:"11,keyasint,omitempty"`
	Env         []string      `cbor:"12,keyasint,omitempty"`
	Dir         string        `cbor:"13,keyasint,omitempty"`
	LogDir      string        `cbor:"14,keyasint,omitempty"`
	Description string        `cbor:"15,keyasint,omitempty"`
	MachineList []string      `cbor:"16,keyasint,omitempty"`

	State       WorkState  `cbor:"17,keyasint"`
	Completion  Completion `cbor:"18,keyasint,omitempty"`
	Reason      string     `cbor:"19,keyasint,omitempty"` // durable reason (completion text)
	ExitCode    int        `cbor:"20,keyasint"`
	SubmittedAt int64      `cbor:"21,keyasint"` // unix ms
	StartedAt   int64      `cbor:"22,keyasint,omitempty"`
	EndedAt     int64      `cbor:"23,keyasint,omitempty"`
	Canceling   bool       `cbor:"24,keyasint,omitempty"`
	CancelBy    string     `cbor:"25,keyasint,omitempty"`
	Procs       []*Proc    `cbor:"26,keyasint,omitempty"`
	NextProc    int        `cbor:"27,keyasint,omitempty"`
	Job         *Job       `cbor:"28,keyasint,omitempty"`
	// Service is set for wire.WorkService: the registration and its durable
	// state (docs/services.md).
	Service *Service `cbor:"29,keyasint,omitempty"`
	// Deps are the service endpoints the work needs (service_dependency).
	Deps []string `cbor:"30,keyasint,omitempty"`
	// Umask of the work's processes, four octal digits ("0077"), as the
	// submitter's CLI sent it; "" means 0022.
	Umask string `cbor:"31,keyasint,omitempty"`
	// ShareGroup and ShareGID name the group whose members may read the
	// work's logs and results (share_with_group); "" shares with nobody.
	ShareGroup string `cbor:"40,keyasint,omitempty"`
	ShareGID   uint32 `cbor:"41,keyasint,omitempty"`
	// The GPU request of each process (a job's job processes, not its
	// driver): GPUs whole devices or a slice of GPUMemory bytes of one
	// device, of GPUModel ("" any). A reservation: a node with at least
	// GPUs devices (of GPUModel), all of which it holds.
	GPUs      int    `cbor:"42,keyasint,omitempty"`
	GPUMemory int64  `cbor:"43,keyasint,omitempty"`
	GPUModel  string `cbor:"44,keyasint,omitempty"`
}

// AsksGPUs reports whether w's processes ask GPUs.
func (w *Work) AsksGPUs() bool { return w.GPUs > 0 || w.GPUMemory > 0 }

// Ended reports whether the work has completed.
func (w *Work) Ended() bool { return w.State == StateCompleted }

// Copy returns a copy that shares nothing mutable with w, except that a
// job's items are left out (Job.NItems says how many there are): callers
// that need items read them under FSM.View.
func (w *Work) Copy() *Work {
	c := *w
	c.Procs = make([]*Proc, len(w.Procs))
	for i, p := range w.Procs {
		pc := *p
		c.Procs[i] = &pc
	}
	if w.Job != nil {
		j := *w.Job
		j.NItems, j.Items = len(w.Job.Items), nil
		c.Job = &j
	}
	if w.Service != nil {
		c.Service = w.Service.copy()
	}
	return &c
}

// JobProcs returns the job processes that have not ended: Live without
// the driver process.
func (w *Work) JobProcs() []*Proc {
	var out []*Proc
	for _, p := range w.Procs {
		if !p.Ended() && !p.IsDriver() {
			out = append(out, p)
		}
	}
	return out
}

// Driver returns the job's driver process (ended or not), or nil.
func (w *Work) Driver() *Proc {
	for _, p := range w.Procs {
		if p.IsDriver() {
			return p
		}
	}
	return nil
}

// Live returns the processes that have not ended.
func (w *Work) Live() []*Proc {
	var out []*Proc
	for _, p := range w.Procs {
		if !p.Ended() {
			out = append(out, p)
		}
	}
	return out
}

// Proc is one process of a piece of work, placed on a node.
type Proc struct {
	ID          string `cbor:"1,keyasint"` // "<work>.<n>"
	Node        string `cbor:"2,keyasint"`
	Shares      int    `cbor:"3,keyasint"`
	MemoryLimit int64  `cbor:"4,keyasint"`
	State       string `cbor:"5,keyasint"` // wire.Proc* states
	PID         int    `cbor:"6,keyasint,omitempty"`
	AssignedAt  int64  `cbor:"7,keyasint,omitempty"`
	StartedAt   int64  `cbor:"8,keyasint,omitempty"`
	EndedAt     int64  `cbor:"9,keyasint,omitempty"`
	ExitCode    int    `cbor:"10,keyasint"`
	Signal      string `cbor:"11,keyasint,omitempty"`
	OOMKilled   bool   `cbor:"12,keyasint,omitempty"`
	Reason      string `cbor:"13,keyasint,omitempty"`
	LogPath     string `cbor:"14,keyasint,omitempty"`
	Stop        bool   `cbor:"15,keyasint,omitempty"` // the head wants it stopped
	StopReason  string `cbor:"16,keyasint,omitempty"`
	// Job processes: when the worker became ready, and its item counts.
	ReadyAt int64 `cbor:"17,keyasint,omitempty"`
	InitMS  int64 `cbor:"18,keyasint,omitempty"`
	Done    int   `cbor:"19,keyasint,omitempty"`
	Errors  int   `cbor:"20,keyasint,omitempty"`
	// StopCounts: a head-requested stop that still counts as a failure
	// (initialization or item timeout).
	StopCounts bool `cbor:"21,keyasint,omitempty"`
	// Instance is the stable instance id of a service process (docs/services.md).
	Instance int `cbor:"22,keyasint,omitempty"`
	// OOMKills: processes of its tree the OOM killer killed at its memory
	// cap (wire.ProcStatus.OOMKills), recorded when it ends.
	OOMKills uint64 `cbor:"23,keyasint,omitempty"`
	// MaxRSS (bytes) and CPUSeconds of the ended process and the children
	// it waited for, as its shim measured them at exit (accounting).
	MaxRSS     int64   `cbor:"25,keyasint,omitempty"`
	CPUSeconds float64 `cbor:"24,keyasint,omitempty"`
	// Kind is wire.ProcDriver for a job's driver process; "" is the
	// ordinary process of the work's kind (wire.WorkKind.Proc).
	Kind wire.ProcKind `cbor:"26,keyasint,omitempty"`
	// GPUs are the ids (UUIDs) of the devices the process holds, as the
	// scheduler assigned them: its whole devices, the one its slice of
	// GPUSlice bytes is on (GPUDeviceMemory: that device's memory), or
	// every device of a reservation's node. They are the allocation a new
	// head rebuilds.
	GPUs            []string `cbor:"27,keyasint,omitempty"`
	GPUSlice        int64    `cbor:"28,keyasint,omitempty"`
	GPUDeviceMemory int64    `cbor:"29,keyasint,omitempty"`
	// GPUMemoryPeak is the most GPU memory the ended process used (bytes,
	// wire.ProcStatus.GPUMemoryPeak), recorded when it ends.
	GPUMemoryPeak int64 `cbor:"30,keyasint,omitempty"`
}

// GPUDevices is how many devices p holds for GPU accounting: its whole
// devices, or its slice as a fraction of its device.
func (p *Proc) GPUDevices() float64 {
	if p.GPUSlice > 0 {
		if p.GPUDeviceMemory <= 0 {
			return 0
		}
		return float64(p.GPUSlice) / float64(p.GPUDeviceMemory)
	}
	return float64(len(p.GPUs))
}

// GPUSeconds is p's GPU time up to now (unix ms; its end if it ended):
// GPUDevices × the time since it started.
func (p *Proc) GPUSeconds(now int64) float64 {
	if len(p.GPUs) == 0 || p.StartedAt == 0 {
		return 0
	}
	end := now
	if p.EndedAt != 0 {
		end = p.EndedAt
	}
	if end <= p.StartedAt {
		return 0
	}
	return p.GPUDevices() * float64(end-p.StartedAt) / 1000
}

// IsDriver reports whether p is a job's driver process.
func (p *Proc) IsDriver() bool { return p.Kind == wire.ProcDriver }

// Ended reports whether the process has finished for good.
func (p *Proc) Ended() bool {
	return p.State == wire.ProcExited || p.State == wire.ProcLaunchFailed || p.State == wire.ProcLost
}

// Applier commits commands through Raft and returns their results; the
// head server's Raft member implements it, statetest.Applier fakes it.
type Applier interface {
	Apply(ctx context.Context, cmds ...Command) ([]Result, error)
}

// LaterApplier is an Applier that can also commit commands that need not
// be durable at once: ApplyLater returns at once, the commands go with
// the next entry that an Apply starts or, at the latest after within, in
// one of their own, and then (if not nil) is told their results; it must
// not block nor call Apply. For commands whose loss is repaired by
// someone repeating them (a process's start, which the agent's
// heartbeats repeat), never for ones a caller acknowledges.
type LaterApplier interface {
	Applier
	ApplyLater(cmds []Command, within time.Duration, then func([]Result, error))
}

// NodeAdminState is the admin state of a node (docs/scheduling.md,
// Nodes): NodeNormal, NodeVariedOff or NodeQuiescing. Stored as its name,
// a CBOR text string.
type NodeAdminState string

// Node admin states.
const (
	NodeNormal    NodeAdminState = ""
	NodeVariedOff NodeAdminState = "VariedOff"
	NodeQuiescing NodeAdminState = "Quiescing"
)

func (s NodeAdminState) String() string { return string(s) }

// Assignment places a new process of a piece of work on a node.
type Assignment struct {
	Node        string `cbor:"1,keyasint"`
	Shares      int    `cbor:"2,keyasint"`
	MemoryLimit int64  `cbor:"3,keyasint"`
	Instance    int    `cbor:"4,keyasint,omitempty"` // service instance id
	// Kind is wire.ProcDriver to place a job's driver process.
	Kind wire.ProcKind `cbor:"5,keyasint,omitempty"`
	// GPUs are the devices the process gets (rm.Start.GPUs); GPUSlice the
	// bytes of its slice (0: whole devices) and GPUDeviceMemory the memory
	// of the slice's device (Proc's fields of the same names).
	GPUs            []string `cbor:"6,keyasint,omitempty"`
	GPUSlice        int64    `cbor:"7,keyasint,omitempty"`
	GPUDeviceMemory int64    `cbor:"8,keyasint,omitempty"`
}

// Result is what Apply returns for each command of a batch.
type Result struct {
	ID     uint64 // the id a submission got
	ProcID string // the process an assignment created
	Count  int    // what a purge removed: work, held items and records
	Err    error
}
