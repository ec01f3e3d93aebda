// Package rm is ducc's Resource Manager: the scheduler of docs/scheduling.md as a
// pure, deterministic function.
//
//	plan := rm.Schedule(rm.Input{Now: now, Config: cfg, Nodes: nodes, Work: work, Carry: prev.Carry})
//
// Schedule reads a snapshot (nodes with their schedulable memory and state,
// every piece of work with its demand and current processes, the config and
// the time) and returns a Plan: processes to start with node and memory cap,
// processes to stop with a reason, a human reason for every piece of work
// that has less than it wants, a per-class summary for `ducc classes`, and a
// decision trace. It starts no goroutines, reads no clock, does no I/O and
// keeps no global state; the same Input always gives the same Plan (maps are
// never iterated in an order that reaches the output).
//
// # Model
//
// Memory is counted in shares of share_quantum (per top-level nodepool). A
// process of memory m has order ceil(m/quantum) and gets order × quantum as
// its cgroup cap; a node has floor(MemSchedulable/quantum) shares and never
// gets more placed on it than that, processes that are stopping included.
// Work is one of four kinds (WorkKind): a Job (many processes, normally
// FAIR_SHARE), a Service instance and a ManagedReservation (one process
// each, FIXED_SHARE) and a Reservation (the Start it gets is a hold,
// nothing runs). The class's policy, not the kind, decides whole
// machines: in a RESERVE class each process or hold is a whole machine of
// exactly the requested size (a Reservation, or as DUCC allows, a Job's
// processes); in a FIXED_SHARE class a Reservation holds shares.
//
// # The cycle
//
//  1. Caps: each job wants ceil(items left / pipelines) processes, at least
//     what it has, at most process_deployments_max, limited by prediction,
//     by initialization_cap until a process initializes, by doubling after
//     that, and frozen after the init-failure cap.
//  2. Priority bands, best first. RESERVE and FIXED_SHARE work is placed in
//     submit order in its class's own pool (never a sub-pool), subject to
//     allotments; if no node has room, fair-share processes of worse
//     priority are evicted on the cheapest node and the space is held for
//     it. FAIR_SHARE bands get a weighted fair share computed per nodepool,
//     leaves first, by progressive filling in shares: classes by weight
//     (guaranteed first, never above max), users equally within a class, a
//     user's jobs equally with the oldest first; whatever an entity cannot
//     use flows to the others (water-filling), and left-over blocks go to
//     whoever can use that exact order (the bonus pass). What a pool leaves
//     unused is offered to its parent's classes, whose work may squat there.
//  3. Placement: best fit by free shares, oldest jobs first, resident pool
//     before sub-pools in search_order, honouring machine_list and skipping
//     nodes that are down, varied off or quiescing; instances of one service
//     are spread before they are stacked.
//  4. Preemption (the YARN-569 policy): at most once per interval, jobs over
//     their fair share beyond the deadzone give back natural_termination_factor
//     of their excess, within max_per_round of the cluster, but only where a
//     job below its share can use the freed space on that very node (no
//     ping-pong); victims go squatters first, then not yet initialized, least
//     invested, youngest. Processes younger than min_runtime are spared
//     unless still initializing. A needy job (below its share and below
//     fragmentation_threshold processes) may take one process per round from
//     the richest users on one node (defragmentation).
//  5. Freed space is held for the job it was freed for (Carry.Holds): nobody
//     else may use it, the victim cannot regrow into it, and a stop once
//     issued is never taken back (Carry.Issued). With observe_only the
//     preemptions are reported in Plan.WouldPreempt instead.
//
// # GPUs
//
// A node may list GPU devices (Node.GPUs: id and memory) and a work may ask,
// per process, whole GPUs on one node (Work.GPUs) or a slice of one device's
// memory (Work.GPUMemory). A device held whole has one holder and no slices,
// slices never exceed a device's memory, slices pack onto partly used devices
// first, and each Start names the devices it gets (Start.GPUs; the snapshot's
// Proc.GPUs say what running processes hold). Fair share is by dominant
// resource: a GPU process adds the larger of its memory shares and its GPU
// fraction (in memory shares) to the fair-share keys, so work without GPUs
// is scheduled exactly as without this dimension. GPUFit says whether a
// request can ever fit, for admission (docs/scheduling.md, "GPUs").
//
// Carry is the only memory between cycles that a decision depends on; pass
// the previous Plan.Carry into the next Input. A zero Carry (after a head
// failover) is safe: at worst one preemption round comes early.
//
// A Scheduler runs the same cycle and keeps its working memory between
// calls (the orchestrator holds one): the slabs and maps the working state
// is laid out in, the fair-share heaps, and the submit order of the last
// snapshot's works, reused when the next snapshot lists the same works. It
// also keeps what it read from the last snapshot, matched work by work
// with the next one: the process ids (a multiset updated from the works
// whose processes changed, which finds duplicates and answers whether a
// process exists), the node each process named, and each waiting work's
// pending-reason sentence with everything it was made of (formatted again
// only when one of those changed). Its plan is always the one Schedule
// gives for the same Input.
//
// Decisions the user documentation leaves open, taken here: sub-pools are searched in
// ascending search_order; min_runtime defaults to 0 (off); evictions for
// RESERVE/FIXED_SHARE work and vary-off drains are not rate limited and are
// not suppressed by observe_only (only fair-share rebalancing is); a
// reservation matches a node whose share count equals its order; processes
// on down nodes are written off (except reservations' holds); a non-FAIR
// band whose priority is worse than a FAIR band only gets space the fair
// bands leave free.
//
// Config parsing is strict (unknown keys are errors) and Validate reports
// every mistake with what to change. Sizes and durations in the config
// are read and written by package units.
//
// # Cost
//
// A cycle rebuilds its working state from the snapshot, then avoids
// searching it again and again: placement asks an index of each pool's
// nodes by free shares; each node's processes are sorted once into victim
// order; eviction costs are kept per node in a segment tree per pool,
// priority and size and updated from the nodes a cycle changes; a
// preemption round keeps per node the shares it could still take and
// passes over nodes that cannot offer enough; a Scheduler reuses the
// memory of the last cycle instead of allocating it again. None of this
// changes a decision (docs/performance.md has the figures).
package rm
