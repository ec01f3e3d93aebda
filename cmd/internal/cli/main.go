package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/wire"
)

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

// Usagef is the error of a command that was called wrongly: the command
// exits with the usage code and prints the message.
func Usagef(format string, args ...any) error { return usageErr(format, args...) }

// Failf is the error of a command that failed: it exits with the failure
// code and prints the message.
func Failf(format string, args ...any) error {
	return &exitError{code: exitFailed, msg: fmt.Sprintf(format, args...)}
}

// Main runs the ducc command line with args (os.Args[1:]; argv0 is
// os.Args[0], whose name may select a DUCC command, ducccmd.go) and returns
// the exit code. version is the build's version. d runs the commands that
// need the daemon's code; nil (the small ducc executable) makes them run
// duccd instead, with the same arguments (daemon.go).
func Main(argv0 string, args []string, version string, d Daemon) int {
	return run(duccArgs(argv0, args), version, d)
}

func run(args []string, version string, d Daemon) int {
	root := newRootArgs(version, d, args)
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

// globals are the persistent flags, and what every command may need.
type globals struct {
	json   bool
	as     string
	socket string

	version string
	daemon  Daemon   // nil in the small ducc: daemon commands run duccd
	args    []string // the arguments cobra parses, for running duccd
}

func newRoot(version string, d Daemon) *cobra.Command {
	return newRootArgs(version, d, nil)
}

func newRootArgs(version string, d Daemon, args []string) *cobra.Command {
	g := &globals{version: version, daemon: d, args: args}
	root := &cobra.Command{
		Use:   "ducc",
		Short: "ducc runs batch analytics, services and arbitrary processes on a shared cluster",
		Long: `ducc is a cluster manager for batch analytics (a Go re-creation of Apache UIMA DUCC).

Start a one-node dev cluster with 'ducc agent --dev', then try 'ducc run -- echo hello'.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       g.version,
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
		newAgentCmd(g),
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
		newGenManCmd(g),
		newInternalCmd(g, "shim", "process shim (internal)"),
		newInternalCmd(g, "exec-worker", "exec-protocol job worker (internal)"),
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
				return printJSON(cmd.OutOrStdout(), map[string]string{"version": g.version})
			}
			fmt.Fprintln(cmd.OutOrStdout(), "ducc "+g.version)
			return nil
		},
	}
}
