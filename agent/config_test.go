package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLoadDevConfig: `ducc agent --dev --config FILE` uses the file's
// scheduler, administrators, web and head.retention sections, and names
// every other key it ignores instead of dropping it silently.
func TestLoadDevConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		ignored []string
		check   func(t *testing.T, c *Config)
		err     string
	}{
		{name: "web section", yaml: "web:\n  listen: 127.0.0.1:18080\n  private: true\n  token_validity: 1h\n  local_users: false\n",
			check: func(t *testing.T, c *Config) {
				if c.Web.Listen != "127.0.0.1:18080" || !c.Web.Private || c.Web.TokenValidity.D() != time.Hour || c.Web.localUsers(true) {
					t.Errorf("web section not used: %+v", c.Web)
				}
			}},
		{name: "local users on by default in dev", yaml: "web:\n  private: true\n",
			check: func(t *testing.T, c *Config) {
				if !c.Web.localUsers(c.Dev) {
					t.Errorf("web.local_users is off in dev mode")
				}
			}},
		{name: "administrators and retention", yaml: "administrators: [ann]\nhead:\n  retention:\n    work: 10m\n",
			check: func(t *testing.T, c *Config) {
				if !slices.Equal(c.Administrators, []string{"ann"}) || c.Retention.Work.D() != 10*time.Minute {
					t.Errorf("administrators %v, retention %+v", c.Administrators, c.Retention)
				}
			}},
		{name: "multi-node keys are named", yaml: "cluster:\n  name: prod\nnode:\n  memory: 64G\n  name: big\njoin: [/ip4/10.0.0.1/tcp/42134]\n" +
			"head:\n  eligible: true\n  node_timeout: 30s\n  retention:\n    work: 1h\nweb:\n  private: true\n",
			ignored: []string{"cluster.name", "node.memory", "node.name", "join", "head.eligible", "head.node_timeout"},
			check: func(t *testing.T, c *Config) {
				if c.Cluster != "dev" || c.Node == "big" || c.Memory != 0 || len(c.Join) > 0 || !c.Web.Private {
					t.Errorf("dev config took multi-node keys: %+v", c)
				}
			}},
		{name: "empty file", yaml: "", check: func(t *testing.T, c *Config) {
			if !c.Dev || c.DataDir != "/tmp/devdata" {
				t.Errorf("dev config %+v", c)
			}
		}},
		{name: "bad key still refused", yaml: "web:\n  privat: true\n", err: "privat"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ducc.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			c, ignored, err := LoadDevConfig(path, "/tmp/devdata")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("LoadDevConfig: %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.Dev || c.DataDir != "/tmp/devdata" {
				t.Errorf("not a dev config: %+v", c)
			}
			if !slices.Equal(ignored, tc.ignored) {
				t.Errorf("ignored %q, want %q", ignored, tc.ignored)
			}
			tc.check(t, c)
		})
	}
}
