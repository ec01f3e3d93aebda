// Package cli is the ducc command line: one cobra tree of user and admin
// commands, the same in both executables that run it, the small ducc
// (cmd/ducc) and the daemon duccd (cmd/duccd). Commands talk to the local
// agent's Unix socket (client.go over cmd/internal/sockhttp, with the
// vocabulary of wire/socket.go).
// The few that need the daemon's code (agent, sim, an offline `id`,
// `admin reconfigure` with an agent config file) call a Daemon (daemon.go):
// duccd passes the real one, ducc passes none and those commands run duccd
// with the same arguments. Man pages (hidden `ducc gen-man DIR`, genman.go)
// and shell completion (cobra's `ducc completion`, with work ids, classes,
// nodes and services asked from the local agent: complete.go) come from the
// commands themselves. A call builds only the command it runs (main.go,
// commands and commandFor); help, completion, gen-man and unknown commands
// get the whole tree. It imports no libp2p, Raft or Prometheus
// (cmd/ducc/light_test.go checks).
package cli
