package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
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

// newRoot is the root with every command (the tests', and gen-man's).
func newRoot(version string, d Daemon) *cobra.Command {
	return newRootArgs(version, d, nil)
}

// command is one of ducc's commands: its name, its aliases and how to
// build it. whole: it needs the whole tree to run (gen-man walks it).
type command struct {
	names []string // the name, then the aliases
	whole bool
	build func(g *globals) *cobra.Command
}

// commands are ducc's commands. A command made here and not listed is
// missing from `ducc --help`; TestLazyTreeHelp checks that the list
// knows each command's name and aliases.
var commands = []command{
	{names: []string{"agent"}, build: newAgentCmd},
	{names: []string{"run"}, build: newRunCmd},
	{names: []string{"wait"}, build: newWaitCmd},
	{names: []string{"cancel"}, build: newCancelCmd},
	{names: []string{"jobs"}, build: newJobsCmd},
	{names: []string{"show"}, build: newShowCmd},
	{names: []string{"nodes"}, build: newNodesCmd},
	{names: []string{"status"}, build: newStatusCmd},
	{names: []string{"logs"}, build: newLogsCmd},
	{names: []string{"version"}, build: newVersionCmd},
	{names: []string{"submit"}, build: newSubmitCmd},
	{names: []string{"results"}, build: newResultsCmd},
	{names: []string{"history"}, build: newHistoryCmd},
	{names: []string{"classes"}, build: newClassesCmd},
	{names: []string{"reserve"}, build: newReserveCmd},
	{names: []string{"unreserve"}, build: newUnreserveCmd},
	{names: []string{"admin"}, build: newAdminCmd},
	{names: []string{"id"}, build: newIDCmd},
	{names: []string{"keygen"}, build: func(*globals) *cobra.Command { return newKeygenCmd() }},
	{names: []string{"services"}, build: newServicesCmd},
	{names: []string{"web-token"}, build: newWebTokenCmd},
	{names: []string{"sim"}, build: newSimCmd},
	{names: []string{"gen-man"}, whole: true, build: newGenManCmd},
	{names: []string{"shim"}, build: func(g *globals) *cobra.Command {
		return newInternalCmd(g, "shim", "process shim (internal)")
	}},
	{names: []string{"exec-worker"}, build: func(g *globals) *cobra.Command {
		return newInternalCmd(g, "exec-worker", "exec-protocol job worker (internal)")
	}},
}

// newRootArgs is the root for args: when args run one command, the root
// holds only that command (building every command and its flags is most
// of what a short call like `ducc version` costs); otherwise, and for
// help, completion and unknown commands, it holds them all. Either way
// cobra finds the same command and prints the same text.
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
	if c := commandFor(args); c != nil {
		root.AddCommand(c.build(g))
		// Completion (`completion`, `__complete`) always takes the whole
		// tree (commandFor), so the one command's root needs neither the
		// completion functions nor cobra's completion command and its four
		// shells' subcommands, which cobra would build on every Execute.
		root.CompletionOptions.DisableDefaultCmd = true
		return root
	}
	for _, c := range commands {
		root.AddCommand(c.build(g))
	}
	addCompletions(root, g)
	return root
}

// commandFor is the command args run, when it can be told from args
// alone and runs without the others; nil otherwise. It reads args as
// cobra does when it looks for the command (its stripFlags): the first
// argument that is not a flag, skipping the value of the root's
// persistent flags that take one. A flag it does not know, a short flag
// or "--" leaves it to the whole tree, as do names that are not
// commands: help, completion, __complete, and mistakes, for which cobra
// suggests the command meant.
func commandFor(args []string) *command {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			for j := range commands {
				c := &commands[j]
				if !c.whole && slices.Contains(c.names, a) {
					return c
				}
			}
			return nil
		}
		if strings.Contains(a, "=") {
			continue // cobra skips "--flag=value" whatever the flag
		}
		name, long := strings.CutPrefix(a, "--")
		if !long {
			return nil
		}
		switch underscoreFlags(nil, name) {
		case "json", "role-administrator", "debug", "quiet":
		case "as", "socket":
			i++ // its value
		default:
			return nil
		}
	}
	return nil
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
