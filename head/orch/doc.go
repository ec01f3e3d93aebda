// Package orch is the head's orchestrator: it turns the durable state and
// the volatile view of the nodes (heartbeats, reports) into scheduling
// decisions and into the desired state of every node.
//
// One Orchestrator lives for one leadership term. Its Run loop coalesces
// triggers (a submission, an exit, a node change) into scheduling cycles no
// more often than the configured minimum interval and at least once per
// cycle period. A cycle hands the state to head/rm (schedule.go builds the
// rm.Input), turns the rm.Plan into assignments and stops applied through
// Raft, and pushes each node's desired state when it changes. Process reports
// from agents are folded into the state through Raft as well, batched.
//
// Submit (place.go) is the one other place that plans: a managed
// reservation submitted while no other submission is under way and no
// cycle is planning is run through the same scheduler with the new work
// added; when the plan starts it and nothing else, its assignment rides in
// the submission's own command (one log entry), and its node is pushed
// once that entry is committed. Cycles and Submit plan one at a time
// (placeMu), each from a state holding every assignment made before.
package orch
