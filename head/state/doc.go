// Package state is the head's durable state: the Raft finite state machine
// that holds every piece of work, its processes and their assignments, and
// the id counter.
//
// Everything that must survive a head failover or a cluster restart goes
// through Apply as a Command: submissions, assignments, process life events
// that matter after failover (started, exited with a reason), cancellations.
// Volatile facts (heartbeats, pending reasons, live RSS) live in the
// orchestrator and are rebuilt from the next heartbeats.
//
// A Command has a CommandType (CmdSubmit...; command.go) and a field of
// its own for every value it carries: no field means one thing for one
// type and another for another (CmdReady's InitMS, CmdNodeAdmin's
// NodeState, CmdIDFloor's IDFloor...). The Raft log keeps the layout it
// had before these fields existed (issue 24): a commandRecord, where some
// types store their own value in a shared slot (Count, Reason, WorkID),
// and Encode and Apply map between the two. Work states (WorkState),
// completion reasons (Completion), node admin states (NodeAdminState),
// item states (ItemState) and service changes (SvcOp) are named types
// whose underlying string or integer is what the log and snapshots hold.
// The fixture of head/server (testdata/raft-fixture), a log and snapshot
// written before, guards the format.
//
// Apply is deterministic: the leader stamps the time into each command, so
// every replica computes the same state. Readers take a consistent view with
// View; Changed returns a channel closed on the next applied change, which
// is how `ducc wait` blocks without polling. SchedulingChanged is closed
// only by the changes a scheduling cycle acts on (a submission, a cancel,
// an exit, a reconfiguration...): the orchestrator runs a cycle on it, so
// no writer has to remember to ask for one.
//
// Finished work stays in the state for a while (`ducc jobs --all`, `ducc
// show`), so no hot path may scan all of it: the FSM keeps indexes of the
// live (not ended) work in id order and by state, of live services by
// endpoint, and of each node's processes that have not ended (those of
// finished work still being stopped included). Apply files the one piece
// of work each command touched again, and Restore rebuilds them.
// View.LiveWork, LiveInState, NodeProcs, Active and ActiveService read the
// indexes; View.All copies and sorts everything and is for history
// listings only.
//
// Retention (history.go): a CmdPurge with cut-off times the leader took
// from its clock moves finished work out of the work map into a compact
// accounting Record, holds a purged job's items until their own cut-off,
// and drops records past theirs. Finished work, held items and records
// are each kept in end-time order, so a purge removes a prefix and
// View.History starts with a binary search; snapshots carry all three.
package state
