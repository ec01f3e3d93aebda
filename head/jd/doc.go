// Package jd is the job driver: on the head, it hands the work items of
// every job to the job processes that ask for them, records their outcomes
// through Raft, re-queues the items of processes that went away, and
// enforces the per-item and initialization time limits (docs/jobs.md).
//
// Dispatch bookkeeping is volatile: after a failover a new driver learns
// which items each live process holds from the agents' next exchanges
// (ExchangeRequest.Held), and hands out nothing until every ready process
// of the job has reported, so that an item is never handed to a second
// process while the first may still be working on it.
//
// A process whose end is recorded holds nothing: ProcGone re-queues its
// items when the orchestrator records the end (its agent reported the exit,
// or its node was declared down and the process written off), and every
// Tick re-queues any item still in flight with an ended process. When the
// agent of a written-off process comes back (it was frozen or cut off) and
// exchanges for it, the driver takes none of the items it says it holds
// back into flight and tells it to let go; its successful answers are
// recorded where the item has no outcome yet (the state keeps an item's
// first outcome, so an item redone elsewhere counts once), and its failures
// are dropped (the item was re-queued without counting an attempt). An
// answer takes an item out of flight only for the process that holds it.
package jd
