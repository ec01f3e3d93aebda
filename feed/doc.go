// Package feed is the job stream: what goes between an agent, the job
// processes and driver processes it runs, and the job driver on the head
// (docs/jobs.md, "Worker protocols" and "Driver process protocol").
//
// It owns:
//
//   - the feeder of a job process (feeder.go): it waits for the worker's
//     {"ready": true}, fetches items from the job driver (the exchange
//     RPC) in batches, writes them to the worker's stdin up to its
//     pipeline count without ever blocking on it, and hands the worker's
//     answers back with the next exchange;
//   - the feed journal (journal.go): what a feeder holds (items in the
//     worker, answers the job driver has not taken), appended to a file in
//     the process's directory so that a restarted agent resumes feeding a
//     re-adopted worker;
//   - the pump of a driver process (pump.go): it asks the driver for items
//     with {"more": N} only while the head has room for them, and sends
//     what the driver prints to the job driver in numbered chunks (the
//     driver RPC); a driver's exit is reported only after its last items
//     (Streams.DriverExited);
//   - reading and writing the protocol's lines (lines.go), whose types are
//     declared in wire/stream: the answers and other output of a worker,
//     the lines of a driver; output that is not protocol goes to the
//     process's log.
//
// The agent starts and stops the streams (Streams) and gives them a Host:
// the pipes, logs, ends and stops of its processes, and its calls to the
// head. feed imports neither the agent nor proc; it knows processes only
// by their spec (wire.ProcSpec) and their FIFOs.
//
// Every goroutine it starts belongs to the Streams (Wait) and ends with the
// context of the process it serves. It logs with component=feed.
package feed
