// Package server is the one entry point of the head. A head-eligible agent
// (or `ducc sim`) builds a Server from its libp2p host and gossipsub
// topics; the Server then
//
//   - runs the node's Raft member (the log in data_dir/raft on bbolt,
//     checked before it opens: a corrupt, empty or missing state is a
//     RaftStateError, raftstore.go; the transport over libp2p streams)
//     and, while the member leads, the head
//     of that term (head.Head), after a Barrier so that a new leader
//     continues exactly where the old one stopped; the head's applies go
//     through a group commit (committer): commands of concurrent callers
//     share one log entry, and each caller returns once its entry is
//     applied; the member snapshots its state on a schedule of entries and
//     bytes and Raft compacts the log behind each snapshot, so raft.db
//     stays bounded and a restart replays only what follows the newest
//     snapshot (snapshots.go, raftdb.go; docs/operations.md);
//   - forms the first Raft group (bootstrap_expect head-eligible agents
//     that see each other's heartbeats) or asks the leader to add it;
//   - while it leads, lists the group's members with their state (from
//     their heartbeats), removes one on `ducc admin remove-server`, and
//     removes dead ones once a replacement has joined (members.go);
//   - takes the agents' heartbeats in and announces its leadership;
//   - routes the head's RPC methods (Handle, Dispatch) after the method
//     table of package wire, and offers the same path in process (Call);
//   - pushes desired state to the agents (PushDesired), handing its own
//     node's to a hook of the embedding agent;
//   - says why it cannot lead while its Raft log cannot be written, a
//     full data directory most often (WriteProblem, writeguard.go).
//
// The package head keeps the leader's logic of one term: admission, the
// method implementations and the scheduler adapter.
package server
