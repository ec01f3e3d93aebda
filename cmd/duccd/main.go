// Command duccd is ducc's daemon executable: the node agent (`ducc agent`,
// with the head when the node is head-eligible), the simulator (`ducc
// sim`), and the whole ducc command line besides, the same commands as
// the small ducc's. ducc runs duccd for the commands that need the
// daemon's code (ARCHITECTURE.md, "Executables"); the systemd unit runs
// `duccd agent` directly. It also answers the hidden `shim` and
// `exec-worker` subcommands where ducc-shim is not installed next to it.
package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/cmd/internal/cli"
	"github.com/ducc-project/ducc/cmd/internal/manpage"
	"github.com/ducc-project/ducc/proc"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// daemon is the real cli.Daemon: agent.go, sim.go, id.go, ManPage.
type daemon struct{}

func main() {
	// The shim must not pay for cobra: it is on every process's start path.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case proc.ShimSubcommand:
			os.Exit(proc.RunShim(os.Args[2:]))
		case proc.ShimServerSubcommand:
			os.Exit(proc.RunShimServer(os.Args[2:]))
		case proc.ExecWorkerSubcommand:
			// The exec-protocol adapter runs as every job process of an exec job.
			os.Exit(proc.RunExecWorker(os.Args[2:]))
		}
	}
	os.Exit(cli.Main(os.Args[0], os.Args[1:], version, daemon{}))
}

// ManPage renders a man page for `ducc gen-man`.
func (daemon) ManPage(c *cobra.Command, w io.Writer) error { return manpage.Render(c, w) }
