// Package head is the work of the elected leader: a Candidate is a Raft
// member on a head-eligible agent, and while it leads it runs a Head, which
// answers the RPCs that agents forward from the CLI, folds heartbeats and
// process reports into the state, and runs the orchestrator (head/orch)
// with the scheduler (head/rm).
//
// The Raft log lives under data_dir/raft (bbolt), its transport runs over
// libp2p streams (wire.NewRaftTransport), and a new leader waits for its
// log to be applied (a Barrier) before it schedules anything, so it
// continues exactly where the old one stopped.
package head
