package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ducc-project/ducc/head/rm"
)

// Config is /etc/ducc/ducc.yaml. Unknown keys are errors.
type Config struct {
	// Node is this node's name; default: the host name.
	Node string `yaml:"node"`
	// DataDir holds identity, cluster key, Raft log and process records.
	DataDir string `yaml:"data_dir"`
	// ClusterKeyFile is the pre-shared key; default: <data_dir>/cluster.key.
	ClusterKeyFile string `yaml:"cluster_key_file"`
	// Listen are libp2p listen multiaddrs.
	Listen []string `yaml:"listen"`
	// Peers are multiaddrs (with /p2p/<id>) of agents to join through.
	Peers []string `yaml:"peers"`
	// Head makes this agent head-eligible (a Raft voter).
	Head bool `yaml:"head"`
	// BootstrapExpect is how many head-eligible agents form the first Raft
	// group.
	BootstrapExpect int `yaml:"bootstrap_expect"`
	// Socket is the local API socket path.
	Socket string `yaml:"socket"`
	// Memory overrides the measured schedulable memory.
	Memory rm.Size `yaml:"memory"`
	// MemoryReserved is kept back from scheduling for the system.
	MemoryReserved rm.Size `yaml:"memory_reserved"`
	// Heartbeat is the heartbeat period (1s).
	Heartbeat rm.Duration `yaml:"heartbeat"`
	// NodeTimeout declares a node down after this long without heartbeats.
	NodeTimeout rm.Duration `yaml:"node_timeout"`
	// Administrators may act on anyone's work.
	Administrators []string `yaml:"administrators"`
	// Scheduler is the Resource Manager's configuration.
	Scheduler *rm.Config `yaml:"scheduler"`
	// Web configures the dashboard (not built yet).
	Web struct {
		Listen  string `yaml:"listen"`
		Private bool   `yaml:"private"`
	} `yaml:"web"`

	// Dev is set by `ducc agent --dev`; it is not read from files.
	Dev bool `yaml:"-"`
}

// LoadConfig reads a config file strictly.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes a config strictly and fills defaults.
func ParseConfig(data []byte) (*Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if c.Scheduler != nil {
		// Re-parse the scheduler section through rm for its defaults and
		// validation.
		raw, err := yaml.Marshal(c.Scheduler)
		if err != nil {
			return nil, fmt.Errorf("scheduler: %w", err)
		}
		sc, err := rm.ParseConfig(raw)
		if err != nil {
			return nil, fmt.Errorf("scheduler: %w", err)
		}
		c.Scheduler = sc
	}
	c.fill()
	return &c, nil
}

// checkBuilt refuses the multi-node settings this version cannot honour
// yet, rather than starting an agent that would never find a head.
func (c *Config) CheckBuilt() error {
	const why = "multi-node clusters (head election among several agents, joining through peers) are not built yet"
	switch {
	case !c.Head:
		return fmt.Errorf("head: false: %s; set head: true and bootstrap_expect: 1 for a one-node cluster", why)
	case c.BootstrapExpect > 1:
		return fmt.Errorf("bootstrap_expect: %d: %s; use 1", c.BootstrapExpect, why)
	case len(c.Peers) > 0:
		return fmt.Errorf("peers: %s; remove peers", why)
	}
	return nil
}

// DevConfig is the configuration of `ducc agent --dev`: one node that is
// head and worker, on loopback.
func DevConfig(dataDir string) *Config {
	c := &Config{Dev: true, DataDir: dataDir, Head: true, BootstrapExpect: 1}
	c.fill()
	return c
}

// DefaultDevDataDir is ~/.local/share/ducc.
func DefaultDevDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "ducc")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "ducc")
	}
	return filepath.Join(home, ".local", "share", "ducc")
}

func (c *Config) fill() {
	if c.Node == "" {
		c.Node, _ = os.Hostname()
	}
	if c.DataDir == "" {
		c.DataDir = "/var/lib/ducc"
	}
	if c.ClusterKeyFile == "" {
		c.ClusterKeyFile = filepath.Join(c.DataDir, "cluster.key")
	}
	if len(c.Listen) == 0 {
		if c.Dev {
			c.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
		} else {
			c.Listen = []string{"/ip4/0.0.0.0/tcp/42134"}
		}
	}
	if c.Socket == "" {
		if c.Dev {
			c.Socket = filepath.Join(c.DataDir, "ducc.sock")
		} else {
			c.Socket = "/run/ducc/ducc.sock"
		}
	}
	if c.BootstrapExpect == 0 && c.Head {
		c.BootstrapExpect = 1
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = rm.Duration(time.Second)
	}
	if c.NodeTimeout == 0 {
		c.NodeTimeout = rm.Duration(10 * time.Second)
	}
	if c.Scheduler == nil {
		c.Scheduler = rm.DefaultConfig()
	}
}
