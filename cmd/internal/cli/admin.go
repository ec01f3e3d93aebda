package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/classfile"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

func newAdminCmd(g *globals) *cobra.Command {
	admin := &cobra.Command{Use: "admin", Short: "administer nodes and the scheduler (root or administrators)"}
	node := func(use, short, st string) *cobra.Command {
		return &cobra.Command{
			Use: use + " NODE", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				var list wire.NodeList
				if err := newClient(g).call(cmd.Context(), wire.MethodNodeAdmin, wire.NodeAdminRequest{Node: args[0], State: st}, &list); err != nil {
					return err
				}
				for _, n := range list.Nodes {
					if n.Name == args[0] {
						fmt.Fprintf(cmd.OutOrStdout(), "%s is %s\n", n.Name, n.State)
					}
				}
				return nil
			},
		}
	}
	reconf := &cobra.Command{
		Use:   "reconfigure [FILE]",
		Short: "reload the scheduler's classes and pools from a config file, through Raft",
		Long: `Read the scheduler section of FILE (default /etc/ducc/ducc.yaml), validate it, and
apply it to the cluster through Raft: running work stays, the next scheduling cycle
uses the new classes and pools, and later heads keep using it. FILE may also be a
DUCC class file (ducc.classes), read as 'ducc admin import-classes' does.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/etc/ducc/ducc.yaml"
			if len(args) == 1 {
				path = args[0]
			}
			var raw []byte
			if data, err := os.ReadFile(path); err == nil && classfile.LooksLikeClassFile(data) {
				text, _, warn, err := classfile.Translate(path, "", os.ReadFile)
				printWarnings(cmd, warn)
				if err != nil {
					return usageErr("%v", err)
				}
				raw = text
			} else {
				d, err := g.needDaemon("ducc admin reconfigure with an agent config file")
				if err != nil {
					return err
				}
				if raw, err = d.SchedulerSection(path); err != nil {
					return err
				}
			}
			var list wire.ClassList
			if err := newClient(g).call(cmd.Context(), wire.MethodReconfigure, wire.ReconfigureRequest{Scheduler: raw}, &list); err != nil {
				return err
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), list)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Scheduler reconfigured: %s; see 'ducc classes'\n", units.Plural(len(list.Classes), "class"))
			return nil
		},
	}
	admin.AddCommand(
		node("vary-off", "drain a node of fair-share work and give it no new work", "VariedOff"),
		node("quiesce", "give a node no new work; running work stays", "Quiescing"),
		node("vary-on", "undo vary-off and quiesce", ""),
		reconf,
		newRemoveServerCmd(g),
		newImportClassesCmd(),
	)
	return admin
}

func newImportClassesCmd() *cobra.Command {
	var users string
	cmd := &cobra.Command{
		Use:   "import-classes DUCC_CLASS_FILE [--users DUCC_USERS_FILE]",
		Short: "print the scheduler section equivalent to a DUCC class file (ducc.classes)",
		Long: `Read a DUCC class file (Nodepool, Class and User stanzas, with its node files and
their imports), and optionally DUCC's user registry (ducc.users: User stanzas with
max-allotment), and print the equivalent scheduler section of ducc.yaml. Attributes
ducc does not honour are named on stderr; ones that would change where work runs are
errors. Paste the output into /etc/ducc/ducc.yaml, or give the class file to
'ducc admin reconfigure' directly. See docs/ducc-compatibility.md.`,
		Example: "  ducc admin import-classes /opt/ducc/resources/ducc.classes --users /opt/ducc/resources/ducc.users >> /etc/ducc/ducc.yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, cfg, warn, err := classfile.Translate(args[0], users, os.ReadFile)
			printWarnings(cmd, warn)
			if err != nil {
				return usageErr("%v", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "# from the DUCC class file %s: %s\n", args[0], units.Plural(len(cfg.Classes), "class"))
			_, err = cmd.OutOrStdout().Write(text)
			return err
		},
	}
	cmd.Flags().StringVar(&users, "users", "", "DUCC's user registry (ducc.users), read with the class file")
	return cmd
}

func newRemoveServerCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "remove-server NODE",
		Short: "remove a dead head-eligible agent from the head group (Raft voters)",
		Long: `Remove a member from the head group, the Raft voters among which the head is
elected, to retire a head-eligible machine that is gone. NODE is the member's node
name or its peer id, as 'ducc status' lists them.

The member must be unreachable (stop its agent first). The head refuses to remove
itself (stop its agent: another member becomes head) and the last voter. A head also
removes a member that has been unreachable for head.dead_server_cleanup by itself,
once another head-eligible agent has joined in its place.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var rep wire.RemoveServerReply
			if err := newClient(g).call(cmd.Context(), wire.MethodRemoveServer, wire.RemoveServerRequest{Server: args[0]}, &rep); err != nil {
				return err
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			name := rep.Removed.Node
			if name == "" {
				name = rep.Removed.Peer
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Removed %s from the head group; %s left: %s\n", name, units.Plural(len(rep.Voters), "member"), voterNames(rep.Voters))
			return nil
		},
	}
}
