// Package head is the work of the elected leader for one term: a Head
// answers the head's RPC methods (RunManaged, SubmitJob, Cancel, ... as
// package head/server routes them), folds heartbeats and process reports
// into the state, and runs the orchestrator (head/orch) with the scheduler
// (head/rm) through its policy adapter, the job driver (head/jd) and the
// Service Manager (head/sm).
//
// The Raft member that starts a Head when it leads, the heartbeat intake,
// the leader announcements and the RPC routing live in head/server.
//
// # Admission
//
// Every submission, whatever its kind, passes one ordered list of checks
// (admissionChecks in admit.go), each once; the first that refuses answers
// the caller with the error users know for it, and nothing is applied
// before the last one passed:
//
//  1. request: the spec alone is well-formed (package spec);
//  2. class: the class named, or the kind's default, exists and suits the
//     kind (a managed reservation or a service needs FIXED_SHARE, a
//     reservation RESERVE or FIXED_SHARE); the default memory is filled in;
//  3. fit: some known node can hold one process (in a RESERVE class: some
//     node is exactly that size);
//  4. gpus: the GPU request (whole GPUs or a slice of one's memory, of a
//     model) is well-formed and some known node's GPUs could hold it
//     (rm.GPUFitModel; the refusal names the GPUs that exist);
//  5. items: a job's items are well-formed, or its driver process can be
//     placed and the request sends none;
//  6. acl: the class's submit_acl admits the caller (rm.Class.CheckACL);
//  7. limits: the caller's and its groups' limits in the class (max_gpus
//     included);
//  8. services: which of a job's service dependencies are registered (it
//     refuses nothing: a job with an unknown one ends ServicesUnavailable).
//
// Why this order: what the request alone says first; then the class,
// which every later check needs; then from cheap to dear: fit reads one
// value the orchestrator keeps, the ACL may read the group database, the
// limits count the caller's work in the class. A check with nothing to say
// about a kind passes it.
//
// # Files
//
//   - head.go: Config, Head, New, Run; the agents' heartbeats and reports.
//   - admit.go: admission, the ordered checks every submission passes.
//   - run.go, reservations.go, jobs.go, services.go: each kind of work's
//     RPC handlers (RunManaged; Reserve; SubmitJob; RegisterService and
//     ControlService), which admit the request and apply it.
//   - classes.go: the classes: Classes, and resolving each kind's class.
//   - items.go: work items in and out: AddItems, Driver, Exchange.
//   - cancel.go: Cancel, of work or of one process of a job.
//   - queries.go: Show, Wait, List, Results, and rendering work for a caller.
//   - services_query.go: QueryServices, and rendering a service.
//   - cluster.go: Nodes and Status. history.go: History.
//   - access.go: who may read and change what (isAdmin, mayRead,
//     mayReadOutput).
//   - admin.go: Reconfigure and NodeAdmin.
//   - reasons.go: why work waits, its memory cap, where it runs, why ducc
//     stopped a process.
//   - logs.go (LogAccess), retention.go (purges), charts.go, metrics.go,
//     rate.go, incarnation.go, pinger.go: one concern each.
package head
