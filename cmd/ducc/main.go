// The CLI runs for milliseconds: it does not read its cgroup's CPU limit
// at start to size GOMAXPROCS (~0.2 ms of every call, measured with perf
// stat), nor watch it for changes.

//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"os"

	"github.com/ducc-project/ducc/cmd/internal/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() { os.Exit(cli.Main(os.Args[0], os.Args[1:], version, nil)) }
