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
package jd
