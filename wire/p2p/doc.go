// Package p2p moves wire's messages between machines over libp2p:
//
//   - the node identity (identity.go), an Ed25519 key in libp2p's format;
//   - the libp2p host (host.go): TCP + Noise on a private network keyed by
//     the cluster key (wire.LoadClusterKey), explicit listen addresses only,
//     no NAT traversal, relays or discovery, fixed resource-manager limits
//     sized for a cluster head of thousands of nodes;
//   - gossipsub (pubsub.go) with typed, size-checked topics for heartbeats
//     and leader announcements;
//   - request/response RPC on wire.ProtoRPC streams (rpc.go) with coded
//     errors (wire.CodedError), and the same call in process (CallLocal);
//   - the Raft stream layer and transport over libp2p streams (raft.go).
//
// It is apart from wire so that what needs only the messages (the ducc
// CLI) does not link libp2p. Logging uses log/slog with component=wire.
package p2p
