package wire

import "strings"

// Completion is how a piece of work ended (docs/jobs.md, "States,
// completion reasons, exit codes"); "" while it has not. It is stored and
// sent as its name, a text string (the head's Raft log and snapshots
// hold it so).
type Completion string

// Completion reasons: the one list of them (the head's state, `ducc
// history --state`, the tables' short names).
const (
	CompletionEndOfJob         Completion = "EndOfJob"
	CompletionError            Completion = "Error"
	CompletionCanceledByUser   Completion = "CanceledByUser"
	CompletionCanceledByAdmin  Completion = "CanceledByAdministrator"
	CompletionResourcesUnavail Completion = "ResourcesUnavailable"
	CompletionLaunchFailure    Completion = "LaunchFailure"
	CompletionProgramExit      Completion = "ProgramExit"
	CompletionProcessFailure   Completion = "ProcessFailure"
	CompletionServicesUnavail  Completion = "ServicesUnavailable"
	CompletionNoWorkItemsFound Completion = "NoWorkItemsFound"
	CompletionCanceledByDriver Completion = "CanceledByDriver"
	CompletionInitFailure      Completion = "ProcessInitializationFailure"
	CompletionCanceledBySystem Completion = "CanceledBySystem"
	// A job's driver process ended before it said ready, or after that
	// before its last item (docs/jobs.md).
	CompletionDriverInitFailure Completion = "DriverInitializationFailure"
	CompletionDriverFailed      Completion = "DriverProcessFailed"
)

func (c Completion) String() string { return string(c) }

// completions are the completion reasons in docs/jobs.md's order, each
// with the short name of the tables (at most 11 characters: `ducc
// history`'s STATE column) and what it means.
var completions = []struct {
	c            Completion
	short, means string
}{
	{CompletionEndOfJob, "EndOfJob", "a job's every work item done"},
	{CompletionError, "Error", "a job done, but some work items failed"},
	{CompletionNoWorkItemsFound, "NoItems", "a job with no work items"},
	{CompletionCanceledByUser, "Canceled", "canceled by its owner"},
	{CompletionCanceledByAdmin, "CanceledAdm", "canceled by root or an administrator"},
	{CompletionCanceledByDriver, "CanceledJD", "ended by the job driver: more work items failed than max_job_errors"},
	{CompletionCanceledBySystem, "CanceledSys", "DUCC's reason for work the system ended; ducc does not give it"},
	{CompletionServicesUnavail, "NoServices", "a service it depends on is not available"},
	{CompletionResourcesUnavail, "NoResources", "DUCC's reason for work no node could hold; ducc refuses such work at submission instead"},
	{CompletionInitFailure, "InitFail", "the first job process failed to initialize"},
	{CompletionProcessFailure, "ProcFail", "more job processes failed than process_failures_limit"},
	{CompletionLaunchFailure, "LaunchFail", "the command could not be started"},
	{CompletionDriverInitFailure, "DriverInit", "the job's driver process ended before it said ready"},
	{CompletionDriverFailed, "DriverFail", "the job's driver process ended before its last work item"},
	{CompletionProgramExit, "Exit", "a managed reservation's process ended; its exit code is kept"},
}

// Completions returns every completion reason, in docs/jobs.md's order.
func Completions() []Completion {
	out := make([]Completion, len(completions))
	for i, c := range completions {
		out[i] = c.c
	}
	return out
}

// Known reports whether c is a completion reason.
func (c Completion) Known() bool {
	for _, x := range completions {
		if x.c == c {
			return true
		}
	}
	return false
}

// Short is the reason's short name in tables (`ducc history`); an
// unknown reason is its own name.
func (c Completion) Short() string {
	for _, x := range completions {
		if x.c == c {
			return x.short
		}
	}
	return string(c)
}

// Means says in words what the reason means; "" for an unknown one.
func (c Completion) Means() string {
	for _, x := range completions {
		if x.c == c {
			return x.means
		}
	}
	return ""
}

// ParseCompletion reads a completion reason by its name or its short
// name, case-insensitively: "endofjob", "EndOfJob" and "Done" (its short
// name in earlier versions' tables) are all EndOfJob. ok is false for
// anything else.
func ParseCompletion(s string) (c Completion, ok bool) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "Done") {
		return CompletionEndOfJob, true
	}
	for _, x := range completions {
		if strings.EqualFold(s, string(x.c)) || strings.EqualFold(s, x.short) {
			return x.c, true
		}
	}
	return "", false
}
