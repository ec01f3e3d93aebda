// Command ducc is the ducc command line: the user and admin commands,
// which talk to the local agent's Unix socket and link nothing else (no
// libp2p, Raft or Prometheus), so that it starts in a few milliseconds.
// The commands themselves are package cmd/internal/cli, the same in duccd;
// the few that need the daemon's code (`ducc agent`, `ducc sim`, `ducc id
// --config`, `ducc admin reconfigure` with an agent config) run duccd, found
// next to ducc or on PATH, with the same arguments (ARCHITECTURE.md,
// "Executables"). light_test.go keeps it small.
package main
