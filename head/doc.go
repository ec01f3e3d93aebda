// Package head is the work of the elected leader for one term: a Head
// answers the head's RPC methods (RunManaged, SubmitJob, Cancel, ... as
// package head/server routes them), folds heartbeats and process reports
// into the state, and runs the orchestrator (head/orch) with the scheduler
// (head/rm) through its policy adapter, the job driver (head/jd) and the
// Service Manager (head/sm).
//
// The Raft member that starts a Head when it leads, the heartbeat intake,
// the leader announcements and the RPC routing live in head/server.
package head
