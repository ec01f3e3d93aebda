package proc

import (
	"fmt"
	"os"
	"path/filepath"
)

// HelperName is the small executable that runs the shim and the exec
// worker: installed next to duccd, the agent's executable (make build
// puts both in bin/, the packages both in /usr/bin), it starts in about a
// millisecond where duccd, which links the CLI, libp2p and Prometheus,
// takes several (ARCHITECTURE.md, "Starting a process").
const HelperName = "ducc-shim"

// Subcommands of the helper, and of duccd, which answers them too.
const (
	ShimSubcommand       = "shim"
	ShimServerSubcommand = "shim-server"
	ExecWorkerSubcommand = "exec-worker"
)

// Main is the entry point of the helper: `ducc-shim shim <process
// directory>`, `ducc-shim shim-server <procs directory>` or `ducc-shim
// exec-worker -- CMD [ARGS...]`, the same subcommands as duccd's. It returns the exit code for os.Exit.
func Main(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case ShimSubcommand:
			return RunShim(args[1:])
		case ShimServerSubcommand:
			return RunShimServer(args[1:])
		case ExecWorkerSubcommand:
			return RunExecWorker(args[1:])
		}
	}
	fmt.Fprintf(os.Stderr, "usage: %s shim <process directory> | %s shim-server <procs directory> | %s exec-worker -- CMD [ARGS...]\n(started by the ducc agent, not by hand)\n", HelperName, HelperName, HelperName)
	return 2
}

// ShimCommand is the command that runs the shim ([Config.ShimCommand]) and
// ExecWorker the one that runs the worker of an exec job, for the running
// executable: the helper when it lies in the same directory, else the
// executable itself with the subcommand (a build tree with duccd alone,
// a test binary that answers the subcommands).
func ShimCommand() ([]string, error) { return helperCommand(ShimSubcommand) }

// ShimServerCommand: see [ShimCommand].
func ShimServerCommand() ([]string, error) { return helperCommand(ShimServerSubcommand) }

// ExecWorkerCommand: see [ShimCommand].
func ExecWorkerCommand() ([]string, error) { return helperCommand(ExecWorkerSubcommand) }

func helperCommand(sub string) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable for the shim: %w", err)
	}
	return []string{findHelper(exe), sub}, nil
}

// findHelper is the helper next to exe when there is one (a regular,
// executable file), else exe.
func findHelper(exe string) string {
	if filepath.Base(exe) == HelperName {
		return exe
	}
	p := filepath.Join(filepath.Dir(exe), HelperName)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return p
	}
	return exe
}
