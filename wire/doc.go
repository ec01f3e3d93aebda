// Package wire is the only package of ducc that knows bytes: every message
// that crosses a process boundary is defined here (messages.go, api.go) as a
// CBOR type with integer keys:
//
//   - the codec (codec.go): one deterministic encoder and one decoder with
//     hard limits on size, nesting, array and map lengths;
//   - framing (frame.go): length-prefixed messages on streams, with the
//     length checked before anything is allocated;
//   - the cluster pre-shared key (identity.go), in libp2p's standard
//     swarm-key file format (plain text; no libp2p needed to write one);
//   - the one table of RPC methods (methods.go): each method's name,
//     request and reply types, who may call it (the CLI socket, an agent,
//     the head) and whether it may be sent again to a new head, and the
//     error codes that RPC errors carry and the CLI exits with (errors.go);
//   - the agent's local socket API (socket.go): its paths, the --as
//     header, the events of an attached run and the default socket paths;
//     its bodies are encoding/json's, and RunRequest also writes its own
//     JSON, byte for byte the same, for the CLI (runjson.go).
//
// Package wire imports no libp2p, Raft or Prometheus, so that the ducc
// CLI, which needs only the socket API, starts in a few milliseconds
// (ARCHITECTURE.md, "Executables"). What moves these bytes between
// machines (the libp2p host, gossipsub, RPC streams, the Raft transport and
// the node identity) is its subpackage wire/p2p.
package wire
