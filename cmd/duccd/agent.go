package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ducc-project/ducc/agent"
	"github.com/ducc-project/ducc/cmd/internal/cli"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// Agent runs `ducc agent`.
func (daemon) Agent(ctx context.Context, o cli.AgentOptions) error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return cli.Usagef("bad --log-level %q: use debug, info, warn or error", o.LogLevel)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	dataDir := o.DataDir
	var cfg *agent.Config
	switch {
	case o.Dev && o.Config != "":
		// A dev cluster with the scheduler, administrators, web
		// section and retention of a config file (to try classes
		// and pools, or a private dashboard, on one machine).
		if dataDir == "" {
			dataDir = wire.DefaultDevDataDir()
		}
		c, ignored, err := agent.LoadDevConfig(o.Config, dataDir)
		if err != nil {
			return cli.Usagef("%v", err)
		}
		logger.Info("dev mode: using the config file's "+strings.Join(agent.DevSections, ", "), "file", o.Config)
		if len(ignored) > 0 {
			logger.Warn("dev mode ignores these keys of the config file: a dev cluster is one node on loopback "+
				"(set its memory, name, data dir and listen addresses with --memory, --node, --data-dir and --listen)",
				"file", o.Config, "ignored", strings.Join(ignored, ", "))
		}
		cfg = c
	case o.Config != "":
		c, err := agent.LoadConfig(o.Config)
		if err != nil {
			return cli.Usagef("%v", err)
		}
		cfg = c
		if dataDir != "" {
			cfg.DataDir = dataDir
		}
	case o.Dev:
		if dataDir == "" {
			dataDir = wire.DefaultDevDataDir()
		}
		cfg = agent.DevConfig(dataDir)
	default:
		const sys = "/etc/ducc/ducc.yaml"
		if _, err := os.Stat(sys); err != nil {
			return cli.Usagef("no config: pass --dev for a one-node dev cluster, or --config FILE (default %s)", sys)
		}
		c, err := agent.LoadConfig(sys)
		if err != nil {
			return cli.Usagef("%v", err)
		}
		cfg = c
	}
	if o.Memory != "" {
		m, err := units.ParseSize(o.Memory)
		if err != nil || m <= 0 {
			return cli.Usagef("bad --memory %q: write a size like 16G, 512M or 16GiB", o.Memory)
		}
		cfg.Memory = units.Size(m)
	}
	if o.Node != "" {
		cfg.Node = o.Node
	}
	if len(o.Listen) > 0 {
		cfg.Listen = o.Listen
	}
	if o.BootstrapNew && !cfg.Head {
		return cli.Usagef("--bootstrap-new: this agent is not head-eligible (head.eligible in its config); it keeps no Raft state")
	}
	cfg.BootstrapNew, cfg.StopLeftovers = o.BootstrapNew, o.StopLeftovers
	a, err := agent.New(cfg, o.Version, logger)
	if err != nil {
		return cli.Failf("%v", err)
	}
	stopProfiles, err := startProfiles()
	if err != nil {
		return cli.Usagef("%v", err)
	}
	defer func() {
		if err := stopProfiles(); err != nil {
			logger.Warn("profiles not written", "env", profileEnv, "err", err)
		}
	}()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := a.Run(ctx); err != nil {
		return cli.Failf("%v", err)
	}
	return nil
}
