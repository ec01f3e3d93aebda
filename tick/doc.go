// Package tick times a daemon's periodic work on common instants, so that
// an idle process wakes once per period for all of it rather than once
// per loop.
//
// Every loop that runs each second (a heartbeat, the head's announcement,
// the scheduling cycle's backstop, the snapshot check...) otherwise keeps
// the phase of the moment it started. Each wake-up of an idle Go process
// costs more than the work it does: a thread leaves the poller, the
// runtime's monitor thread restarts its spin-down, and another thread may
// be woken to steal work. Loops that wait with [Until] instead of a fixed
// period wake on the same instants, whole periods past a phase that the
// process draws once (in wall-clock time), close enough to be served by
// one wake-up. Processes draw different phases, so the agents of a
// cluster do not all send their heartbeats in the same millisecond.
package tick
