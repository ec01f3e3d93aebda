package agent

import (
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr string
		check   func(t *testing.T, c *Config)
	}{
		{name: "empty gets defaults", yaml: "head: {eligible: true}\n", check: func(t *testing.T, c *Config) {
			if c.DataDir != "/var/lib/ducc" || c.Socket != "/run/ducc/ducc.sock" || c.Heartbeat.D() != time.Second ||
				c.Scheduler == nil || c.BootstrapExpect != 1 || c.Elect != 500*time.Millisecond || c.Cluster != "ducc" {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{name: "values", yaml: `
cluster: {name: prod, key_file: /etc/ducc/k}
node: {name: n7, memory: 16G, memory_reserved: 2G, heartbeat: 2s, listen: [/ip4/10.1.0.7/tcp/42134]}
join: [/ip4/10.1.0.1/tcp/42134, /ip4/10.1.0.2/tcp/42134/p2p/12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo]
head: {eligible: true, bootstrap_expect: 3, node_timeout: 20s}
`, check: func(t *testing.T, c *Config) {
			if c.Node != "n7" || !c.Head || c.BootstrapExpect != 3 || c.Memory.Bytes() != 16<<30 || c.MemoryReserved.Bytes() != 2<<30 ||
				c.Heartbeat.D() != 2*time.Second || c.Cluster != "prod" || c.ClusterKeyFile != "/etc/ducc/k" || len(c.Join) != 2 ||
				c.NodeTimeout.D() != 20*time.Second || c.Listen[0] != "/ip4/10.1.0.7/tcp/42134" ||
				c.FailoverGrace.D() != 20*time.Second || c.DeadServerCleanup.D() != 5*time.Minute {
				t.Errorf("parsed %+v", c)
			}
		}},
		{name: "failover grace and dead server cleanup", yaml: "head: {eligible: true, failover_grace: 1m, dead_server_cleanup: 10m}\n", check: func(t *testing.T, c *Config) {
			if c.FailoverGrace.D() != time.Minute || c.DeadServerCleanup.D() != 10*time.Minute {
				t.Errorf("parsed %+v", c)
			}
		}},
		{name: "retention defaults", yaml: "head: {eligible: true}\n", check: func(t *testing.T, c *Config) {
			if r := c.Retention.Head(); r.Work != time.Hour || r.Results != 24*time.Hour || r.History != 30*24*time.Hour {
				t.Errorf("retention %+v", r)
			}
		}},
		{name: "retention", yaml: "head: {eligible: true, retention: {work: 2d, results: 7d, history: 90d}}\n", check: func(t *testing.T, c *Config) {
			if r := c.Retention.Head(); r.Work != 48*time.Hour || r.Results != 7*24*time.Hour || r.History != 90*24*time.Hour {
				t.Errorf("retention %+v", r)
			}
		}},
		{name: "retention work only raises the others", yaml: "head: {eligible: true, retention: {work: 48h}}\n", check: func(t *testing.T, c *Config) {
			if r := c.Retention.Head(); r.Work != 48*time.Hour || r.Results != 48*time.Hour || r.History != 30*24*time.Hour {
				t.Errorf("retention %+v", r)
			}
		}},
		{name: "retention results shorter than work", yaml: "head: {eligible: true, retention: {work: 2h, results: 1h}}\n", wantErr: "head.retention.results 1h0m0s: must be at least head.retention.work"},
		{name: "retention negative", yaml: "head: {eligible: true, retention: {history: -1h}}\n", wantErr: "must not be negative"},
		{name: "registered pingers", yaml: "head: {eligible: true, service_monitors: /srv/ducc/service_monitors}\n", check: func(t *testing.T, c *Config) {
			if c.ServiceMonitors != "/srv/ducc/service_monitors" {
				t.Errorf("service_monitors %q", c.ServiceMonitors)
			}
		}},
		{name: "UIMA-AS broker", yaml: "head: {eligible: true, default_broker_url: ' tcp://b.example:61616 '}\n", check: func(t *testing.T, c *Config) {
			if c.DefaultBrokerURL != "tcp://b.example:61616" {
				t.Errorf("default_broker_url %q", c.DefaultBrokerURL)
			}
		}},
		{name: "UIMA-AS broker without a scheme", yaml: "head: {eligible: true, default_broker_url: b.example:61616}\n", wantErr: "head.default_broker_url \"b.example:61616\": write the UIMA-AS broker's url"},
		{name: "UIMA-AS broker placeholder", yaml: "head: {eligible: true, default_broker_url: '${DefaultBrokerURL}'}\n", wantErr: "head.default_broker_url"},
		{name: "failover grace too short", yaml: "head: {eligible: true, node_timeout: 20s, failover_grace: 5s}\n", wantErr: "head.failover_grace 5s: must be at least head.node_timeout"},
		{name: "dead server cleanup too short", yaml: "head: {eligible: true, dead_server_cleanup: 5s}\n", wantErr: "head.dead_server_cleanup 5s: must be at least head.node_timeout"},
		{name: "worker", yaml: "join: [/ip4/10.1.0.1/tcp/42134]\n", check: func(t *testing.T, c *Config) {
			if c.Head || c.BootstrapExpect != 0 {
				t.Errorf("parsed %+v", c)
			}
		}},
		{name: "unknown key", yaml: "head: {eligible: true}\nnodee: n1\n", wantErr: "field nodee not found"},
		{name: "old flat layout", yaml: "head: true\n", wantErr: "cannot unmarshal"},
		{name: "bad size", yaml: "head: {eligible: true}\nnode: {memory: 12X}\n", wantErr: "12X"},
		{name: "bad join", yaml: "head: {eligible: true}\njoin: [10.0.0.1:42134]\n", wantErr: "join \"10.0.0.1:42134\""},
		{name: "scheduler only", yaml: "scheduler: {share_quantum: 2G}\n", check: func(t *testing.T, c *Config) {
			if err := c.CheckRunnable(); err == nil || !strings.Contains(err.Error(), "needs the address of at least one other agent") {
				t.Errorf("a worker without join runs: %v", err)
			}
		}},
		{name: "bootstrap without eligible", yaml: "head: {bootstrap_expect: 3}\njoin: [/ip4/10.0.0.1/tcp/1]\n", wantErr: "head.eligible is false"},
		{name: "node timeout too short", yaml: "head: {eligible: true, node_timeout: 1s}\n", wantErr: "at least two heartbeats"},
		{name: "web identification", yaml: "head: {eligible: true}\nweb: {private: true, token_validity: 1h, user_header: X-Forwarded-User, trusted_proxies: [10.0.0.9, 10.1.0.0/24, \"::ffff:10.2.0.1\"]}\n",
			check: func(t *testing.T, c *Config) {
				ps, err := c.Web.trustedProxies()
				if err != nil || len(ps) != 3 || ps[0].String() != "10.0.0.9/32" || ps[1].String() != "10.1.0.0/24" || ps[2].String() != "10.2.0.1/32" ||
					c.Web.TokenValidity.D() != time.Hour || c.Web.UserHeader != "X-Forwarded-User" {
					t.Errorf("web %+v, proxies %v %v", c.Web, ps, err)
				}
			}},
		{name: "user header without proxies", yaml: "head: {eligible: true}\nweb: {private: true, user_header: X-Forwarded-User}\n", wantErr: "needs web.trusted_proxies"},
		{name: "user header on a public dashboard", yaml: "head: {eligible: true}\nweb: {user_header: X-User, trusted_proxies: [10.0.0.9]}\n", wantErr: "need web.private: true"},
		{name: "bad trusted proxy", yaml: "head: {eligible: true}\nweb: {private: true, trusted_proxies: [proxy.example]}\n", wantErr: "web.trusted_proxies \"proxy.example\""},
		{name: "scheduler section validated", yaml: "head: {eligible: true}\nscheduler:\n  classes:\n    - {name: a, policy: FAIR_SHARE, weight: 1, priority: 1}\n    - {name: a, policy: FAIR_SHARE, weight: 1, priority: 1}\n", wantErr: "scheduler"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.yaml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestLockDataDir(t *testing.T) {
	dir := t.TempDir()
	f, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockDataDir(dir); err == nil || !strings.Contains(err.Error(), "already running on data dir") {
		t.Errorf("second lock: %v", err)
	}
	f.Close()
	g, err := lockDataDir(dir)
	if err != nil {
		t.Errorf("lock after release: %v", err)
	}
	g.Close()
}

func TestWorkIDOf(t *testing.T) {
	for in, want := range map[string]uint64{"17.1": 17, "3.12": 3, "": 0, "x.1": 0} {
		if got := workIDOf(in); got != want {
			t.Errorf("workIDOf(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestDevConfig(t *testing.T) {
	c := DevConfig("/tmp/x")
	if !c.Dev || !c.Head || c.Socket != "/tmp/x/ducc.sock" || c.Listen[0] != "/ip4/127.0.0.1/tcp/0" {
		t.Errorf("dev config %+v", c)
	}
}
