package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/wire"
)

func newIDCmd(g *globals) *cobra.Command {
	var config, dataDir string
	cmd := &cobra.Command{
		Use:   "id",
		Short: "print this node's peer id and addresses (for other nodes' join lists)",
		Long: `Print this node's libp2p peer id and the addresses other agents can join
through. With a running agent the answer comes from it; otherwise the peer id is
read from the identity in the data dir (--data-dir, or node.data_dir of --config)
and the addresses from the config.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var info wire.IDInfo
			if config == "" && dataDir == "" {
				c := newClient(g)
				r, err := c.do(cmd.Context(), "GET", wire.PathID, nil)
				if err != nil {
					return err
				}
				defer r.Body.Close()
				if err := json.NewDecoder(r.Body).Decode(&info); err != nil {
					return &exitError{code: exitFailed, msg: fmt.Sprintf("bad answer from agent: %v", err)}
				}
			} else {
				d, err := g.needDaemon("ducc id --config/--data-dir")
				if err != nil {
					return err
				}
				if info, err = d.OfflineID(config, dataDir); err != nil {
					return err
				}
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), info)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "Node:\t%s\n", info.Node)
			fmt.Fprintf(tw, "Peer id:\t%s\n", info.PeerID)
			for i, a := range info.Addrs {
				label := ""
				if i == 0 {
					label = "Addresses:"
				}
				fmt.Fprintf(tw, "%s\t%s\n", label, a)
			}
			if info.HeadEligible {
				fmt.Fprintf(tw, "Head-eligible:\tyes (%s)\n", info.Raft)
			}
			if info.JoinError != "" {
				fmt.Fprintf(tw, "Not joined:\t%s\n", info.JoinError)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "read the identity of the agent configured in this file instead of asking the running agent")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "read the identity in this data dir instead of asking the running agent")
	return cmd
}

func newKeygenCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "keygen FILE",
		Short: "write a new cluster key (copy the same file to every node)",
		Long: `Write a new random 32-byte cluster pre-shared key to FILE (mode 0600) in
libp2p's swarm-key format; '-' writes it to stdout. Every agent of a cluster
needs the same key (cluster.key_file in the config). An existing file is kept
unless --force is given.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			psk, err := wire.GenerateClusterKey()
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			data := wire.FormatClusterKey(psk)
			if args[0] == "-" {
				_, err := cmd.OutOrStdout().Write(data)
				return err
			}
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(args[0], flags, 0o600)
			if os.IsExist(err) {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("%s exists: keep it (every node needs the same key) or pass --force to replace it", args[0])}
			}
			if err != nil {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("write cluster key: %v", err)}
			}
			if _, err := f.Write(data); err != nil {
				f.Close()
				return &exitError{code: exitFailed, msg: fmt.Sprintf("write cluster key: %v", err)}
			}
			if err := f.Close(); err != nil {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("write cluster key: %v", err)}
			}
			if err := os.Chmod(args[0], 0o600); err != nil {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("chmod cluster key: %v", err)}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote a new cluster key to %s; copy it (mode 0600) to every node\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing key file")
	return cmd
}
