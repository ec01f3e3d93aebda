// Command ducc-shim is the process shim and the exec-protocol worker of
// ducc, apart from the ducc command so that starting a process does not
// pay for initializing the CLI, libp2p and Prometheus (ARCHITECTURE.md,
// "Process start").
//
//	ducc-shim <process directory>            the shim (started by the agent)
//	ducc-shim exec-worker -- CMD [ARGS...]   the worker of an exec job
//
// `ducc shim` and `ducc exec-worker` do the same where ducc-shim is not
// installed next to ducc; package proc chooses (proc.ShimCommand).
package main

import (
	"os"

	"github.com/ducc-project/ducc/proc"
)

func main() { os.Exit(proc.Main(os.Args[1:])) }
