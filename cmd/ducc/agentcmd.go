package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/agent"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

func newAgentCmd() *cobra.Command {
	var (
		dev      bool
		config   string
		dataDir  string
		memory   string
		node     string
		logLevel string
		listen   []string
		bootNew  bool
		stopLeft bool
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "run the node agent (with --dev: a complete one-node cluster)",
		Long: `Run the node daemon. With --dev, start a complete one-node cluster in this
process with no config file: identity and cluster key are generated into the
data dir, the node is head and worker, and the local API listens on
<data-dir>/ducc.sock.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return usageErr("bad --log-level %q: use debug, info, warn or error", logLevel)
			}
			logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
			var cfg *agent.Config
			switch {
			case dev && config != "":
				// A dev cluster with the scheduler, administrators, web
				// section and retention of a config file (to try classes
				// and pools, or a private dashboard, on one machine).
				c, err := agent.LoadConfig(config)
				if err != nil {
					return usageErr("%v", err)
				}
				if dataDir == "" {
					dataDir = wire.DefaultDevDataDir()
				}
				cfg = agent.DevConfig(dataDir)
				cfg.Scheduler, cfg.Administrators, cfg.Web, cfg.Retention = c.Scheduler, c.Administrators, c.Web, c.Retention
			case config != "":
				c, err := agent.LoadConfig(config)
				if err != nil {
					return usageErr("%v", err)
				}
				cfg = c
				if dataDir != "" {
					cfg.DataDir = dataDir
				}
			case dev:
				if dataDir == "" {
					dataDir = wire.DefaultDevDataDir()
				}
				cfg = agent.DevConfig(dataDir)
			default:
				const sys = "/etc/ducc/ducc.yaml"
				if _, err := os.Stat(sys); err != nil {
					return usageErr("no config: pass --dev for a one-node dev cluster, or --config FILE (default %s)", sys)
				}
				c, err := agent.LoadConfig(sys)
				if err != nil {
					return usageErr("%v", err)
				}
				cfg = c
			}
			if memory != "" {
				m, err := units.ParseSize(memory)
				if err != nil || m <= 0 {
					return usageErr("bad --memory %q: write a size like 16G, 512M or 16GiB", memory)
				}
				cfg.Memory = units.Size(m)
			}
			if node != "" {
				cfg.Node = node
			}
			if len(listen) > 0 {
				cfg.Listen = listen
			}
			if bootNew && !cfg.Head {
				return usageErr("--bootstrap-new: this agent is not head-eligible (head.eligible in its config); it keeps no Raft state")
			}
			cfg.BootstrapNew, cfg.StopLeftovers = bootNew, stopLeft
			a, err := agent.New(cfg, version, logger)
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if err := a.Run(ctx); err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&dev, "dev", false, "start a one-node dev cluster (head and worker) with no config file")
	f.StringVar(&config, "config", "", "config file (default /etc/ducc/ducc.yaml); with --dev only its scheduler, administrators, web and head.retention sections are used")
	f.StringVar(&dataDir, "data-dir", "", "data directory (dev default ~/.local/share/ducc)")
	f.StringVar(&memory, "memory", "", "declare the node's schedulable memory, e.g. 16G (default: measured)")
	f.StringVar(&node, "node", "", "node name (default: host name)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.BoolVar(&bootNew, "bootstrap-new", false, "if this head-eligible agent's Raft state is corrupt or missing, move it aside and start anew: "+
		"an empty cluster, or a new member of a running head group (docs/operations.md); refused over a sound state")
	f.BoolVar(&stopLeft, "stop-leftovers", false, "stop the processes an earlier cluster incarnation left running on this node "+
		"(its Raft state was lost and the cluster started anew); without it they are only reported (ducc nodes)")
	f.StringSliceVar(&listen, "listen", nil, "libp2p listen multiaddrs (dev default /ip4/127.0.0.1/tcp/0)")
	return cmd
}
