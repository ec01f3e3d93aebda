package wire

// WorkKind says what a piece of work is. It is the kind of the head's
// durable work records and of WorkInfo.Kind.
type WorkKind string

// Kinds of work.
const (
	WorkJob         WorkKind = "job"
	WorkService     WorkKind = "service"
	WorkManaged     WorkKind = "managed" // managed reservation, `ducc run`
	WorkReservation WorkKind = "reservation"
)

// ProcKind is the process type of a ProcSpec: it tells the agent how to run
// the process (job processes are fed work items) and names the process's
// log file (<work id>-<kind>-<node>-<pid>.log).
type ProcKind string

// Process kinds.
const (
	ProcJob     ProcKind = "JP"  // a job process, fed work items by the agent
	ProcService ProcKind = "SVC" // a service instance
	ProcPOP     ProcKind = "POP" // the one process of a managed reservation ("plain old process")
	// ProcDriver is a job's driver process (DUCC's JD): it produces the
	// job's work items over the driver protocol of docs/jobs.md.
	ProcDriver ProcKind = "JD"
)

// Proc is the kind of the processes of a work of kind k. Reservations run
// no process; they map to ProcPOP like managed reservations.
func (k WorkKind) Proc() ProcKind {
	switch k {
	case WorkJob:
		return ProcJob
	case WorkService:
		return ProcService
	default:
		return ProcPOP
	}
}

// ReasonCode is a short, stable, machine-readable word for why work waits
// or why it runs fewer processes than it could use (WorkInfo.ReasonCode,
// WorkInfo.HeldCode), like Slurm's pending reasons; the prose next to it
// (WorkInfo.Reason, WorkInfo.Held) says the details. docs/jobs.md lists
// them.
type ReasonCode string

// Reason codes of pending work (WorkInfo.ReasonCode).
const (
	ReasonScheduling   ReasonCode = "Scheduling"   // not yet seen by a scheduling cycle
	ReasonReceiving    ReasonCode = "Receiving"    // its work items are still being submitted
	ReasonResources    ReasonCode = "Resources"    // no node has the room now
	ReasonPriority     ReasonCode = "Priority"     // the pool's room is held by higher-priority work
	ReasonFairShare    ReasonCode = "FairShare"    // its class's or user's fair share gives it no process
	ReasonPreempting   ReasonCode = "Preempting"   // processes of other work stop to make room for it
	ReasonShrinking    ReasonCode = "Shrinking"    // some of its processes are taken back
	ReasonLimit        ReasonCode = "Limit"        // a class limit (max_allotment) holds it back
	ReasonNoFit        ReasonCode = "NoFit"        // no node (of exactly its size, for a reservation) can hold it
	ReasonNoNodes      ReasonCode = "NoNodes"      // no node is up in its pool
	ReasonBadClass     ReasonCode = "BadClass"     // its class is no longer configured
	ReasonServices     ReasonCode = "Services"     // waits for the services it depends on
	ReasonDriver       ReasonCode = "Driver"       // its driver process is being placed or initializing
	ReasonStopping     ReasonCode = "Stopping"     // canceled; its processes are stopping
	ReasonInitializing ReasonCode = "Initializing" // its processes are initializing
)

// Reason codes of running work held below what it could use
// (WorkInfo.HeldCode), and of running work that wants more (ReasonFairShare,
// ReasonResources, ... above, also in HeldCode).
const (
	ReasonAtFairShare  ReasonCode = "AtFairShare"  // it has its whole fair share and wants more
	ReasonOverShare    ReasonCode = "OverShare"    // it holds more than its fair share
	ReasonPrediction   ReasonCode = "Prediction"   // use_prediction: fewer processes finish in time
	ReasonInitCap      ReasonCode = "InitCap"      // initialization_cap until a process initializes
	ReasonDoubling     ReasonCode = "Doubling"     // expand_by_doubling: it grows step by step
	ReasonInitFailures ReasonCode = "InitFailures" // growth frozen by initialization failures
)

// ReasonCodes lists every reason code, for documentation and checks.
var ReasonCodes = []ReasonCode{
	ReasonScheduling, ReasonReceiving, ReasonResources, ReasonPriority, ReasonFairShare, ReasonPreempting,
	ReasonShrinking, ReasonLimit, ReasonNoFit, ReasonNoNodes, ReasonBadClass, ReasonServices, ReasonDriver, ReasonStopping,
	ReasonInitializing, ReasonAtFairShare, ReasonOverShare, ReasonPrediction, ReasonInitCap, ReasonDoubling,
	ReasonInitFailures, ReasonGPUs,
}
