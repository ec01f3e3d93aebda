package rm

import "time"

// WorkKind says what a piece of work is (docs/scheduling.md).
type WorkKind int

// Kinds of work.
const (
	Job                WorkKind = iota // many processes, FAIR_SHARE, FIXED_SHARE or RESERVE (whole machines)
	Service                            // one service instance: one process, FIXED_SHARE
	ManagedReservation                 // `ducc run`: one process, FIXED_SHARE
	Reservation                        // held memory, nothing started: a whole machine in a RESERVE class, shares in a FIXED_SHARE class
)

func (k WorkKind) String() string {
	switch k {
	case Job:
		return "job"
	case Service:
		return "service"
	case ManagedReservation:
		return "managed reservation"
	case Reservation:
		return "reservation"
	}
	return "work"
}

// NodeState is the schedulability of a node.
type NodeState int

// Node states. Only Up nodes receive new work.
const (
	NodeUp        NodeState = iota
	NodeDown                // no heartbeats: capacity gone, processes written off (reservations stay)
	NodeVariedOff           // drained of fair-share work, no new work
	NodeQuiescing           // no new work, running work stays
)

func (s NodeState) String() string {
	return [...]string{"up", "down", "varied-off", "quiescing"}[s]
}

// ProcState is the life stage of a process.
type ProcState int

// Process states.
const (
	ProcStarting ProcState = iota
	ProcInitializing
	ProcRunning
	ProcStopping // still occupies its node until it is gone
)

// Node is one machine as the scheduler sees it.
type Node struct {
	Name string
	// Pool overrides the nodepool resolved from the config's node globs.
	Pool string
	// MemSchedulable is memory available to ducc work in bytes (MemTotal less
	// system processes and memory_reserved).
	MemSchedulable int64
	State          NodeState
	// GPUs are the node's schedulable GPU devices (MIG instances count as
	// devices of their own), in the order the agent lists them.
	GPUs []GPU
}

// GPU is one schedulable GPU device of a node.
type GPU struct {
	ID     string // the device's UUID (what CUDA_VISIBLE_DEVICES names)
	Memory int64  // bytes
	// Model is the device's model (NVML's name); a work that names a
	// model (Work.GPUModel) gets only devices of it.
	Model string
}

// Proc is one process of a piece of work (or the hold of a reservation).
type Proc struct {
	ID            string // "<work id>.<n>"
	Node          string
	Shares        int // quanta held on Node; 0 means the work's order
	State         ProcState
	StartedAt     time.Time
	InitializedAt time.Time // zero until initialized
	// GPUs are the ids of the devices the process holds (Start.GPUs of its
	// start): whole devices, or the one device its slice is on.
	GPUs []string
}

// Work is anything the scheduler allocates memory to: a job, a service
// instance, a managed reservation or a reservation.
type Work struct {
	ID          uint64
	Kind        WorkKind
	User        string
	Groups      []string
	Class       string // resolved class name; unknown classes stay pending
	Memory      int64  // bytes per process (reservations: the machine size); 0 = default_memory
	SubmitTime  time.Time
	MachineList []string // restrict placement to these nodes (nil = any)

	// GPU request per process (at most one of the two): GPUs whole devices,
	// all on one node, or a slice of GPUMemory bytes of one device.
	GPUs      int
	GPUMemory int64
	// GPUModel restricts the request (and a reservation's GPUs) to
	// devices of that model; "" takes any.
	GPUModel string

	// ServiceID groups instances of one service so they are spread over nodes.
	ServiceID string
	Instance  int

	// Job demand (ignored for other kinds).
	ItemsRemaining  int           // items not yet finished (queued + in flight)
	Pipelines       int           // process_pipeline_count; 0 = 1
	DeploymentsMax  int           // process_deployments_max; 0 = unlimited
	InitFailures    int           // processes that failed to initialize
	InitFailuresCap int           // process_initialization_failures_cap; 0 = no cap
	EverInitialized bool          // some process of the job has initialized
	MeanInitTime    time.Duration // mean process initialization time
	MeanItemTime    time.Duration // mean time per work item

	Procs []Proc
}

// StopReason says why a process is stopped.
type StopReason int

// Stop reasons.
const (
	Preempted       StopReason = iota // fair share taken back (shrink)
	Evicted                           // space needed by better-priority work, or node varied off
	Defragmentation                   // space made for a needy job
	JobDone                           // no longer wanted
)

func (r StopReason) String() string {
	return [...]string{"preempted", "evicted", "defragmentation", "job done"}[r]
}

// Start asks for one new process (or, for a reservation, the hold of a node).
type Start struct {
	WorkID uint64
	Node   string
	Shares int
	Memory int64 // Shares × quantum: the cgroup memory cap
	// GPUs are the ids of the devices the process gets (nil: none): its
	// whole devices, the device of its slice, or every device of a node a
	// whole-machine reservation holds.
	GPUs   []string
	Reason string
}

// Stop asks for one process to be stopped: SIGTERM, then SIGKILL after Grace.
type Stop struct {
	ProcID string
	WorkID uint64
	Node   string
	Reason StopReason
	Text   string
	Grace  time.Duration
}

// Pending explains why work has fewer processes than it wants after this
// plan (Have counts planned starts).
type Pending struct {
	WorkID uint64
	Have   int
	Want   int
	Code   WaitCode
	Reason string
}

// Held explains why a job wants fewer processes than its work could use
// (Max: its items over its pipelines, or process_deployments_max): a
// growth cap of its class holds it at Want. Reason says it in words.
type Held struct {
	WorkID  uint64
	Want    int
	Max     int
	Code    WaitCode
	Class   string
	Arg     int           // the cap: initialization_cap, process_initialization_failures_cap
	Items   int           // items remaining (HeldPrediction), initialization failures (HeldInitFailures)
	Horizon time.Duration // the prediction's horizon (HeldPrediction)
}

// WaitCode classifies a Pending or Held reason; the head maps each to a
// short reason code (wire.ReasonCode) shown next to the prose.
type WaitCode int

// Wait codes. The Wait* codes classify Pending, the Held* codes Held.
const (
	WaitNone           WaitCode = iota
	WaitResources               // no node has the room now
	WaitPriority                // the pool's room is held by higher-priority work
	WaitFairShare               // the class's or user's fair share gives it no more
	WaitAtShare                 // it has its whole fair share (and wants more)
	WaitOverShare               // it holds more than its fair share
	WaitPreempting              // processes of other work stop to make room
	WaitShrinking               // its processes are taken back this cycle
	WaitLimit                   // a class limit (max_allotment) holds it back
	WaitNoFit                   // no node (of the right size) can ever hold it
	WaitNoNodes                 // no node is up in its pool
	WaitBadClass                // its class is not in the configuration
	HeldPrediction              // use_prediction: fewer processes finish in time
	HeldInitialization          // initialization_cap until a process initializes
	HeldDoubling                // expand_by_doubling
	HeldInitFailures            // growth frozen by initialization failures
	WaitGPUs                    // no node has the GPUs (whole or a slice) free now
)

// Shrinking explains why work loses processes in this plan.
type Shrinking struct {
	WorkID uint64
	Procs  []string
	Reason string
}

// ClassUsage is the live demand and allocation of one class, for `ducc classes`.
type ClassUsage struct {
	Name       string
	Policy     string
	Priority   int
	Weight     int
	Pool       string
	Quantum    int64
	Guaranteed int64
	Max        int64
	Works      int   // works of this class in the snapshot
	Demand     int64 // bytes wanted (processes wanted × memory)
	FairShare  int64 // bytes the fair share computation gave the class (FAIR_SHARE)
	Allocated  int64 // bytes held after this plan (stopping processes excluded)
}

// Hold is space on a node kept for one piece of work: shares freed (or being
// freed) by preemption or eviction on its behalf. Nobody else may take them.
type Hold struct {
	Node    string
	Shares  int
	For     uint64
	Victims []string // processes stopped to make the space
	Since   time.Time
}

// IssuedStop records a stop the scheduler issued; it is final.
type IssuedStop struct {
	ProcID string
	WorkID uint64
	At     time.Time
}

// Carry is the scheduler's memory between cycles. Pass the previous plan's
// Carry into the next Input; a zero Carry is a fresh start (e.g. after
// failover).
type Carry struct {
	LastPreemption time.Time // start of the last preemption round
	Holds          []Hold
	Issued         []IssuedStop
}

// Input is everything one scheduling cycle looks at.
type Input struct {
	Now    time.Time
	Config *Config
	Nodes  []Node
	Work   []Work
	Carry  Carry
	// NoTrace skips building Plan.Trace.
	NoTrace bool
}

// Plan is the result of one cycle. Every slice is sorted deterministically.
type Plan struct {
	Starts    []Start
	Stops     []Stop
	Pending   []Pending   // by WorkID
	Shrinking []Shrinking // by WorkID
	Held      []Held      // jobs held below what they could use, in submit order (time, id)
	// WouldPreempt lists preemptions held back because preemption.observe_only is set.
	WouldPreempt []Stop
	Classes      []ClassUsage // in config order
	Carry        Carry
	Trace        []string
}
