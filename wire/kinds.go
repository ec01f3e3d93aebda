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
