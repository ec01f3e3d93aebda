// Package jd is the job driver: on the head, it hands the work items of
// every job to the job processes that ask for them, records their outcomes
// through Raft, re-queues the items of processes that went away, and
// enforces the per-item and initialization time limits (docs/jobs.md).
//
// Dispatch bookkeeping is volatile: after a failover a new driver learns
// which items each live process holds from the agents' next exchanges
// (ExchangeRequest.Held), and hands out nothing until every ready process
// of the job has reported, so that an item is never handed to a second
// process while the first may still be working on it. Between those lists
// the driver keeps what each process holds up to date itself (what it
// hands out, less what is answered), and an agent whose exchanges follow
// one another says so instead of listing the items again
// (ExchangeRequest.HeldSame, ExchangeReply.Tracking): a batch of outcomes
// costs what it carries, not what the process holds.
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
//
// # Driver processes
//
// A job may get its items from a driver process (DUCC's job driver with the
// user's collection reader) instead of its submitter; docs/jobs.md, "Driver
// process protocol", is the contract with the driver. The orchestrator
// places the driver (a process of kind wire.ProcDriver, one small FIXED_SHARE
// allocation) before any job process; the agent that runs it pumps its
// items here (wire.MethodDriver, Pump): the call says the driver is ready,
// carries the items it printed since the last call in a chunk numbered by
// its first item (DriverRequest.Base), and learns how many more items the
// job wants now (DriverReply.Room): HighWater, max(1000, 4 × pipelines ×
// job processes), less the items queued and not yet handed out. The agent
// asks the driver for no more than that, so neither the head nor the agent
// ever holds more than about a high-water mark of undispatched items. With
// WaitMS the call waits while the queue is full, until items are handed out.
//
// The chunks go through Raft (state.CmdDriverItems), where a chunk applied
// again adds only the items the job does not have yet: after a failover the
// agent sends again the chunk whose answer it did not get, and the new head
// neither loses nor duplicates an item. The last chunk (End) commits the job
// like the last chunk of a submission. A driver that ends before it is
// ready, or before its last chunk, ends the job (state.CompletionDriverInitFailure,
// state.CompletionDriverFailed); it is not restarted.
package jd
