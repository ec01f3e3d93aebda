package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/wire"
)

// DaemonName is the executable that holds the daemon's code: the agent,
// the head, the simulator (and the whole CLI too). The small ducc runs it
// for the commands that need that code (ARCHITECTURE.md, "Executables").
const DaemonName = "duccd"

// Daemon runs what needs the daemon's code (agent, head, sim, libp2p):
// duccd passes the real one to Main; the small ducc passes nil, and these
// commands then run duccd with the same arguments. Errors made with
// Usagef and Failf choose the exit code; any other error exits with the
// failure code.
type Daemon interface {
	// Agent runs the node agent until ctx ends.
	Agent(ctx context.Context, o AgentOptions) error
	// Sim runs a simulation and writes its figures to w (a table, or
	// JSON with asJSON).
	Sim(ctx context.Context, o SimOptions, asJSON bool, w io.Writer) error
	// SimFakes is the fakes process of a simulation: JSON lines on in
	// and out (the hidden `ducc sim --fakes-only`).
	SimFakes(ctx context.Context, in io.Reader, out io.Writer, logger *slog.Logger) error
	// OfflineID reads the identity of an agent that need not be running,
	// from the data dir (dataDir, else that of the config file, else the
	// dev one).
	OfflineID(config, dataDir string) (wire.IDInfo, error)
	// SchedulerSection reads the agent config file at path and returns its
	// scheduler section as YAML, for `ducc admin reconfigure`.
	SchedulerSection(path string) ([]byte, error)
	// ManPage renders c's man page (package manpage), for `ducc gen-man`.
	ManPage(c *cobra.Command, w io.Writer) error
}

// AgentOptions are the flags of `ducc agent`.
type AgentOptions struct {
	Version       string // the build's version
	Dev           bool
	Config        string
	DataDir       string
	Memory        string // a size, as given
	Node          string
	LogLevel      string
	Listen        []string
	BootstrapNew  bool
	StopLeftovers bool
}

// SimOptions are the flags of `ducc sim`, in the fields and types of
// sim.Options (duccd converts one into the other, so the compiler keeps
// them alike; see sim.Options for what each means).
type SimOptions struct {
	Nodes                  int
	NodesPerHost           int
	Duration               time.Duration
	Heartbeat              time.Duration
	NodeMemory             int64
	Work                   int
	WorkMemory             int64
	NodeGPUs               int
	NodeGPUMemory          int64
	WorkGPUs               int
	WorkGPUMemory          int64
	RunFor                 time.Duration
	Submitters             int
	SubscribeHeartbeats    bool
	NodeTimeout            time.Duration
	MaxHeartbeatsPerSecond int
	Heads                  int
	Failover               bool
	Elect                  time.Duration
	FakesCommand           []string
	Logger                 *slog.Logger
}

// needDaemon returns g's Daemon, or, in the small ducc, replaces this
// process with duccd run with the same arguments (it returns only the
// error of not finding or not starting duccd).
func (g *globals) needDaemon(what string) (Daemon, error) {
	if g.daemon != nil {
		return g.daemon, nil
	}
	return nil, execDaemon(what, g.args)
}

// execDaemon replaces this process with duccd and args. duccd is looked
// for next to this executable (make build and the packages put them
// together), then on PATH. Its argv[0] is this process's own name, so
// that it speaks of itself as ducc.
func execDaemon(what string, args []string) error {
	self, _ := os.Executable()
	path, err := findDaemon(self)
	if err != nil {
		where := "on PATH"
		if self != "" {
			where = "next to " + self + " or on PATH"
		}
		return Failf("%s needs %s, the ducc daemon executable, and there is none %s: install the ducc package (it ships /usr/bin/%s), or run 'make build' in the source tree (bin/%s)",
			what, DaemonName, where, DaemonName, DaemonName)
	}
	argv0 := os.Args[0]
	if filepath.Base(argv0) != "ducc" {
		argv0 = "ducc" // a DUCC command name (ducc_submit) would be translated again
	}
	err = syscall.Exec(path, append([]string{argv0}, args...), os.Environ())
	return Failf("run %s for %s: %v", path, what, err)
}

// findDaemon is duccd in the directory of self (a regular, executable
// file), else duccd on PATH.
func findDaemon(self string) (string, error) {
	if self != "" {
		p := filepath.Join(filepath.Dir(self), DaemonName)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return exec.LookPath(DaemonName)
}

// newInternalCmd is a hidden command that duccd answers before the
// command line is parsed (the process shim and the exec worker, where
// ducc-shim is not installed). The small ducc runs duccd for it.
func newInternalCmd(g *globals, use, short string) *cobra.Command {
	return &cobra.Command{
		Use: use, Hidden: true, Short: short, DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			if g.daemon != nil {
				return Failf("%s: started the wrong way (duccd answers it before parsing its command line)", use)
			}
			_, err := g.needDaemon("ducc " + use)
			return err
		},
	}
}
