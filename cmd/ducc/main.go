package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/proc"
	"github.com/ducc-project/ducc/wire"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes: the error codes of package wire, which RPC errors carry.
const (
	exitOK          = wire.CodeOK
	exitFailed      = wire.CodeError
	exitUsage       = wire.CodeUsage
	exitUnreachable = wire.CodeUnreachable
)

// exitError ends the command with a code and, unless msg is empty, a
// one-line message on stderr.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

func main() {
	// The shim must not pay for cobra: it is on every process's start path.
	if len(os.Args) > 1 && os.Args[1] == "shim" {
		os.Exit(proc.RunShim(os.Args[2:]))
	}
	// The exec-protocol adapter runs as every job process of an exec job.
	if len(os.Args) > 1 && os.Args[1] == "exec-worker" {
		os.Exit(proc.RunExecWorker(os.Args[2:]))
	}
	os.Exit(run(duccArgs(os.Args[0], os.Args[1:])))
}

func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			printErr(os.Stderr, ee.msg)
		}
		return ee.code
	}
	printErr(os.Stderr, err.Error())
	return exitUsage // cobra's own errors: unknown command, bad flags
}

// printErr prints "ducc: msg", wrapped to the terminal's width when w is
// one (indented under the message), whole otherwise.
func printErr(w io.Writer, msg string) {
	width := outWidth(w)
	const prefix = "ducc: "
	if width <= len(prefix)+20 {
		fmt.Fprintln(w, prefix+msg)
		return
	}
	for i, l := range wrap(msg, width-len(prefix)) {
		if i == 0 {
			fmt.Fprintln(w, prefix+l)
		} else {
			fmt.Fprintln(w, strings.Repeat(" ", len(prefix))+l)
		}
	}
}

// globals are the persistent flags.
type globals struct {
	json   bool
	as     string
	socket string
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "ducc",
		Short: "ducc runs batch analytics, services and arbitrary processes on a shared cluster",
		Long: `ducc is a cluster manager for batch analytics (a Go re-creation of Apache UIMA DUCC).

Start a one-node dev cluster with 'ducc agent --dev', then try 'ducc run -- echo hello'.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr("%v (see '%s --help')", err, c.CommandPath())
	})
	root.SetGlobalNormalizationFunc(underscoreFlags)
	addDUCCGlobals(root.PersistentFlags())
	root.PersistentFlags().BoolVar(&g.json, "json", false, "print JSON instead of tables")
	root.PersistentFlags().StringVar(&g.as, "as", "", "act for another user (root only)")
	root.PersistentFlags().StringVar(&g.socket, "socket", "", "agent socket (default: $DUCC_SOCKET, /run/ducc/ducc.sock, ~/.local/share/ducc/ducc.sock)")
	root.AddCommand(
		newAgentCmd(),
		newRunCmd(g),
		newWaitCmd(g),
		newCancelCmd(g),
		newJobsCmd(g),
		newShowCmd(g),
		newNodesCmd(g),
		newStatusCmd(g),
		newLogsCmd(g),
		newVersionCmd(g),
		newSubmitCmd(g),
		newResultsCmd(g),
		newHistoryCmd(g),
		newClassesCmd(g),
		newReserveCmd(g),
		newUnreserveCmd(g),
		newAdminCmd(g),
		newIDCmd(g),
		newKeygenCmd(),
		newServicesCmd(g),
		newWebTokenCmd(g),
		newSimCmd(g),
		newGenManCmd(),
		&cobra.Command{Use: "shim", Hidden: true, Short: "process shim (internal)", Run: func(*cobra.Command, []string) {}},
		&cobra.Command{Use: "exec-worker", Hidden: true, Short: "exec-protocol job worker (internal)", Run: func(*cobra.Command, []string) {}},
	)
	addCompletions(root, g)
	return root
}

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.json {
				return printJSON(cmd.OutOrStdout(), map[string]string{"version": version})
			}
			fmt.Fprintln(cmd.OutOrStdout(), "ducc "+version)
			return nil
		},
	}
}
