// Package wire is the only package of ducc that knows bytes: every message
// that crosses a process boundary is defined here (messages.go, api.go) as a
// CBOR type with integer keys, together with everything that moves those
// bytes between machines:
//
//   - the codec (codec.go): one deterministic encoder and one decoder with
//     hard limits on size, nesting, array and map lengths;
//   - framing (frame.go): length-prefixed messages on streams, with the
//     length checked before anything is allocated;
//   - node identity and the cluster pre-shared key (identity.go), the key in
//     libp2p's standard swarm-key file format;
//   - the libp2p host (host.go): TCP + Noise on a private network, explicit
//     listen addresses only, no NAT traversal, relays or discovery, fixed
//     resource-manager limits sized for a cluster head of thousands of nodes;
//   - gossipsub (pubsub.go) with typed, size-checked topics for heartbeats
//     and leader announcements;
//   - the one table of RPC methods (methods.go): each method's name,
//     request and reply types, who may call it (the CLI socket, an agent,
//     the head) and whether it may be sent again to a new head, and the
//     error codes that RPC errors carry and the CLI exits with;
//   - request/response RPC on ProtoRPC streams (rpc.go) with coded errors,
//     and the same call in process (CallLocal);
//   - the Raft stream layer and transport over libp2p streams (raft.go).
//
// Logging uses log/slog with component=wire.
package wire
