package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/multiformats/go-multiaddr"
	"go.yaml.in/yaml/v3"

	"github.com/ducc-project/ducc/gpu"
	"github.com/ducc-project/ducc/head/rm"
	"github.com/ducc-project/ducc/head/server"
	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// Config is the agent's configuration, flattened from the sections of
// /etc/ducc/ducc.yaml (see fileConfig and docs/configuration.md).
type Config struct {
	// Cluster is the cluster's name, shown by `ducc status`.
	Cluster string
	// Node is this node's name; default: the host name.
	Node string
	// DataDir holds identity, cluster key (dev), Raft log and process records.
	DataDir string
	// ClusterKeyFile is the pre-shared key; default: <data_dir>/cluster.key.
	ClusterKeyFile string
	// Listen are libp2p listen multiaddrs.
	Listen []string
	// Join are multiaddrs of agents to join through, with or without
	// /p2p/<peer id>.
	Join []string
	// Head makes this agent head-eligible (a Raft voter).
	Head bool
	// BootstrapExpect is how many head-eligible agents form the first Raft
	// group.
	BootstrapExpect int
	// Elect is the Raft heartbeat and election timeout.
	Elect time.Duration
	// Socket is the local API socket path.
	Socket string
	// Memory overrides the measured schedulable memory.
	Memory units.Size
	// MemoryReserved is kept back from scheduling for the system.
	MemoryReserved units.Size
	// GPUs is node.gpus, the node's GPUs declared (hosts without NVML,
	// tests): nil discovers them through NVML; a list, even an empty
	// one, is the whole inventory.
	GPUs []gpu.Declared
	// Heartbeat is the heartbeat period (1s).
	Heartbeat units.Duration
	// NodeTimeout declares a node down after this long without heartbeats
	// (at the Heartbeat interval; it grows with a stretched interval).
	NodeTimeout units.Duration
	// FailoverGrace is the time every node has to send a new head its
	// first heartbeat before the head declares it down (node_timeout if
	// unset).
	FailoverGrace units.Duration
	// DeadServerCleanup is how long a member of the head group may stay
	// unreachable before the head removes it once a replacement has
	// joined.
	DeadServerCleanup units.Duration
	// MaxHeartbeatsPerSecond is the heartbeat intake the head keeps by
	// stretching the interval it announces (DefaultMaxHeartbeatsPerSecond).
	MaxHeartbeatsPerSecond int
	// Retention says how long finished work, a job's results and the
	// accounting records are kept (head.retention; zero: the default).
	Retention RetentionConfig
	// ServiceMonitors is the folder of the administrators' registered
	// Java pingers (head.service_monitors; "": /etc/ducc/service_monitors
	// or $DUCC_SERVICE_MONITORS).
	ServiceMonitors string
	// DefaultBrokerURL is the cluster's UIMA-AS broker, which
	// ${DefaultBrokerURL} in service endpoints and dependencies stands for
	// (head.default_broker_url; read by head-eligible agents).
	DefaultBrokerURL string
	// Administrators may act on anyone's work.
	Administrators []string
	// Scheduler is the Resource Manager's configuration.
	Scheduler *rm.Config
	// Web configures the dashboard.
	Web WebConfig

	// Dev is set by `ducc agent --dev`; it is not read from files.
	Dev bool
	// BootstrapNew is set by `ducc agent --bootstrap-new`: a head-eligible
	// agent whose Raft state is corrupt or missing moves it aside and
	// starts as a new one (an empty cluster, or a new member of a running
	// head group). Not read from files: it must be an operator's decision
	// at one start, not a standing setting.
	BootstrapNew bool
	// StopLeftovers is set by `ducc agent --stop-leftovers`: the agent
	// stops the processes an earlier cluster incarnation left running on
	// the node (otherwise it only reports them). Not read from files.
	StopLeftovers bool
}

// WebConfig is the web section.
type WebConfig struct {
	// Listen is the dashboard's TCP address (default :42133; dev: a free
	// loopback port).
	Listen string `yaml:"listen"`
	// Private serves pages and API to loopback clients and the trusted
	// proxies only, and identifies users by dashboard token or the
	// proxy's header (docs/security.md).
	Private bool `yaml:"private"`
	// TokenValidity is how long a `ducc web-token` token is valid by
	// default and at most (12h; read by head-eligible agents).
	TokenValidity units.Duration `yaml:"token_validity"`
	// UserHeader names the header (e.g. X-Forwarded-User) in which a
	// trusted reverse proxy names the user it authenticated.
	UserHeader string `yaml:"user_header"`
	// TrustedProxies are the addresses (or CIDR prefixes) of the reverse
	// proxies allowed to reach a private dashboard and to name the user.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// LocalUsers identifies a browser on the node by the user who owns
	// its loopback connection (web.Config.LocalUsers). Nil: on in dev
	// mode, off otherwise.
	LocalUsers *bool `yaml:"local_users"`
}

// localUsers is web.local_users with its default: on in dev mode (one
// user's cluster on loopback), off otherwise (a proxy on the node would
// make its users look like the proxy's owner).
func (w WebConfig) localUsers(dev bool) bool {
	if w.LocalUsers != nil {
		return *w.LocalUsers
	}
	return dev
}

// trustedProxies parses web.trusted_proxies: addresses or prefixes.
func (w WebConfig) trustedProxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range w.TrustedProxies {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("web.trusted_proxies %q: not an address or a prefix (write e.g. 10.0.0.5 or 10.0.0.0/24)", s)
		}
		ip = ip.Unmap()
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out, nil
}

// RetentionConfig is the head.retention section (docs/operations.md,
// "Retention and accounting"): each time counts from the end of the work.
type RetentionConfig struct {
	// Work: finished work stays in the live state (`ducc jobs --all`,
	// `ducc show`) this long (1h).
	Work units.Duration `yaml:"work"`
	// Results: a job's items and results stay this long (24h).
	Results units.Duration `yaml:"results"`
	// History: the accounting record stays this long (30d).
	History units.Duration `yaml:"history"`
}

// Head returns the retention for the head server, defaults filled in.
func (r RetentionConfig) Head() server.Retention {
	return server.Retention{Work: r.Work.D(), Results: r.Results.D(), History: r.History.D()}.WithDefaults()
}

// fileConfig is the layout of the config file. Unknown keys are errors.
type fileConfig struct {
	Cluster struct {
		Name    string `yaml:"name"`
		KeyFile string `yaml:"key_file"`
	} `yaml:"cluster"`
	Node struct {
		Name           string         `yaml:"name"`
		Listen         []string       `yaml:"listen"`
		DataDir        string         `yaml:"data_dir"`
		Socket         string         `yaml:"socket"`
		Memory         units.Size     `yaml:"memory"`
		MemoryReserved units.Size     `yaml:"memory_reserved"`
		Heartbeat      units.Duration `yaml:"heartbeat"`
		GPUs           []gpu.Declared `yaml:"gpus"`
	} `yaml:"node"`
	Join []string `yaml:"join"`
	Head struct {
		Eligible          bool           `yaml:"eligible"`
		BootstrapExpect   int            `yaml:"bootstrap_expect"`
		ElectionTimeout   units.Duration `yaml:"election_timeout"`
		NodeTimeout       units.Duration `yaml:"node_timeout"`
		FailoverGrace     units.Duration `yaml:"failover_grace"`
		DeadServerCleanup units.Duration `yaml:"dead_server_cleanup"`

		MaxHeartbeatsPerSecond int             `yaml:"max_heartbeats_per_second"`
		Retention              RetentionConfig `yaml:"retention"`
		ServiceMonitors        string          `yaml:"service_monitors"`
		DefaultBrokerURL       string          `yaml:"default_broker_url"`
	} `yaml:"head"`
	Administrators []string   `yaml:"administrators"`
	Web            WebConfig  `yaml:"web"`
	Scheduler      *rm.Config `yaml:"scheduler"`
}

// DefaultMaxHeartbeatsPerSecond is head.max_heartbeats_per_second when
// the config does not set it: up to 2,000 nodes heartbeat every
// node.heartbeat, a larger cluster every nodes / 2,000 seconds.
const DefaultMaxHeartbeatsPerSecond = 2000

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

// ParseConfig decodes a config strictly, validates it and fills defaults.
func ParseConfig(data []byte) (*Config, error) {
	var f fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	c := &Config{
		Cluster: f.Cluster.Name, ClusterKeyFile: f.Cluster.KeyFile,
		Node: f.Node.Name, Listen: f.Node.Listen, DataDir: f.Node.DataDir, Socket: f.Node.Socket,
		Memory: f.Node.Memory, MemoryReserved: f.Node.MemoryReserved, Heartbeat: f.Node.Heartbeat, GPUs: f.Node.GPUs,
		Join: f.Join, Head: f.Head.Eligible, BootstrapExpect: f.Head.BootstrapExpect,
		Elect: f.Head.ElectionTimeout.D(), NodeTimeout: f.Head.NodeTimeout, MaxHeartbeatsPerSecond: f.Head.MaxHeartbeatsPerSecond,
		Administrators: f.Administrators, Web: f.Web, Scheduler: f.Scheduler,
		FailoverGrace: f.Head.FailoverGrace, DeadServerCleanup: f.Head.DeadServerCleanup,
		Retention: f.Head.Retention, ServiceMonitors: f.Head.ServiceMonitors, DefaultBrokerURL: strings.TrimSpace(f.Head.DefaultBrokerURL),
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
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// validate checks what the YAML types cannot.
func (c *Config) validate() error {
	if _, err := gpu.Devices(c.GPUs); err != nil {
		return fmt.Errorf("node.gpus is wrong (fix each entry named, or remove node.gpus to discover the GPUs through NVML):\n%w", err)
	}
	if c.BootstrapExpect < 0 {
		return fmt.Errorf("head.bootstrap_expect: %d: must be 1 or more", c.BootstrapExpect)
	}
	if !c.Head && c.BootstrapExpect > 0 {
		return fmt.Errorf("head.bootstrap_expect is set but head.eligible is false; only head-eligible agents bootstrap the head")
	}
	for _, a := range c.Listen {
		if _, err := multiaddr.NewMultiaddr(a); err != nil {
			return fmt.Errorf("node.listen %q: %v (write e.g. /ip4/0.0.0.0/tcp/42134)", a, err)
		}
	}
	for _, a := range c.Join {
		if _, err := multiaddr.NewMultiaddr(a); err != nil {
			return fmt.Errorf("join %q: %v (write e.g. /ip4/10.0.0.1/tcp/42134 or /dns4/head1/tcp/42134, optionally followed by /p2p/<peer id> from 'ducc id')", a, err)
		}
	}
	if c.Heartbeat.D() < 50*time.Millisecond {
		return fmt.Errorf("node.heartbeat %v: must be at least 50ms", c.Heartbeat.D())
	}
	if c.MaxHeartbeatsPerSecond < 0 {
		return fmt.Errorf("head.max_heartbeats_per_second %d: must be positive", c.MaxHeartbeatsPerSecond)
	}
	if c.NodeTimeout.D() < 2*c.Heartbeat.D() {
		return fmt.Errorf("head.node_timeout %v: must be at least two heartbeats (%v)", c.NodeTimeout.D(), 2*c.Heartbeat.D())
	}
	if c.FailoverGrace < c.NodeTimeout {
		return fmt.Errorf("head.failover_grace %v: must be at least head.node_timeout (%v)", c.FailoverGrace.D(), c.NodeTimeout.D())
	}
	if c.DeadServerCleanup < c.NodeTimeout {
		return fmt.Errorf("head.dead_server_cleanup %v: must be at least head.node_timeout (%v)", c.DeadServerCleanup.D(), c.NodeTimeout.D())
	}
	if r := c.Retention; r.Work < 0 || r.Results < 0 || r.History < 0 {
		return fmt.Errorf("head.retention: times must not be negative")
	}
	if err := c.Retention.Head().Validate(); err != nil {
		return err
	}
	if u := c.DefaultBrokerURL; u != "" && (strings.ContainsAny(u, " \t\r\n") || !strings.Contains(u, "://") || strings.Contains(u, "${")) {
		return fmt.Errorf("head.default_broker_url %q: write the UIMA-AS broker's url as its clients connect, e.g. tcp://broker.example.com:61616", u)
	}
	if c.Elect < 50*time.Millisecond {
		return fmt.Errorf("head.election_timeout %v: must be at least 50ms", c.Elect)
	}
	if _, err := c.Web.trustedProxies(); err != nil {
		return err
	}
	if !c.Web.Private && (c.Web.UserHeader != "" || len(c.Web.TrustedProxies) > 0) {
		return fmt.Errorf("web.user_header and web.trusted_proxies need web.private: true (a public dashboard identifies nobody)")
	}
	if c.Web.UserHeader != "" && len(c.Web.TrustedProxies) == 0 {
		return fmt.Errorf("web.user_header %q needs web.trusted_proxies: the addresses of the proxies allowed to set it", c.Web.UserHeader)
	}
	if c.Web.TokenValidity < 0 {
		return fmt.Errorf("web.token_validity %v: must be positive", c.Web.TokenValidity.D())
	}
	if strings.ContainsAny(c.Node, " /\t\n") {
		return fmt.Errorf("node.name %q: must not contain spaces or slashes", c.Node)
	}
	return nil
}

// CheckRunnable checks what an agent started from this file needs that a
// file read only for its scheduler section (--dev --config, admin
// reconfigure) does not.
func (c *Config) CheckRunnable() error {
	if !c.Head && len(c.Join) == 0 {
		return fmt.Errorf("join: an agent that is not head-eligible needs the address of at least one other agent to join through (or set head.eligible: true for a one-node cluster)")
	}
	return nil
}

// DevSections are the parts of a config file that `ducc agent --dev
// --config FILE` uses; the rest describe a multi-node cluster (its name
// and key, this node's addresses and data, joining, the head group's
// timing), which a dev cluster makes for itself: one node on loopback,
// set with the agent's flags. node.gpus is used: it declares the GPUs of
// the dev cluster's one node (a section path, SECTION.KEY, as devIgnored
// reads them).
var DevSections = []string{"scheduler", "administrators", "web", "head.retention", "head.default_broker_url", "head.service_monitors", "node.gpus"}

// LoadDevConfig reads path for `ducc agent --dev --config FILE`: the dev
// configuration of dataDir with the file's DevSections. Ignored lists
// the keys of the file it does not use (node.memory, join, ...), for
// the caller to report: nothing in the file is dropped silently.
func LoadDevConfig(path, dataDir string) (cfg *Config, ignored []string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, nil, fmt.Errorf("config %s: %w", path, err)
	}
	ignored, err = devIgnored(data)
	if err != nil {
		return nil, nil, fmt.Errorf("config %s: %w", path, err)
	}
	cfg = DevConfig(dataDir)
	cfg.Scheduler, cfg.Administrators, cfg.Web, cfg.Retention = c.Scheduler, c.Administrators, c.Web, c.Retention
	cfg.DefaultBrokerURL, cfg.ServiceMonitors = c.DefaultBrokerURL, c.ServiceMonitors
	cfg.GPUs = c.GPUs
	return cfg, ignored, nil
}

// devIgnored lists the keys of a config file outside DevSections: a
// whole top-level key, or SECTION.KEY within a section (head.eligible).
func devIgnored(data []byte) ([]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil
	}
	used := func(key string) bool { return slices.Contains(DevSections, key) }
	var out []string
	top := doc.Content[0].Content
	for i := 0; i+1 < len(top); i += 2 {
		key, val := top[i].Value, top[i+1]
		switch {
		case used(key):
		case val.Kind == yaml.MappingNode:
			for j := 0; j+1 < len(val.Content); j += 2 {
				if k := key + "." + val.Content[j].Value; !used(k) {
					out = append(out, k)
				}
			}
		default:
			out = append(out, key)
		}
	}
	return out, nil
}

// DevConfig is the configuration of `ducc agent --dev`: one node that is
// head and worker, on loopback.
func DevConfig(dataDir string) *Config {
	c := &Config{Dev: true, DataDir: dataDir, Head: true, BootstrapExpect: 1, Cluster: "dev"}
	c.fill()
	return c
}

func (c *Config) fill() {
	if c.Cluster == "" {
		c.Cluster = "ducc"
	}
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
			c.Socket = filepath.Join(c.DataDir, wire.SocketName)
		} else {
			c.Socket = wire.SystemSocket
		}
	}
	if c.BootstrapExpect == 0 && c.Head {
		c.BootstrapExpect = 1
	}
	if c.Elect == 0 {
		c.Elect = 500 * time.Millisecond
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = units.Duration(time.Second)
	}
	if c.NodeTimeout == 0 {
		c.NodeTimeout = units.Duration(10 * time.Second)
	}
	if c.FailoverGrace == 0 {
		c.FailoverGrace = c.NodeTimeout
	}
	if c.DeadServerCleanup == 0 {
		c.DeadServerCleanup = max(units.Duration(5*time.Minute), c.NodeTimeout)
	}
	if c.MaxHeartbeatsPerSecond == 0 {
		c.MaxHeartbeatsPerSecond = DefaultMaxHeartbeatsPerSecond
	}
	if c.Scheduler == nil {
		c.Scheduler = rm.DefaultConfig()
	}
}
