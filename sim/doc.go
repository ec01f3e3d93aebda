// Package sim is ducc's simulation mode for scale: a real head server
// (head/server: a Raft member on bbolt, the orchestrator, the Resource
// Manager, the job driver) on a real libp2p host, and many lightweight fake agents that
// speak the real protocol to it: signed heartbeats on the gossipsub
// heartbeat topic, desired-state pushes answered over the RPC protocol
// (wire.MethodDesired), process reports (wire.MethodReport) and
// acknowledgements of ended processes, submissions through the head's RPC
// handler (wire.MethodRun).
//
// What is fake: a fake node runs nothing. It marks a process Running as
// soon as the head wants it, optionally ends it after a fixed time, and
// stops it at once when the head says so. Its inventory is declared
// (Options.NodeMemory). Many fake nodes share one libp2p host
// (Options.NodesPerHost): each host publishes the heartbeats of all its
// nodes, each heartbeat naming its own node, and answers the desired-state
// pushes of all its nodes (the head addresses a push to a peer and names
// the node in it). So the head holds one connection and one gossipsub peer
// per fake host rather than per node; everything above the connection
// (heartbeats, signatures, validation, pushes, reports) is per node.
//
// Options.Heads runs several head candidates in this process as one head
// group (each a real head server with its own libp2p host and data
// directory; the fakes connect to all and follow the leader
// announcements), and Options.Failover stops the leader hard once the work
// runs and watches the member that takes over: the time to a new head, the
// nodes it declares down and the work it writes off (FailoverResult).
//
// By default the fake agents and the workload driver run in a child
// process (Options.FakesCommand, e.g. `ducc sim --fakes-only`), so the CPU
// and memory measured in the parent are the head's alone; the child talks
// to the parent with JSON lines on its stdin and stdout.
package sim
