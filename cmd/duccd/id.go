package main

import (
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/peer"
	"go.yaml.in/yaml/v3"

	"github.com/ducc-project/ducc/agent"
	"github.com/ducc-project/ducc/cmd/internal/cli"
	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
)

// OfflineID reads the identity of an agent that need not be running
// (`ducc id --config/--data-dir`).
func (daemon) OfflineID(config, dataDir string) (wire.IDInfo, error) {
	cfg := agent.DevConfig(dataDir)
	if config != "" {
		c, err := agent.LoadConfig(config)
		if err != nil {
			return wire.IDInfo{}, cli.Usagef("%v", err)
		}
		cfg = c
		if dataDir != "" {
			cfg.DataDir = dataDir
		}
	}
	path := filepath.Join(cfg.DataDir, "identity.key")
	if _, err := os.Stat(path); err != nil {
		return wire.IDInfo{}, cli.Failf("no identity at %s: start the agent once, or check --data-dir (%v)", path, err)
	}
	key, err := p2p.LoadOrCreateIdentity(path)
	if err != nil {
		return wire.IDInfo{}, cli.Failf("%v", err)
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return wire.IDInfo{}, cli.Failf("identity %s: %v", path, err)
	}
	info := wire.IDInfo{Cluster: cfg.Cluster, Node: cfg.Node, PeerID: id.String(), HeadEligible: cfg.Head}
	for _, a := range cfg.Listen {
		info.Addrs = append(info.Addrs, a+"/p2p/"+id.String())
	}
	return info, nil
}

// SchedulerSection reads the scheduler section of an agent config file
// (`ducc admin reconfigure FILE`).
func (daemon) SchedulerSection(path string) ([]byte, error) {
	cfg, err := agent.LoadConfig(path)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	raw, err := yaml.Marshal(cfg.Scheduler)
	if err != nil {
		return nil, cli.Usagef("encode scheduler config: %v", err)
	}
	return raw, nil
}
