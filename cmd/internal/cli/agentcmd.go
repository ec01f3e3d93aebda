package cli

import (
	"github.com/spf13/cobra"
)

func newAgentCmd(g *globals) *cobra.Command {
	var o AgentOptions
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "run the node agent (with --dev: a complete one-node cluster)",
		Long: `Run the node daemon. With --dev, start a complete one-node cluster in this
process with no config file: identity and cluster key are generated into the
data dir, the node is head and worker, and the local API listens on
<data-dir>/ducc.sock.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := g.needDaemon("ducc agent")
			if err != nil {
				return err
			}
			o.Version = g.version
			return d.Agent(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.Dev, "dev", false, "start a one-node dev cluster (head and worker) with no config file")
	f.StringVar(&o.Config, "config", "", "config file (default /etc/ducc/ducc.yaml); with --dev only its scheduler, administrators, web and head.retention sections are used")
	f.StringVar(&o.DataDir, "data-dir", "", "data directory (dev default ~/.local/share/ducc)")
	f.StringVar(&o.Memory, "memory", "", "declare the node's schedulable memory, e.g. 16G (default: measured)")
	f.StringVar(&o.Node, "node", "", "node name (default: host name)")
	f.StringVar(&o.LogLevel, "log-level", "info", "debug, info, warn or error")
	f.BoolVar(&o.BootstrapNew, "bootstrap-new", false, "if this head-eligible agent's Raft state is corrupt or missing, move it aside and start anew: "+
		"an empty cluster, or a new member of a running head group (docs/operations.md); refused over a sound state")
	f.BoolVar(&o.StopLeftovers, "stop-leftovers", false, "stop the processes an earlier cluster incarnation left running on this node "+
		"(its Raft state was lost and the cluster started anew); without it they are only reported (ducc nodes)")
	f.StringSliceVar(&o.Listen, "listen", nil, "libp2p listen multiaddrs (dev default /ip4/127.0.0.1/tcp/0)")
	return cmd
}
