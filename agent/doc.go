// Package agent is the node daemon, `ducc agent`.
//
// An agent measures its node, publishes a heartbeat on gossipsub, and
// reconciles the node to the desired state the head pushes: it starts the
// processes the head assigned here (through the proc package's shim, as
// the submitting user, inside a memory-capped cgroup), stops those no
// longer wanted, and reports every process that ends until the head
// acknowledges it. A head-eligible agent also runs a head server
// (head/server): a Raft member that runs the head while it leads.
//
// The local API is HTTP/JSON on a Unix socket; the agent learns the
// caller's uid from the kernel (SO_PEERCRED) and forwards calls to the
// head, in process when it is the head itself.
//
// It serves process logs (`ducc logs`, `ducc run`'s output), its own and,
// over /ducc/logs/1, to other agents, to whom the head allows
// (logs.access), and opens them as root only when no link the user
// controls is on the path and the file is a regular file of the work's
// owner (openLog).
//
// Its job streams (package feed) feed job processes their items and pump
// the items of a job's driver process to the job driver on the head
// (docs/jobs.md); the agent starts them with its processes, gives them the
// processes' pipes and logs and its calls to the head (streams.go), and
// reports a driver's exit only after the items it printed last, with the
// last lines of its log when it failed.
//
// An agent never kills work because it stops or loses the head: processes
// keep running, and the next agent on the same data dir re-adopts them.
// Processes an earlier cluster incarnation left running (its Raft state
// was lost and the cluster started anew) are leftovers: reported, and
// stopped only with `ducc agent --stop-leftovers` (leftovers.go).
package agent
